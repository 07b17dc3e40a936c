package mock

import (
	"github.com/ratelab/ratelab/mock/internal/admission"

	"math"
	"strings"
	"testing"
	"testing/synctest"
)

// TestQuotaUSD spends a dollar cap request by request: each costs its
// tokens at its model's prices (input, cache writes at their TTL's price,
// cache reads, output), a model without a price costs nothing, and once
// the key has spent $0.02 its next request gets the quota 429.
func TestQuotaUSD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Prices = map[string]Price{
			"claude-sonnet-*": {Input: 3, Output: 15, CacheWrite: 3.75, CacheWrite1h: 6, CacheRead: 0.3},
			"claude-*":        {Input: 100, Output: 100}, // shorter: not the sonnet's price
		}
		cfg.Quota = Quota{USD: 0.02}
		ts := startServer(t, cfg)
		defer ts.stop()
		steps := []struct {
			path, body string
			status     int
			usd        float64 // spent after the request
		}{
			// 1 uncached input token, 2,000 written (5m), 10 output tokens.
			{"/v1/messages", cachedBody(2000, "", "q"), 200, (1*3 + 2000*3.75 + 10*15) / 1e6},
			// The same prefix read.
			{"/v1/messages", cachedBody(2000, "", "q"), 200, (1*3+2000*3.75+10*15)/1e6 + (1*3+2000*0.3+10*15)/1e6},
			// No price for gpt-5-mini: nothing spent.
			{"/v1/chat/completions", openaiBody(10, false, false, "hi"), 200, (1*3+2000*3.75+10*15)/1e6 + (1*3+2000*0.3+10*15)/1e6},
			// A 1-hour breakpoint is another prefix, written at the 1h price: $0.020559 in all.
			{"/v1/messages", cachedBody(2000, "1h", "q"), 200, (1*3+2000*3.75+10*15)/1e6 + (1*3+2000*0.3+10*15)/1e6 + (1*3+2000*6+10*15)/1e6},
			{"/v1/chat/completions", openaiBody(10, false, false, "hi"), 429, (1*3+2000*3.75+10*15)/1e6 + (1*3+2000*0.3+10*15)/1e6 + (1*3+2000*6+10*15)/1e6},
		}
		for i, st := range steps {
			r := ts.do(t, "POST", st.path, st.body)
			used := ts.Stats().Keys["anonymous"].QuotaUsed.USD
			if r.status != st.status || math.Abs(used-st.usd) > 1e-12 {
				t.Errorf("step %d: status %d, spent $%.6f; want %d, $%.6f (%s)", i, r.status, used, st.status, st.usd, r.body)
			}
		}
		r := ts.do(t, "POST", "/v1/messages", cachedBody(2000, "", "q"))
		if msg := string(r.body); r.status != 429 || r.header.Get("Retry-After") != "" ||
			!strings.Contains(msg, "enforced_spend_limit_reached") || !strings.Contains(msg, "this API key's quota of $0.02 is spent (mock quota.usd)") {
			t.Errorf("spent: %d %s", r.status, msg)
		}
		if st := ts.Stats(); st.QuotaExceededBy[QuotaUSD] != 2 || st.Throttled != 0 {
			t.Errorf("stats: quota exceeded by %v, throttled %d; want usd 2, 0", st.QuotaExceededBy, st.Throttled)
		}
	})
}

// TestQuotaUSDConfig: a dollar cap needs prices, and prices are
// non-negative numbers under valid patterns.
func TestQuotaUSDConfig(t *testing.T) {
	for _, tt := range []struct {
		cfg  func(*Config)
		want string
	}{
		{func(c *Config) { c.Quota.USD = 5 }, "quota.usd: needs prices"},
		{func(c *Config) { c.Quota.USD = -1 }, "quota.usd: must be in [0, 1e+12], got -1"},
		{func(c *Config) { c.Quota.USD = math.NaN() }, "quota.usd: must be in [0, 1e+12], got NaN"},
		{func(c *Config) { c.Prices = map[string]Price{"claude-*": {Output: -2}} }, "prices.claude-*.output: must be in [0, 1e+12] USD per million tokens, got -2"},
		{func(c *Config) { c.Prices = map[string]Price{"[": {Input: 1}} }, `prices.[: want a model pattern such as claude-sonnet-4-*, got "["`},
	} {
		cfg := DefaultConfig()
		tt.cfg(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate: %v, want %q", err, tt.want)
		}
	}
}

// TestProfilePrices: the Anthropic profiles price Claude Fable 5.1 and 5 as
// the pricing page lists them, each by its own, longest, pattern; the OpenAI
// ones gpt-4o and gpt-4o-mini, a dated snapshot as its model.
func TestProfilePrices(t *testing.T) {
	tier1, err := LookupProfile("anthropic-tier1")
	if err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string]Price{
		"claude-opus-4-1-20250805":  {Input: 15, Output: 75, CacheWrite: 18.75, CacheWrite1h: 30, CacheRead: 1.5},
		"claude-opus-4-5-20251101":  {Input: 5, Output: 25, CacheWrite: 6.25, CacheWrite1h: 10, CacheRead: 0.5},
		"claude-sonnet-4-20250514":  {Input: 3, Output: 15, CacheWrite: 3.75, CacheWrite1h: 6, CacheRead: 0.3},
		"claude-haiku-4-5-20251001": {Input: 1, Output: 5, CacheWrite: 1.25, CacheWrite1h: 2, CacheRead: 0.1},
	} {
		if got := admission.PriceOf(tier1.Config.Prices, model); got != want {
			t.Errorf("anthropic-tier1: %s priced %+v, want %+v", model, got, want)
		}
	}
	for _, name := range []string{"openai-tier1", "openai-tier5"} {
		p, err := LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		for model, want := range map[string]Price{
			"gpt-4o":                 {Input: 2.5, Output: 10, CacheWrite: 2.5, CacheRead: 1.25},
			"gpt-4o-2024-08-06":      {Input: 2.5, Output: 10, CacheWrite: 2.5, CacheRead: 1.25},
			"gpt-4o-mini-2024-07-18": {Input: 0.15, Output: 0.6, CacheWrite: 0.15, CacheRead: 0.075},
			"claude-fable-5":         {},
		} {
			if got := admission.PriceOf(p.Config.Prices, model); got != want {
				t.Errorf("%s: %s priced %+v, want %+v", name, model, got, want)
			}
		}
	}
	for _, name := range []string{"anthropic-start", "anthropic-scale"} {
		p, err := LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		for model, want := range map[string]Price{
			"claude-fable-5-1": {Input: 10, Output: 50, CacheWrite: 12.5, CacheWrite1h: 20, CacheRead: 0.25},
			"claude-fable-5":   {Input: 10, Output: 50, CacheWrite: 12.5, CacheWrite1h: 20, CacheRead: 1},
			"gpt-5-mini":       {},
		} {
			if got := admission.PriceOf(p.Config.Prices, model); got != want {
				t.Errorf("%s: %s priced %+v, want %+v", name, model, got, want)
			}
		}
	}
}
