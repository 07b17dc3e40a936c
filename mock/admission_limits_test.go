package mock

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// fanOut runs n calls at once, each through call, and returns the replies in
// order. sem bounds the calls in flight (0: unbounded).
func fanOut(t *testing.T, n, sem int, call func(i int) (reply, error)) []reply {
	t.Helper()
	out := make([]reply, n)
	var wg sync.WaitGroup
	var slots chan struct{}
	if sem > 0 {
		slots = make(chan struct{}, sem)
	}
	for i := range n {
		wg.Go(func() {
			if slots != nil {
				slots <- struct{}{}
				defer func() { <-slots }()
			}
			r, err := call(i)
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			out[i] = r
		})
	}
	wg.Wait()
	return out
}

func countStatus(rs []reply) map[int]int {
	m := map[int]int{}
	for _, r := range rs {
		m[r.status]++
	}
	return m
}

func TestBurstAboveMaxConcurrent(t *testing.T) {
	for _, api := range []string{"anthropic", "openai"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Limits = Limits{MaxConcurrent: 20, RPM: 1000}
				ts := startServer(t, cfg)
				defer ts.stop()
				rs := fanOut(t, 50, 0, func(int) (reply, error) {
					if api == "openai" {
						return ts.send("POST", "/v1/chat/completions", openaiBody(100, false, false, "hi"))
					}
					return ts.send("POST", "/v1/messages", anthropicBody(100, false, "hi"))
				})
				if got, want := countStatus(rs), (map[int]int{200: 20, 429: 30}); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("statuses = %v, want %v", got, want)
				}
				for _, r := range rs {
					if r.status != 429 {
						continue
					}
					if got := r.header.Get("Retry-After"); got != "1" {
						t.Errorf("retry-after = %q, want 1 (the earliest in-flight request ends in 0.5s)", got)
					}
					h := "Anthropic-Ratelimit-Requests-Remaining"
					if api == "openai" {
						h = "X-Ratelimit-Remaining-Requests"
					}
					// Only the exhausted dimension reports 0; concurrency has no
					// header, so requests-remaining is the bucket's own count.
					if got := r.header.Get(h); got != "980" {
						t.Errorf("%s = %q on a concurrency 429, want 980 (1000 minus the 20 admitted)", h, got)
					}
				}
				st := ts.Stats()
				if st.Throttled != 30 || st.ThrottledBy[wire.LimitConcurrency] != 30 || st.Admitted != 20 || st.Attempts != 50 {
					t.Errorf("stats = %+v, want 50 attempts, 20 admitted, 30 throttled by max_concurrent", st)
				}
			})
		})
	}
}

// TestSemaphoreAtLimit is the guide's Semaphore(20) row: a client that
// starts its next call as soon as it has read a response is never rejected,
// because the slot is released before the last byte is written.
func TestSemaphoreAtLimit(t *testing.T) {
	for _, tc := range []struct {
		api    string
		stream bool
	}{{"anthropic", false}, {"anthropic", true}, {"openai", false}, {"openai", true}} {
		t.Run(fmt.Sprintf("%s/stream=%v", tc.api, tc.stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Limits.MaxConcurrent = 20
				cfg.Limits.RetryAfter = time.Second
				ts := startServer(t, cfg)
				defer ts.stop()
				start := time.Now()
				rs := fanOut(t, 200, 20, func(int) (reply, error) {
					if tc.api == "openai" {
						return ts.send("POST", "/v1/chat/completions", openaiBody(100, tc.stream, true, "hi"))
					}
					return ts.send("POST", "/v1/messages", anthropicBody(100, tc.stream, "hi"))
				})
				if got := countStatus(rs); got[200] != 200 {
					t.Errorf("statuses = %v, want 200 x 200", got)
				}
				if got, want := time.Since(start), 5*time.Second; got != want {
					t.Errorf("200 calls of 500ms, 20 at a time took %v, want %v", got, want)
				}
			})
		})
	}
}

