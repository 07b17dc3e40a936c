package mock

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// errorMessage is the error.message of an Anthropic or OpenAI error body.
func errorMessage(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Error.Message
}

// TestOrganizationPool replays requests of three API keys at named
// instants under rpm 2 a key and an organization of rpm 5 above them: the
// organization's bucket is charged only when the key admits too, a 429 of
// the organization's names it and waits for its bucket (5 a minute: one
// each 12 s), and the headers report the organization's dimension.
func TestOrganizationPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.APIKeys = []string{"ka", "kb", "kc"}
		cfg.Limits = Limits{RPM: 2}
		cfg.Organization = Organization{Limits: Limits{RPM: 5}}
		ts := startServer(t, cfg)
		defer ts.stop()
		start := time.Now()
		steps := []struct {
			at         time.Duration
			key        string
			wantStatus int
			wantRetry  string // retry-after of a 429
			wantMsg    string // the 429's message
			wantLimit  string // anthropic-ratelimit-requests-limit
			wantLeft   string // anthropic-ratelimit-requests-remaining
		}{
			{0, "ka", 200, "", "", "5", "4"},
			{0, "ka", 200, "", "", "5", "3"},
			// The key's own rpm refuses; the organization keeps its 3.
			{0, "ka", 429, "30", "rate limit exceeded: rpm: this API key may send 2 requests per minute", "5", "0"},
			{0, "kb", 200, "", "", "5", "2"},
			{0, "kb", 200, "", "", "5", "1"},
			{0, "kc", 200, "", "", "5", "0"},
			// kc has one of its own left; the organization has none.
			{0, "kc", 429, "12", "rate limit exceeded: rpm: this organization may send 5 requests per minute", "5", "0"},
			// 13 s on, the organization has refilled 13 × 5/60 = 1.08.
			{13 * time.Second, "kc", 200, "", "", "5", "0"},
		}
		for i, s := range steps {
			time.Sleep(time.Until(start.Add(s.at)))
			r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"), "x-api-key", s.key)
			h := r.header
			if r.status != s.wantStatus || h.Get("Retry-After") != s.wantRetry ||
				h.Get("Anthropic-Ratelimit-Requests-Limit") != s.wantLimit || h.Get("Anthropic-Ratelimit-Requests-Remaining") != s.wantLeft {
				t.Errorf("step %d (%s at %v): %d retry-after %q requests %q/%q; want %d %q %q/%q", i, s.key, s.at, r.status,
					h.Get("Retry-After"), h.Get("Anthropic-Ratelimit-Requests-Remaining"), h.Get("Anthropic-Ratelimit-Requests-Limit"),
					s.wantStatus, s.wantRetry, s.wantLeft, s.wantLimit)
			}
			if s.wantMsg != "" {
				if got := errorMessage(t, r.body); got != s.wantMsg {
					t.Errorf("step %d: message %q, want %q", i, got, s.wantMsg)
				}
			}
		}
		if st := ts.Stats(); st.Admitted != 6 || st.Throttled != 2 || st.ThrottledBy[LimitRPM] != 2 {
			t.Errorf("stats: admitted %d throttled %d by %v; want 6, 2, rpm 2", st.Admitted, st.Throttled, st.ThrottledBy)
		}
		// OpenAI's envelope and headers for the same refusal.
		r := ts.do(t, "POST", "/v1/chat/completions", openaiBody(1, false, false, "hi"), "Authorization", "Bearer kc")
		if r.status != 429 || r.header.Get("X-Ratelimit-Limit-Requests") != "5" || r.header.Get("X-Ratelimit-Remaining-Requests") != "0" ||
			!strings.Contains(string(r.body), `"code":"rate_limit_exceeded"`) || errorMessage(t, r.body) != "rate limit exceeded: rpm: this organization may send 5 requests per minute" {
			t.Errorf("openai: %d %v %s; want 429, requests 0/5, rate_limit_exceeded from the organization", r.status, r.header, r.body)
		}
	})
}

