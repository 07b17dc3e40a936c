package mock

import (
	"fmt"
	"path"
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
	QuotaUSD          = "usd"
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
//
// USD is a dollar spend cap: each request costs its tokens at the prices
// of its model (Config.Prices), input (uncached input, cache writes and
// cache reads each at its own price) at admission, output as produced.
type Quota struct {
	Requests     int64   `yaml:"requests,omitempty"`
	InputTokens  int64   `yaml:"input_tokens,omitempty"`
	OutputTokens int64   `yaml:"output_tokens,omitempty"`
	USD          float64 `yaml:"usd,omitempty"`
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
	usd                     float64
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
	case q.USD > 0 && u.usd >= q.USD:
		return QuotaUSD
	}
	return ""
}

// quotaMessage is the error message of a request refused by dimension dim
// of q, in the words of the API of wr.
func quotaMessage(wr wire, q Quota, dim string) string {
	var limit string
	switch dim {
	case QuotaRequests:
		limit = fmt.Sprintf("%d %s", q.Requests, dim)
	case QuotaInputTokens:
		limit = fmt.Sprintf("%d %s", q.InputTokens, dim)
	case QuotaOutputTokens:
		limit = fmt.Sprintf("%d %s", q.OutputTokens, dim)
	case QuotaUSD:
		limit = fmt.Sprintf("$%.2f", q.USD)
	}
	if _, ok := wr.(anthropic); ok {
		return fmt.Sprintf("You have reached your API usage limits: this API key's quota of %s is spent (mock quota.%s). You will regain access when the quota is raised (PUT /_admin/quota) or the server is reset.", limit, dim)
	}
	return fmt.Sprintf("You exceeded your current quota, please check your plan and billing details: this API key's quota of %s is spent (mock quota.%s).", limit, dim)
}

func validateQuota(q Quota, path string, check func(bool, string, string, ...any)) {
	for _, f := range []struct {
		key string
		v   int64
	}{{QuotaRequests, q.Requests}, {QuotaInputTokens, q.InputTokens}, {QuotaOutputTokens, q.OutputTokens}} {
		check(f.v >= 0, path+"."+f.key, "must not be negative, got %d", f.v)
	}
	check(q.USD >= 0 && q.USD <= maxUSD, path+".usd", "must be in [0, %g], got %g", maxUSD, q.USD)
}

// maxUSD bounds Quota.USD and each Price, so that sums of costs stay exact
// enough and NaN or infinity is refused.
const maxUSD = 1e12

// Price is what a model's tokens cost, in USD per million tokens, as the
// providers publish them (Anthropic's pricing page:
// https://platform.claude.com/docs/en/about-claude/pricing). CacheWrite is
// a cache_control write with the 5-minute TTL, CacheWrite1h one with "ttl":
// "1h" (CacheWrite when 0); CacheRead is a cache hit (OpenAI's cached input
// too). Zero fields cost nothing.
type Price struct {
	Input        float64 `yaml:"input,omitempty"`
	Output       float64 `yaml:"output,omitempty"`
	CacheWrite   float64 `yaml:"cache_write,omitempty"`
	CacheWrite1h float64 `yaml:"cache_write_1h,omitempty"`
	CacheRead    float64 `yaml:"cache_read,omitempty"`
	// BatchInput and BatchOutput are the batch APIs' prices; 0 is half
	// of Input and Output, as both providers price batches.
	BatchInput  float64 `yaml:"batch_input,omitempty"`
	BatchOutput float64 `yaml:"batch_output,omitempty"`
}

// inputUSD is what a request's input costs at p: its uncached input, the
// write tokens (long of them for an hour, as cacheWriteLong splits a write
// the way the usage reports it) at the write price of their TTL, and the
// read tokens.
func (p Price) inputUSD(input, read, write, long int) float64 {
	hour := p.CacheWrite1h
	if hour == 0 {
		hour = p.CacheWrite
	}
	return (float64(max(input-read-write, 0))*p.Input + float64(write-long)*p.CacheWrite + float64(long)*hour +
		float64(read)*p.CacheRead) / 1e6
}

// outputUSD is what n output tokens cost at p.
func (p Price) outputUSD(n int) float64 { return float64(n) * p.Output / 1e6 }

// priceOf returns the price of model: its longest matching pattern's.
func priceOf(prices map[string]Price, model string) Price {
	if name := poolFor(prices, model); name != "" {
		return prices[name]
	}
	return Price{}
}

func validatePrices(prices map[string]Price, q Quota, check func(bool, string, string, ...any)) {
	for _, pat := range poolPatterns(prices) {
		_, err := path.Match(pat, "")
		p := "prices." + pat
		check(err == nil && pat != "", p, "want a model pattern such as claude-sonnet-4-*, got %q", pat)
		pr := prices[pat]
		for _, f := range []struct {
			key string
			v   float64
		}{{"input", pr.Input}, {"output", pr.Output}, {"cache_write", pr.CacheWrite}, {"cache_write_1h", pr.CacheWrite1h}, {"cache_read", pr.CacheRead}, {"batch_input", pr.BatchInput}, {"batch_output", pr.BatchOutput}} {
			check(f.v >= 0 && f.v <= maxUSD, p+"."+f.key, "must be in [0, %g] USD per million tokens, got %g", maxUSD, f.v)
		}
	}
	check(q.USD == 0 || len(prices) > 0, "quota.usd", "needs prices: with none every request costs $0 and the cap is never reached")
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
	Requests     int64   `json:"requests"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"` // at Config.Prices
}

func (u quotaUsage) public() QuotaUsed {
	return QuotaUsed{Requests: u.requests, InputTokens: u.input, OutputTokens: u.output, USD: u.usd}
}