// TestUnboundedWithRetries is the guide's "gather, no limit, retries=2"
// row: 200 calls at once against 20 slots and retry-after 1 complete 60,
// in 540 attempts of which 480 are 429s.
func TestUnboundedWithRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Limits = Limits{MaxConcurrent: 20, RetryAfter: time.Second}
		ts := startServer(t, cfg)
		defer ts.stop()
		rs := fanOut(t, 200, 0, func(int) (reply, error) {
			var r reply
			var err error
			for attempt := range 3 {
				r, err = ts.send("POST", "/v1/messages", anthropicBody(100, false, "hi"),
					"X-Stainless-Retry-Count", strconv.Itoa(attempt))
				if err != nil || r.status != 429 {
					return r, err
				}
				if attempt < 2 {
					ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
					time.Sleep(time.Duration(ra) * time.Second)
				}
			}
			return r, nil
		})
		st := ts.Stats()
		if got := countStatus(rs)[200]; got != 60 {
			t.Errorf("completed = %d, want 60", got)
		}
		if st.Attempts != 540 || st.Throttled != 480 || st.EarlyRetries != 0 {
			t.Errorf("attempts, 429s, early retries = %d, %d, %d; want 540, 480, 0", st.Attempts, st.Throttled, st.EarlyRetries)
		}
	})
}

func TestEarlyRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Limits = Limits{MaxConcurrent: 1, RetryAfter: 2 * time.Second}
		ts := startServer(t, cfg)
		defer ts.stop()
		go ts.send("POST", "/v1/messages", anthropicBody(1000, false, "hi")) // holds the slot for 5s
		synctest.Wait()
		body := anthropicBody(1, false, "hi")
		ts.do(t, "POST", "/v1/messages", body, "X-Stainless-Retry-Count", "0") // 429, gate until 2s
		ts.do(t, "POST", "/v1/messages", body, "Idempotency-Key", "a")         // 429, gate until 2s
		time.Sleep(time.Second)
		ts.do(t, "POST", "/v1/messages", body, "X-Stainless-Retry-Count", "1") // early
		ts.do(t, "POST", "/v1/messages", body, "Idempotency-Key", "a")         // early
		time.Sleep(time.Second)
		ts.do(t, "POST", "/v1/messages", body, "Idempotency-Key", "a") // early: rejected again at 1s, its gate is now 3s
		time.Sleep(5 * time.Second)
		ts.do(t, "POST", "/v1/messages", body, "X-Stainless-Retry-Count", "2") // on time
		st := ts.Stats()
		if got, want := st.EarlyRetries, int64(3); got != want {
			t.Errorf("early retries = %d, want %d", got, want)
		}
		if got, want := st.Keys["anonymous"].EarlyRetries, int64(3); got != want {
			t.Errorf("anonymous key early retries = %d, want %d", got, want)
		}
	})
}

func TestRPMRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits.RPM = 60
		ts := startServer(t, cfg)
		defer ts.stop()
		body := anthropicBody(1, false, "hi")
		burst := func(n int) map[int]int {
			return countStatus(fanOut(t, n, 0, func(int) (reply, error) { return ts.send("POST", "/v1/messages", body) }))
		}
		if got := burst(70); got[200] != 60 || got[429] != 10 {
			t.Errorf("burst of 70 at rpm 60: %v, want 60 x 200 and 10 x 429", got)
		}
		r := ts.do(t, "POST", "/v1/messages", body)
		if r.status != 429 || r.header.Get("Retry-After") != "1" {
			t.Errorf("empty bucket: status %d retry-after %q, want 429 and 1", r.status, r.header.Get("Retry-After"))
		}
		if got, want := r.header.Get("Anthropic-Ratelimit-Requests-Reset"), "2000-01-01T00:01:00Z"; got != want {
			t.Errorf("requests-reset = %q, want %q (a minute to refill)", got, want)
		}
		time.Sleep(time.Second)
		if got := burst(2); got[200] != 1 || got[429] != 1 {
			t.Errorf("1s later: %v, want one 200 and one 429", got)
		}
		time.Sleep(10 * time.Second)
		if got := burst(10); got[200] != 10 {
			t.Errorf("10s later: %v, want 10 x 200", got)
		}
	})
}

func TestOutputTokenReserveAndSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 10 * time.Millisecond
		cfg.Output.Tokens = Distribution{Kind: Fixed, Min: 10}
		cfg.Limits.OTPM = 1000
		ts := startServer(t, cfg)
		defer ts.stop()
		body := anthropicBody(500, false, "hi")
		// Two requests reserve 500 each: the third is over otpm.
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { ts.send("POST", "/v1/messages", body) })
		}
		synctest.Wait()
		r := ts.do(t, "POST", "/v1/messages", body)
		if r.status != 429 || r.json(t)["error"].(map[string]any)["message"] == "" {
			t.Fatalf("third request: status %d, want 429", r.status)
		}
		if got := r.header.Get("Anthropic-Ratelimit-Output-Tokens-Remaining"); got != "0" {
			t.Errorf("output-tokens-remaining = %q, want 0", got)
		}
		wg.Wait() // 100ms: each produced 10 tokens and gave back 490
		if r := ts.do(t, "POST", "/v1/messages", body); r.status != 200 {
			t.Errorf("after settling: status %d, want 200", r.status)
		}
		if got := ts.Stats().OutputTokens; got != 30 {
			t.Errorf("output tokens = %d, want 30", got)
		}
	})
}

func TestTPMChargesMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits.TPM = 1000
		ts := startServer(t, cfg)
		defer ts.stop()
		long := string(make([]byte, 0)) + fmt.Sprintf("%0800d", 0) // 200 tokens of prompt
		tests := []struct {
			body       string
			wantStatus int
			wantRemain string
		}{
			{openaiBody(300, false, false, "hi"), 200, "700"}, // charged max_tokens
			{openaiBody(10, false, false, long), 200, "500"},  // charged the prompt
			{openaiBody(600, false, false, "hi"), 429, "0"},   // 600 > 500
			{openaiBody(5000, false, false, "hi"), 429, "0"},  // can never fit
		}
		for i, tt := range tests {
			r := ts.do(t, "POST", "/v1/chat/completions", tt.body)
			if r.status != tt.wantStatus || r.header.Get("X-Ratelimit-Remaining-Tokens") != tt.wantRemain {
				t.Errorf("request %d: status %d remaining %q, want %d and %q; body %s", i, r.status,
					r.header.Get("X-Ratelimit-Remaining-Tokens"), tt.wantStatus, tt.wantRemain, r.body)
			}
		}
		r := ts.do(t, "POST", "/v1/chat/completions", openaiBody(5000, false, false, "hi"))
		if r.header.Get("X-Should-Retry") != "false" || r.header.Get("Retry-After") != "" {
			t.Errorf("too large: x-should-retry %q retry-after %q, want false and none", r.header.Get("X-Should-Retry"), r.header.Get("Retry-After"))
		}
		e := r.json(t)["error"].(map[string]any)
		if e["type"] != "tokens" || e["code"] != "rate_limit_exceeded" {
			t.Errorf("error = %v, want type tokens, code rate_limit_exceeded", e)
		}
	})
}

func TestScheduleChangesLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Limits.MaxConcurrent = 5
		cfg.Schedule = []ScheduleEntry{{At: time.Second, Limits: LimitsPatch{MaxConcurrent: new(2)}}}
		ts := startServer(t, cfg)
		defer ts.stop()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { ts.send("POST", "/v1/messages", anthropicBody(1000, false, "hi")) }) // 5s each
		}
		synctest.Wait()
		time.Sleep(2 * time.Second)
		if got := ts.Limits().MaxConcurrent; got != 2 {
			t.Errorf("max_concurrent after the schedule = %d, want 2", got)
		}
		// Four still in flight (state kept): over the new limit.
		if r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi")); r.status != 429 {
			t.Errorf("status = %d, want 429 under the scheduled limit", r.status)
		}
		wg.Wait()
		if r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi")); r.status != 200 {
			t.Errorf("after the long requests: status = %d, want 200", r.status)
		}
		ts.Reset()
		if got := ts.Limits().MaxConcurrent; got != 5 {
			t.Errorf("max_concurrent after Reset = %d, want 5 (the schedule restarts)", got)
		}
	})
}

func TestSetLimitsKeepsState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Limits.RPM = 10
		ts := startServer(t, cfg)
		defer ts.stop()
		for range 8 {
			ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"))
		}
		ts.SetLimits(Limits{RPM: 5})
		r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"))
		if got := r.header.Get("Anthropic-Ratelimit-Requests-Remaining"); r.status != 200 || got != "1" {
			t.Errorf("after lowering rpm to 5: status %d remaining %q, want 200 and 1 (2 left, capped, minus 1)", r.status, got)
		}
		ts.Reset()
		r = ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"))
		if got := r.header.Get("Anthropic-Ratelimit-Requests-Remaining"); got != "4" {
			t.Errorf("after Reset: remaining %q, want 4 (SetLimits survives Reset, the bucket does not)", got)
		}
	})
}