// TestLongContextLimits: a request above long_context.threshold_tokens
// passes the long-context limits (tpm 4000 here) in place of its key's
// standard ones (tpm 2000), so a key's long and standard traffic each have
// their own budget; the long-context 429 names its limits and waits for
// its own bucket. (OpenAI's headers report tokens exactly; Anthropic's
// round them to thousands.)
func TestLongContextLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency = Latency{} // every answer at once: the buckets do not refill between steps
		cfg.Limits = Limits{TPM: 2000}
		cfg.LongContext = LongContext{ThresholdTokens: 1000, Limits: Limits{TPM: 4000}}
		ts := startServer(t, cfg)
		defer ts.stop()
		long := openaiBody(1, false, false, strings.Repeat("abcd", 1500))    // 1,500 input tokens
		standard := openaiBody(1, false, false, strings.Repeat("abcd", 999)) // 999
		run := []struct {
			body                         string
			wantStatus                   int
			wantIn, wantLimit, wantRetry string // input-tokens remaining and limit, retry-after
		}{
			{long, 200, "2500", "4000", ""},
			{standard, 200, "1001", "2000", ""}, // the key's own 2,000, untouched by the long request
			{long, 200, "1000", "4000", ""},
			// 1,000 left, 1,500 needed: 500 at 4,000 a minute is 7.5 s.
			{long, 429, "0", "4000", "8"},
			// The standard budget still admits: 1,001 left.
			{standard, 200, "2", "2000", ""},
		}
		for i, s := range run {
			r := ts.do(t, "POST", "/v1/chat/completions", s.body)
			h := r.header
			if r.status != s.wantStatus || h.Get("X-Ratelimit-Remaining-Tokens") != s.wantIn ||
				h.Get("X-Ratelimit-Limit-Tokens") != s.wantLimit || h.Get("Retry-After") != s.wantRetry {
				t.Errorf("step %d: %d tokens %q/%q retry-after %q; want %d %q/%q %q", i, r.status,
					h.Get("X-Ratelimit-Remaining-Tokens"), h.Get("X-Ratelimit-Limit-Tokens"), h.Get("Retry-After"),
					s.wantStatus, s.wantIn, s.wantLimit, s.wantRetry)
			}
			if s.wantStatus == 429 {
				want := "rate limit exceeded: tpm: this API key's long-context requests (above 1000 input tokens) may use 4000 tokens per minute on gpt-4o-mini; this request is charged 1500"
				if got := errorMessage(t, r.body); got != want {
					t.Errorf("step %d: message %q, want %q", i, got, want)
				}
			}
		}
		// After the retry-after of 8 s the long-context bucket holds 1,000
		// + 8 × 4000/60 = 1,533: the request is admitted, 33 left.
		time.Sleep(8 * time.Second)
		if r := ts.do(t, "POST", "/v1/chat/completions", long); r.status != 200 || r.header.Get("X-Ratelimit-Remaining-Tokens") != "33" {
			t.Errorf("after 8 s: %d, tokens remaining %q; want 200 and 33", r.status, r.header.Get("X-Ratelimit-Remaining-Tokens"))
		}
	})
}

// TestLongContextConfig: each half of long_context needs the other, and
// the threshold is bounded by the largest input.
func TestLongContextConfig(t *testing.T) {
	for _, tt := range []struct {
		yaml, want string
	}{
		{"long_context: {limits: {itpm: 10}}\n", "long_context.threshold_tokens: required with long_context.limits"},
		{"long_context: {threshold_tokens: 200000}\n", "long_context.limits: required with long_context.threshold_tokens"},
		{"long_context: {threshold_tokens: -1, limits: {rpm: 1}}\n", "long_context.threshold_tokens: must be 0 (off) or in [1, 16777216] input tokens, got -1"},
		{"long_context: {threshold_tokens: 10, limits: {rpm: -1}}\n", "long_context.limits.rpm: must not be negative, got -1"},
		{"organization: {limits: {tpm: -5}}\n", "organization.limits.tpm: must not be negative, got -5"},
		{"organization: {limit: {tpm: 5}}\n", "organization.limit"},
	} {
		_, err := ParseConfig([]byte(tt.yaml), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one containing %q", tt.yaml, err, tt.want)
		}
	}
	cfg, err := ParseConfig([]byte("organization: {limits: {rpm: 50}}\nlong_context: {threshold_tokens: 200000, limits: {itpm: 1000000}}\n"), "c.yaml")
	if err != nil || cfg.Organization.Limits.RPM != 50 || cfg.LongContext.ThresholdTokens != 200000 || cfg.LongContext.Limits.ITPM != 1000000 {
		t.Errorf("ParseConfig = %+v %+v, %v", cfg.Organization, cfg.LongContext, err)
	}
}

// TestLimitNamesAgree: admission names the limits it refuses by, and the
// formats word a 429 by the same names (wire's), which the stats and
// metrics count.
func TestLimitNamesAgree(t *testing.T) {
	for _, p := range [][2]string{
		{admission.LimitConcurrency, wire.LimitConcurrency},
		{admission.LimitRPM, wire.LimitRPM},
		{admission.LimitITPM, wire.LimitITPM},
		{admission.LimitOTPM, wire.LimitOTPM},
		{admission.LimitTPM, wire.LimitTPM},
		{admission.LimitAcceleration, wire.LimitAcceleration},
		{admission.LimitQuota, wire.LimitQuota},
	} {
		if p[0] != p[1] {
			t.Errorf("admission names a limit %q, wire %q", p[0], p[1])
		}
	}
}
