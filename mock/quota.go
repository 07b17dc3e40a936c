package mock

import (
	"fmt"
)

// LimitQuota is the limit of a 429 refused by Config.Quota, as the call
// accounting's throttled_by names it. A spend cap is not a rate limit:
// Stats counts it in QuotaExceeded, never in Throttled.
const LimitQuota = "quota"

// Quota dimensions, as Stats.QuotaExceededBy and the metric's label name
// them.
const (
	QuotaRequests     = "requests"
	QuotaInputTokens  = "input_tokens"
	QuotaOutputTokens = "output_tokens"
)

// Quota caps what each API key may use in total, since the server started
// or was last Reset: a spend cap, which unlike a rate limit does not come
// back with time. Once a key has used a dimension up, each of its requests
// gets the answer the providers give an account out of money, with no
// retry-after: Anthropic 429 rate_limit_error with details.error_code
// enforced_spend_limit_reached (its monthly tier spend cap), OpenAI 429
// insufficient_quota. Zero fields are unlimited.
//
// A request is refused when a dimension is already used up; the request
// that crosses a quota is admitted, as a spend cap is checked against what
// was spent before. Requests and input tokens are counted at admission,
// output tokens as produced, when a response ends.
type Quota struct {
	Requests     int64 `yaml:"requests,omitempty"`
	InputTokens  int64 `yaml:"input_tokens,omitempty"`
	OutputTokens int64 `yaml:"output_tokens,omitempty"`
	// ShouldRetry, when set, sends x-should-retry with every quota error,
	// which the official SDKs obey before the status: false makes them
	// give up at once. Unset (the default) sends none, as neither provider
	// is known to, so the SDKs retry a quota 429 like any 429: with their
	// default of 2 retries, 3 attempts in all.
	ShouldRetry *bool `yaml:"should_retry,omitempty"`
}

// quotaUsage is what one key has used toward its Quota.
type quotaUsage struct {
	requests, input, output int64
}

// exhausted names the first dimension of q that u has used up, or "".
func (q Quota) exhausted(u quotaUsage) string {
	switch {
	case q.Requests > 0 && u.requests >= q.Requests:
		return QuotaRequests
	case q.InputTokens > 0 && u.input >= q.InputTokens:
		return QuotaInputTokens
	case q.OutputTokens > 0 && u.output >= q.OutputTokens:
		return QuotaOutputTokens
	}
	return ""
}

// quotaMessage is the error message of a request refused by dimension dim
// of q, in the words of the API of wr.
func quotaMessage(wr wire, q Quota, dim string) string {
	var limit int64
	switch dim {
	case QuotaRequests:
		limit = q.Requests
	case QuotaInputTokens:
		limit = q.InputTokens
	case QuotaOutputTokens:
		limit = q.OutputTokens
	}
	if _, ok := wr.(anthropic); ok {
		return fmt.Sprintf("You have reached your API usage limits: this API key's quota of %d %s is spent (mock quota.%s). You will regain access when the quota is raised (PUT /_admin/quota) or the server is reset.", limit, dim, dim)
	}
	return fmt.Sprintf("You exceeded your current quota, please check your plan and billing details: this API key's quota of %d %s is spent (mock quota.%s).", limit, dim, dim)
}

func validateQuota(q Quota, path string, check func(bool, string, string, ...any)) {
	for _, f := range []struct {
		key string
		v   int64
	}{{QuotaRequests, q.Requests}, {QuotaInputTokens, q.InputTokens}, {QuotaOutputTokens, q.OutputTokens}} {
		check(f.v >= 0, path+"."+f.key, "must not be negative, got %d", f.v)
	}
}

// Quota returns the per-key quota in force.
func (s *Server) Quota() Quota {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quota
}

// SetQuota replaces the per-key quota at runtime. What each key has used
// so far is kept: raising a spent quota lets its key through again.
func (s *Server) SetQuota(q Quota) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quota = q
}

// QuotaUsed is what one API key has used toward Config.Quota.
type QuotaUsed struct {
	Requests     int64 `json:"requests"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

func (u quotaUsage) public() QuotaUsed {
	return QuotaUsed{Requests: u.requests, InputTokens: u.input, OutputTokens: u.output}
}