func TestRetryAfterValues(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		hold   int // max_tokens of the request that holds the slot (5ms each)
		want   string
	}{
		{"fixed", Limits{MaxConcurrent: 1, RetryAfter: 3 * time.Second}, 100, "3"},
		{"computed from the in-flight end", Limits{MaxConcurrent: 1}, 460, "3"}, // 2.3s
		{"computed from rpm", Limits{RPM: 1}, 1, "60"},
		{"fixed rounds up to whole seconds", Limits{RPM: 1, RetryAfter: 1500 * time.Millisecond}, 1, "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Limits = tt.limits
				ts := startServer(t, cfg)
				defer ts.stop()
				go ts.send("POST", "/v1/messages", anthropicBody(tt.hold, false, "hi"))
				synctest.Wait()
				r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"))
				if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != tt.want {
					t.Errorf("status %d retry-after %q, want 429 and %q", r.status, r.header.Get("Retry-After"), tt.want)
				}
				time.Sleep(time.Hour)
			})
		})
	}
}

func TestGlobalCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.APIKeys = []string{"a", "b"}
		cfg.Limits.MaxConcurrent = 10
		cfg.Capacity.MaxConcurrent = 3
		ts := startServer(t, cfg)
		defer ts.stop()
		rs := fanOut(t, 6, 0, func(i int) (reply, error) {
			key := []string{"a", "b"}[i%2]
			if i < 4 {
				return ts.send("POST", "/v1/messages", anthropicBody(100, false, "hi"), "x-api-key", key)
			}
			return ts.send("POST", "/v1/chat/completions", openaiBody(100, false, false, "hi"), "Authorization", "Bearer "+key)
		})
		got := countStatus(rs)
		if got[200] != 3 || got[529]+got[503] != 3 {
			t.Errorf("statuses = %v, want 3 x 200 and 3 overloaded", got)
		}
		for i, r := range rs {
			if r.status == 529 && i >= 4 || r.status == 503 && i < 4 {
				t.Errorf("call %d: status %d is the wrong API's overload status", i, r.status)
			}
		}
		st := ts.Stats()
		if st.Overloaded != 3 || st.Throttled != 0 || len(st.Keys) != 2 {
			t.Errorf("stats: overloaded %d throttled %d keys %d, want 3, 0, 2", st.Overloaded, st.Throttled, len(st.Keys))
		}
	})
}

// TestRateLimitHeaders checks the headers of every configured limit on a
// success, in both formats.
func TestRateLimitHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits = Limits{RPM: 60, ITPM: 100000, OTPM: 20000, TPM: 90000}
		ts := startServer(t, cfg)
		defer ts.stop()
		r := ts.do(t, "POST", "/v1/messages", anthropicBody(1000, false, "hi"))
		want := map[string]string{
			"Anthropic-Ratelimit-Requests-Limit":          "60",
			"Anthropic-Ratelimit-Requests-Remaining":      "59",
			"Anthropic-Ratelimit-Requests-Reset":          "2000-01-01T00:00:01Z",
			"Anthropic-Ratelimit-Input-Tokens-Limit":      "100000",
			"Anthropic-Ratelimit-Input-Tokens-Remaining":  "100000", // 99999 rounded to the thousand
			"Anthropic-Ratelimit-Output-Tokens-Limit":     "20000",
			"Anthropic-Ratelimit-Output-Tokens-Remaining": "19000",
			"Anthropic-Ratelimit-Output-Tokens-Reset":     "2000-01-01T00:00:03Z",
			"Anthropic-Ratelimit-Tokens-Limit":            "90000",
			"Anthropic-Ratelimit-Tokens-Remaining":        "89000",
		}
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		r = ts.do(t, "POST", "/v1/chat/completions", openaiBody(1000, false, false, "hi"))
		want = map[string]string{
			"X-Ratelimit-Limit-Requests":     "60",
			"X-Ratelimit-Remaining-Requests": "58",
			"X-Ratelimit-Reset-Requests":     "2s",
			"X-Ratelimit-Limit-Tokens":       "90000",
			"X-Ratelimit-Remaining-Tokens":   "88000",
			"X-Ratelimit-Reset-Tokens":       "1.333s",
		}
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		if r.header.Get("X-Request-Id") == "" {
			t.Error("no x-request-id")
		}
	})
}

