package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestKindOf(t *testing.T) {
	tests := []struct {
		status int
		want   strategies.Kind
	}{
		{200, strategies.Success},
		{201, strategies.Success},
		{299, strategies.Success},
		{429, strategies.Throttled},
		{529, strategies.Overloaded},
		{503, strategies.Overloaded},
		{500, strategies.Failed},
		{502, strategies.Failed},
		{504, strategies.Failed},
		{400, strategies.Failed},
		{401, strategies.Failed},
		{408, strategies.Failed},
		{301, strategies.Failed},
		{0, strategies.Failed},
	}
	for _, tt := range tests {
		if got := KindOf(tt.status); got != tt.want {
			t.Errorf("KindOf(%d) = %v, want %v", tt.status, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
		wantOK  bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "1"}, time.Second, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"float seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"spaces", map[string]string{"Retry-After": " 2 "}, 2 * time.Second, true},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, true},
		{"ms first", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{"float ms", map[string]string{"Retry-After-Ms": "0.5"}, 500 * time.Microsecond, true},
		{"bad ms falls through", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "2"}, 2 * time.Second, true},
		{"NaN ms falls through", map[string]string{"Retry-After-Ms": "NaN", "Retry-After": "2"}, 2 * time.Second, true},
		{"http date", map[string]string{"Retry-After": t0.Add(30 * time.Second).Format(http.TimeFormat)}, 30 * time.Second, true},
		{"http date past", map[string]string{"Retry-After": t0.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"rfc850 date", map[string]string{"Retry-After": t0.Add(5 * time.Second).Format(time.RFC850)}, 5 * time.Second, true},
		{"garbage", map[string]string{"Retry-After": "tomorrow"}, 0, false},
		{"infinite", map[string]string{"Retry-After": "+Inf"}, 0, false},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0, false},
		{"huge", map[string]string{"Retry-After": "1e300"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			got, ok := ParseRetryAfter(h, t0)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%v) = %v, %v; want %v, %v", tt.headers, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "1.5", "NaN", "+Inf", "1e308", "Wed, 21 Oct 2015 07:28:00 GMT", "", "  3  "} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, ms, secs string) {
		h := http.Header{}
		h.Set("Retry-After-Ms", ms)
		h.Set("Retry-After", secs)
		d, ok := ParseRetryAfter(h, t0)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(ms=%q, s=%q) = %v, negative", ms, secs, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(ms=%q, s=%q) = %v, false; want 0 when not ok", ms, secs, d)
		}
	})
}

func TestParseShouldRetry(t *testing.T) {
	tests := []struct {
		v    string
		want *bool
	}{
		{"", nil},
		{"true", ptr(true)},
		{"TRUE", ptr(true)},
		{"false", ptr(false)},
		{"maybe", nil},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.v != "" {
			h.Set("X-Should-Retry", tt.v)
		}
		got := ParseShouldRetry(h)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("ParseShouldRetry(%q) = %v, want %v", tt.v, fmtBool(got), fmtBool(tt.want))
		}
	}
}

func ptr[T any](v T) *T { return &v }

func fmtBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

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

func TestDescribe(t *testing.T) {
	tests := []struct {
		name       string
		o          strategies.Outcome
		wantStatus int
		wantType   string
		wantMsg    string
	}{
		{"success", strategies.Outcome{Kind: strategies.Success, Status: 200}, 0, "", ""},
		{"api error", strategies.Outcome{Kind: strategies.Throttled, Status: 429, Err: &APIError{Status: 429, Type: "rate_limit_error", Message: "slow down"}}, 429, "rate_limit_error", "slow down"},
		{"api error bare", strategies.Outcome{Kind: strategies.Failed, Status: 502, Err: &APIError{Status: 502}}, 502, "http_502", "Bad Gateway"},
		{"mid-stream", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: &APIError{Status: 200, Type: "overloaded_error", Message: "Overloaded"}}, 200, "overloaded_error", "Overloaded"},
		{"connection", strategies.Outcome{Kind: strategies.Failed, Err: errors.New("dial tcp: refused")}, 0, "connection_error", "dial tcp: refused"},
		{"cut", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: ErrIncompleteStream}, 200, "incomplete_stream", ErrIncompleteStream.Error()},
		{"invalid", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: fmt.Errorf("%w: x", ErrInvalidResponse)}, 200, "invalid_response", "provider: invalid response body: x"},
		{"canceled", strategies.Outcome{Kind: strategies.Canceled, Err: context.Canceled}, 0, "canceled", "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, typ, msg := Describe(tt.o)
			if s != tt.wantStatus || typ != tt.wantType || msg != tt.wantMsg {
				t.Errorf("Describe = %d, %q, %q; want %d, %q, %q", s, typ, msg, tt.wantStatus, tt.wantType, tt.wantMsg)
			}
		})
	}
}
