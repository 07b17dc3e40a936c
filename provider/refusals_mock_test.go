package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// TestMockLimitRefusals classifies the refusals of the mock's limit
// semantics beyond a key's own buckets (docs/mockllm.md, "Organizations and
// long context", "OpenAI's slow_down"), each from the real mock over HTTP:
// the organization's pool, the long-context limits and the acceleration
// ramp (OpenAI's slow_down) are rate limits, Throttled with the retry-after
// the mock sent, never a spent quota and never an overload; a mid-stream
// error stays Failed (TestMockFaults).
func TestMockLimitRefusals(t *testing.T) {
	providers := []provider.Provider{provider.Anthropic{}, provider.OpenAI{}, provider.OpenAIResponses{}}
	tests := []struct {
		name      string
		setup     func(c *mock.Config)
		first     int                              // requests admitted before the refused one
		req       func(r *provider.Request)        // the refused request, and those before it
		wantRetry time.Duration                    // its retry-after
		wantType  func(p provider.Provider) string // Describe's type
		wantCode  func(p provider.Provider) string // the APIError's finer code
		wantMsg   string                           // in Describe's message
		keys      func(i int) string               // the API key of request i; nil: mockKey
	}{
		{
			name:      "organization",
			setup:     func(c *mock.Config) { c.APIKeys = []string{mockKey, "sk-second"}; c.Organization.Limits.RPM = 2 },
			first:     2,
			keys:      func(i int) string { return []string{mockKey, "sk-second", "sk-second"}[i] },
			wantRetry: 30 * time.Second,
			wantType:  rateLimitType,
			wantCode:  rateLimitCode,
			wantMsg:   "this organization may send 2 requests per minute",
		},
		{
			name: "long context",
			setup: func(c *mock.Config) {
				c.LongContext = mock.LongContext{ThresholdTokens: 100, Limits: mock.Limits{RPM: 1}}
			},
			first:     1,
			req:       func(r *provider.Request) { r.Messages[0].Content = strings.Repeat("abcd", 200) },
			wantRetry: time.Minute,
			wantType:  rateLimitType,
			wantCode:  rateLimitCode,
			wantMsg:   "long-context requests (above 100 input tokens) may send 1 requests per minute",
		},
		{
			name:      "acceleration",
			setup:     func(c *mock.Config) { c.Limits.Acceleration = mock.Acceleration{Factor: 2, Floor: 1} },
			first:     1,
			wantRetry: time.Minute,
			wantType:  func(provider.Provider) string { return "rate_limit_error" },
			wantCode: func(p provider.Provider) string {
				if p.Name() == "anthropic" {
					return ""
				}
				return "slow_down"
			},
			wantMsg: "traffic grew too fast",
		},
	}
	for _, tt := range tests {
		for _, p := range providers {
			t.Run(tt.name+"/"+p.Name(), func(t *testing.T) {
				cfg := fastConfig()
				tt.setup(&cfg)
				base := mocktest.Start(t, cfg).URL
				c := mockClient(t, p, base)
				if p.Name() == "openai-responses" {
					c.BaseURL = base + "/v1"
				}
				var o strategies.Outcome
				for i := range tt.first + 1 {
					if tt.keys != nil {
						c.APIKey = tt.keys(i)
					}
					r := request(false)
					if tt.req != nil {
						tt.req(&r)
					}
					_, o = c.Do(context.Background(), r, 0)
					if i < tt.first && o.Kind != strategies.Success {
						t.Fatalf("request %d: %v %d (%v), want it admitted", i, o.Kind, o.Status, o.Err)
					}
				}
				_, typ, msg := provider.Describe(o)
				if o.Kind != strategies.Throttled || o.Status != 429 || !o.HasRetryAfter || o.RetryAfter != tt.wantRetry {
					t.Errorf("Outcome = %v %d retry-after %v (%v); want Throttled 429 retry-after %v", o.Kind, o.Status, o.RetryAfter, o.Err, tt.wantRetry)
				}
				if want := tt.wantType(p); typ != want || !strings.Contains(msg, tt.wantMsg) {
					t.Errorf("Describe = %q %q, want type %q and a message with %q", typ, msg, want, tt.wantMsg)
				}
				var e *provider.APIError
				if !errors.As(o.Err, &e) || e.Code != tt.wantCode(p) {
					t.Errorf("Err = %#v, want an APIError with code %q", o.Err, tt.wantCode(p))
				}
			})
		}
	}
}

// rateLimitType is the type of a plain rate-limit 429 of requests:
// Anthropic's rate_limit_error, OpenAI's requests.
func rateLimitType(p provider.Provider) string {
	if p.Name() == "anthropic" {
		return "rate_limit_error"
	}
	return "requests"
}

// rateLimitCode is its finer code: OpenAI's rate_limit_exceeded.
func rateLimitCode(p provider.Provider) string {
	if p.Name() == "anthropic" {
		return ""
	}
	return "rate_limit_exceeded"
}
