package mock

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
)

// TestQuotaOverHTTP replays a key's quota being spent: the request that
// crosses it is admitted, every later one gets the provider's spend-cap
// 429 with no retry-after, counted as quota_exceeded and never as
// throttled; raising the quota through the admin API lets the key in again.
func TestQuotaOverHTTP(t *testing.T) {
	for _, api := range []string{"anthropic", "openai"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Latency.PerToken = 0
				cfg.Limits = Limits{RPM: 1000, RetryAfterMS: true}
				cfg.Quota = Quota{Requests: 5, OutputTokens: 25}
				ts := startServer(t, cfg)
				defer ts.stop()
				path, body := "/v1/messages", anthropicBody(10, false, "hi")
				if api == "openai" {
					path, body = "/v1/chat/completions", openaiBody(10, false, false, "hi")
				}
				var got []int
				for range 5 {
					got = append(got, ts.do(t, "POST", path, body).status)
				}
				// 10 output tokens each: the third crosses 25 and is admitted.
				if fmt.Sprint(got) != "[200 200 200 429 429]" {
					t.Fatalf("statuses = %v, want [200 200 200 429 429]", got)
				}
				r := ts.do(t, "POST", path, body)
				for _, h := range []string{"Retry-After", "Retry-After-Ms", "X-Should-Retry"} {
					if v := r.header.Get(h); v != "" {
						t.Errorf("quota 429 carries %s: %q, want none", h, v)
					}
				}
				m := r.json(t)
				if api == "anthropic" {
					e := m["error"].(map[string]any)
					if e["type"] != "rate_limit_error" || fmt.Sprint(e["details"]) != "map[error_code:enforced_spend_limit_reached]" ||
						!strings.HasPrefix(e["message"].(string), "You have reached your API usage limits") {
						t.Errorf("anthropic quota error = %s", r.body)
					}
				} else {
					e := m["error"].(map[string]any)
					if e["type"] != "insufficient_quota" || e["code"] != "insufficient_quota" ||
						!strings.HasPrefix(e["message"].(string), "You exceeded your current quota") {
						t.Errorf("openai quota error = %s", r.body)
					}
				}
				st := ts.Stats()
				if st.QuotaExceeded != 3 || st.QuotaExceededBy[QuotaOutputTokens] != 3 || st.Throttled != 0 || st.ThrottledBy != nil || st.Admitted != 3 {
					t.Errorf("stats: quota_exceeded %d by %v, throttled %d by %v, admitted %d; want 3 by output_tokens, 0, 3",
						st.QuotaExceeded, st.QuotaExceededBy, st.Throttled, st.ThrottledBy, st.Admitted)
				}
				if c := st.Calls; c.QuotaExceeded != 3 || c.Throttled != 0 || c.ThrottledBy != nil || slices.ContainsFunc(c.ThrottledByAttempt, func(n int64) bool { return n != 0 }) {
					t.Errorf("call stats: quota_exceeded %d, throttled %d by %v, by attempt %v; want 3, 0, none",
						c.QuotaExceeded, c.Throttled, c.ThrottledBy, c.ThrottledByAttempt)
				}
				k := st.Keys["anonymous"]
				if k.QuotaExceeded != 3 || k.QuotaUsed != (QuotaUsed{Requests: 3, InputTokens: 3, OutputTokens: 30}) {
					t.Errorf("key stats: quota_exceeded %d, used %+v; want 3, {3 3 30}", k.QuotaExceeded, k.QuotaUsed)
				}
				metrics := string(ts.do(t, "GET", "/metrics", "").body)
				if !strings.Contains(metrics, `mockllm_quota_exceeded_total{dimension="output_tokens"} 3`) || strings.Contains(metrics, "mockllm_rejections_total{") {
					t.Errorf("/metrics: want mockllm_quota_exceeded_total{dimension=\"output_tokens\"} 3 and no rate-limit rejections:\n%s", metrics)
				}

				// The admin API raises it; what was used stays used.
				r = ts.do(t, "PUT", "/_admin/quota", `{"output_tokens": 40, "should_retry": false}`)
				if r.status != 200 || compactJSON(t, r.body) != `{"output_tokens":40,"requests":5,"should_retry":false}` {
					t.Fatalf("PUT quota: %d %s", r.status, r.body)
				}
				got = got[:0]
				for range 3 {
					got = append(got, ts.do(t, "POST", path, body).status)
				}
				if fmt.Sprint(got) != "[200 429 429]" {
					t.Errorf("after raising output_tokens to 40: statuses = %v, want [200 429 429]", got)
				}
				r = ts.do(t, "POST", path, body)
				if r.header.Get("X-Should-Retry") != "false" {
					t.Errorf("should_retry false: x-should-retry = %q, want false", r.header.Get("X-Should-Retry"))
				}
				// Output tokens unlimited: the fifth request is the last.
				ts.do(t, "PUT", "/_admin/quota", `{"output_tokens": 0}`)
				got = got[:0]
				for range 2 {
					got = append(got, ts.do(t, "POST", path, body).status)
				}
				if st := ts.Stats(); fmt.Sprint(got) != "[200 429]" || fmt.Sprint(st.QuotaExceededBy) != "map[output_tokens:6 requests:1]" {
					t.Errorf("requests quota 5: statuses %v, quota_exceeded_by %v; want [200 429], output_tokens 6 and requests 1", got, st.QuotaExceededBy)
				}
				r = ts.do(t, "PUT", "/_admin/quota", "requests: -1\n")
				if r.status != 400 || !strings.Contains(string(r.body), "request body:1: quota.requests: must not be negative, got -1") {
					t.Errorf("PUT quota requests -1: %d %s, want 400 naming request body:1: quota.requests", r.status, r.body)
				}
				// Reset forgets what was used.
				ts.Reset()
				if r := ts.do(t, "POST", path, body); r.status != 200 {
					t.Errorf("after Reset: status %d, want 200", r.status)
				}
			})
		})
	}
}
