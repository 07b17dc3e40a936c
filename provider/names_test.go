package provider

import (
	"net/http"
	"testing"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// t0 is the receive time of the tests' responses.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestAnthropicLimits(t *testing.T) {
	h := http.Header{}
	for k, v := range map[string]string{
		"anthropic-ratelimit-requests-limit":          "1000",
		"anthropic-ratelimit-requests-remaining":      "999",
		"anthropic-ratelimit-requests-reset":          "2025-08-21T12:40:59Z",
		"anthropic-ratelimit-input-tokens-limit":      "80000",
		"anthropic-ratelimit-input-tokens-remaining":  "80000",
		"anthropic-ratelimit-input-tokens-reset":      "2025-08-21T12:40:59Z",
		"anthropic-ratelimit-output-tokens-limit":     "16000",
		"anthropic-ratelimit-output-tokens-remaining": "15000",
		"anthropic-ratelimit-output-tokens-reset":     "2025-08-21T12:41:00Z",
		"anthropic-ratelimit-tokens-limit":            "96000",
		"anthropic-ratelimit-tokens-remaining":        "95000",
		"anthropic-ratelimit-tokens-reset":            "garbage",
	} {
		h.Set(k, v)
	}
	got := AnthropicLimits(h, t0)
	reset := time.Date(2025, 8, 21, 12, 40, 59, 0, time.UTC)
	want := strategies.Limits{
		Requests:     strategies.Limit{Limit: 1000, Remaining: 999, Reset: reset},
		Tokens:       strategies.Limit{Limit: 96000, Remaining: 95000},
		InputTokens:  strategies.Limit{Limit: 80000, Remaining: 80000, Reset: reset},
		OutputTokens: strategies.Limit{Limit: 16000, Remaining: 15000, Reset: reset.Add(time.Second)},
	}
	if !limitsEqual(got, want) {
		t.Errorf("AnthropicLimits = %+v\nwant %+v", got, want)
	}
	if got := AnthropicLimits(http.Header{}, t0); got.Requests.Known() || got.Tokens.Known() {
		t.Errorf("AnthropicLimits(no headers) = %+v, want zero", got)
	}
}

func TestOpenAILimits(t *testing.T) {
	h := http.Header{}
	for k, v := range map[string]string{
		"x-ratelimit-limit-requests":     "60",
		"x-ratelimit-limit-tokens":       "150000",
		"x-ratelimit-remaining-requests": "59",
		"x-ratelimit-remaining-tokens":   "149984",
		"x-ratelimit-reset-requests":     "1s",
		"x-ratelimit-reset-tokens":       "6m0s",
	} {
		h.Set(k, v)
	}
	got := OpenAILimits(h, t0)
	want := strategies.Limits{
		Requests: strategies.Limit{Limit: 60, Remaining: 59, Reset: t0.Add(time.Second)},
		Tokens:   strategies.Limit{Limit: 150000, Remaining: 149984, Reset: t0.Add(6 * time.Minute)},
	}
	if !limitsEqual(got, want) {
		t.Errorf("OpenAILimits = %+v\nwant %+v", got, want)
	}
	h.Set("x-ratelimit-reset-tokens", "12ms")
	if got := OpenAILimits(h, t0).Tokens.Reset; !got.Equal(t0.Add(12 * time.Millisecond)) {
		t.Errorf("reset 12ms: Reset = %v, want %v", got, t0.Add(12*time.Millisecond))
	}
}

func limitsEqual(a, b strategies.Limits) bool {
	eq := func(x, y strategies.Limit) bool {
		return x.Limit == y.Limit && x.Remaining == y.Remaining && x.Reset.Equal(y.Reset)
	}
	return eq(a.Requests, b.Requests) && eq(a.Tokens, b.Tokens) && eq(a.InputTokens, b.InputTokens) && eq(a.OutputTokens, b.OutputTokens)
}
