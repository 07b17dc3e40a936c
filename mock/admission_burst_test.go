package mock

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestBurstOverHTTP: 60 requests at once at rpm 60 all get 200 with the
// default burst of a minute; with burst 1s one does, the other 59 get 429
// with retry-after 1 (and retry-after-ms 1001 when asked), and the
// headers still report the per-minute limit.
func TestBurstOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		burst  time.Duration
		ms     bool
		want   map[int]int
		remain string // requests-remaining on a 200 answered at once
	}{
		{0, false, map[int]int{200: 60}, ""},
		{time.Second, false, map[int]int{200: 1, 429: 59}, "0"},
		{time.Second, true, map[int]int{200: 1, 429: 59}, "0"},
	} {
		t.Run(fmt.Sprintf("burst=%v/ms=%v", tc.burst, tc.ms), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Latency.PerToken = 0
				cfg.Limits = Limits{RPM: 60, Burst: tc.burst, RetryAfterMS: tc.ms}
				ts := startServer(t, cfg)
				defer ts.stop()
				rs := fanOut(t, 60, 0, func(int) (reply, error) {
					return ts.send("POST", "/v1/messages", anthropicBody(10, false, "hi"))
				})
				if got := countStatus(rs); fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("statuses = %v, want %v", got, tc.want)
				}
				for _, r := range rs {
					if got := r.header.Get("Anthropic-Ratelimit-Requests-Limit"); got != "60" {
						t.Errorf("requests-limit = %q, want 60 (the per-minute limit)", got)
					}
					if r.status != 429 {
						if tc.remain != "" && r.header.Get("Anthropic-Ratelimit-Requests-Remaining") != tc.remain {
							t.Errorf("200: requests-remaining = %q, want %s", r.header.Get("Anthropic-Ratelimit-Requests-Remaining"), tc.remain)
						}
						continue
					}
					if got := r.header.Get("Retry-After"); got != "1" {
						t.Errorf("retry-after = %q, want 1", got)
					}
					wantMS := ""
					if tc.ms {
						wantMS = "1001"
					}
					if got := r.header.Get("Retry-After-Ms"); got != wantMS {
						t.Errorf("retry-after-ms = %q, want %q", got, wantMS)
					}
					if got := r.header.Get("X-Should-Retry"); got != "true" {
						t.Errorf("x-should-retry = %q on Anthropic's rate-limit 429, want true", got)
					}
				}
				if tc.burst == 0 {
					return
				}
				// One a second from then on, exactly.
				time.Sleep(999 * time.Millisecond)
				if r := ts.do(t, "POST", "/v1/messages", anthropicBody(10, false, "hi")); r.status != 429 || r.header.Get("Retry-After-Ms") != map[bool]string{true: "2", false: ""}[tc.ms] {
					t.Errorf("at 0.999s: status %d retry-after-ms %q, want 429 and 2 ms (1 ms left, plus one) when asked", r.status, r.header.Get("Retry-After-Ms"))
				}
				time.Sleep(time.Millisecond)
				if r := ts.do(t, "POST", "/v1/messages", anthropicBody(10, false, "hi")); r.status != 200 {
					t.Errorf("at 1s: status %d, want 200", r.status)
				}
			})
		})
	}
}

// The reproduction of the concurrency bug, through the admin API:
// after PUT /_admin/limits {"max_concurrent":1,"rpm":600} a concurrent
// request's 429 reports the requests the bucket really has left, 599, not
// 0: only the exhausted dimension reports 0.
func TestConcurrency429AfterAdminPut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 100 * time.Millisecond
		ts := startServer(t, cfg)
		defer ts.stop()
		if r := ts.do(t, "PUT", "/_admin/limits", `{"max_concurrent":1,"rpm":600}`); r.status != 200 {
			t.Fatalf("PUT limits: %d %s", r.status, r.body)
		}
		done := make(chan reply)
		go func() { done <- ts.do(t, "POST", "/v1/messages", anthropicBody(5, false, "hi")) }()
		time.Sleep(10 * time.Millisecond)
		r := ts.do(t, "POST", "/v1/messages", anthropicBody(5, false, "hi"))
		if r.status != 429 || r.header.Get("Anthropic-Ratelimit-Requests-Remaining") != "599" {
			t.Errorf("concurrent request: %d, requests-remaining %q; want 429 and 599", r.status, r.header.Get("Anthropic-Ratelimit-Requests-Remaining"))
		}
		<-done
	})
}