// TestHideLimitHeaders checks that hide_limit_headers enforces the limits
// without publishing them, on every response of both header families, and
// that a schedule entry can start publishing them mid-run.
func TestHideLimitHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits = Limits{RPM: 2, TPM: 90000, RetryAfter: time.Second, HideLimitHeaders: true}
		cfg.Schedule = []ScheduleEntry{{At: time.Minute, Limits: LimitsPatch{HideLimitHeaders: new(false)}}}
		ts := startServer(t, cfg)
		defer ts.stop()
		published := func(h http.Header) []string {
			var names []string
			for k := range h {
				if l := strings.ToLower(k); strings.HasPrefix(l, "anthropic-ratelimit-") || strings.HasPrefix(l, "x-ratelimit-") {
					names = append(names, k)
				}
			}
			return names
		}
		rs := []reply{
			ts.do(t, "POST", "/v1/messages", anthropicBody(10, false, "hi")),
			ts.do(t, "POST", "/v1/chat/completions", openaiBody(10, false, false, "hi")),
			ts.do(t, "POST", "/v1/messages", anthropicBody(10, false, "hi")),
		}
		for i, want := range []int{200, 200, 429} {
			r := rs[i]
			if r.status != want {
				t.Fatalf("request %d: status %d, want %d (the limit is enforced)", i, r.status, want)
			}
			if n := published(r.header); len(n) > 0 {
				t.Errorf("request %d (%d): rate-limit headers %v, want none", i, r.status, n)
			}
		}
		if got := rs[2].header.Get("Retry-After"); got == "" {
			t.Error("the 429 has no retry-after")
		}
		time.Sleep(2 * time.Minute)
		r := ts.do(t, "POST", "/v1/messages", anthropicBody(10, false, "hi"))
		if got := r.header.Get("Anthropic-Ratelimit-Requests-Limit"); r.status != 200 || got != "2" {
			t.Errorf("after the schedule: status %d, requests-limit %q, want 200 and 2", r.status, got)
		}
	})
}

// TestScheduleStartsAtFirstRequest checks that a Server created before a run,
// here outside the synctest bubble, counts its schedule from the first
// request.
func TestScheduleStartsAtFirstRequest(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Limits.RPM = 100
	cfg.Schedule = []ScheduleEntry{{At: time.Minute, Limits: LimitsPatch{RPM: new(7)}}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		ts := serveServer(s)
		defer ts.stop()
		time.Sleep(time.Hour) // before the first request: the clock has not started
		ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"))
		if got := ts.Limits().RPM; got != 100 {
			t.Errorf("rpm at the first request = %d, want 100", got)
		}
		time.Sleep(time.Minute)
		r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"))
		if got := r.header.Get("Anthropic-Ratelimit-Requests-Limit"); got != "7" {
			t.Errorf("requests-limit a minute after the first request = %q, want 7", got)
		}
	})
}

func TestITPMRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits.ITPM = 600 // 10 per second
		ts := startServer(t, cfg)
		defer ts.stop()
		prompt := strings.Repeat("abcd", 200) // 200 input tokens
		steps := []struct {
			wait       time.Duration
			wantStatus int
			wantRetry  string
		}{
			{0, 200, ""},
			{0, 200, ""},
			{0, 200, ""},
			{0, 429, "20"},               // empty: 200 tokens take 20s
			{19 * time.Second, 429, "1"}, // 190 there, 10 missing
			{time.Second, 200, ""},
		}
		for i, s := range steps {
			time.Sleep(s.wait)
			r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, prompt))
			if r.status != s.wantStatus || r.header.Get("Retry-After") != s.wantRetry {
				t.Errorf("step %d: status %d retry-after %q, want %d and %q", i, r.status, r.header.Get("Retry-After"), s.wantStatus, s.wantRetry)
			}
			if r.status == 429 && !strings.Contains(string(r.body), "itpm") {
				t.Errorf("step %d: 429 %s does not name itpm", i, r.body)
			}
		}
	})
}
