package mock

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// A bucket with a burst of 1 s at 60 a minute holds one token: it admits
// one at once, then one a second, and never saves up more than one.
func TestBucketBurstSteps(t *testing.T) {
	b := newBucket(60, time.Second, t0)
	steps := []struct {
		now      time.Time
		op       string // take, resize
		n        float64
		wantWait time.Duration // wait(now, 1) after the op
		wantLvl  float64
	}{
		{at(0), "", 0, 0, 1},
		{at(0), "take", 1, time.Second, 0},
		{at(500 * time.Millisecond), "", 0, 500 * time.Millisecond, 0.5},
		{at(time.Second), "take", 1, time.Second, 0},
		{at(10 * time.Second), "", 0, 0, 1}, // 9 s idle saves up one, not nine
		// Back to a minute's burst: the level stays, the capacity grows.
		{at(10 * time.Second), "resize", 0, 0, 1},
		{at(20 * time.Second), "", 0, 0, 11},
		// 10 s of burst at 60/min holds 10: the level is capped.
		{at(20 * time.Second), "resize", 10 * float64(time.Second), 0, 10},
	}
	for i, s := range steps {
		switch s.op {
		case "take":
			b.take(s.now, s.n)
		case "resize":
			b.resize(s.now, 60, time.Duration(s.n))
		}
		if got := b.wait(s.now, 1); got != s.wantWait {
			t.Errorf("step %d (%s at %v): wait(1) = %v, want %v", i, s.op, s.now.Sub(t0), got, s.wantWait)
		}
		if got := b.tokens(s.now); got != s.wantLvl {
			t.Errorf("step %d (%s at %v): tokens = %v, want %v", i, s.op, s.now.Sub(t0), got, s.wantLvl)
		}
	}
}

// TestKeyLimiterBurst replays admissions at named instants under a burst of
// 1 s, for requests (rpm 60: one a second) and input tokens (itpm 6000:
// 100 a second), including a request larger than the burst: it is admitted
// on a full bucket and the next one waits for its whole cost to refill.
func TestKeyLimiterBurst(t *testing.T) {
	steps := []struct {
		limits     Limits
		now        time.Duration
		input      int
		wantLimit  string // "" admitted
		wantRetry  time.Duration
		wantWait   time.Duration
		wantLarger bool
	}{
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 0},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 0, wantLimit: wire.LimitRPM, wantRetry: time.Second, wantWait: time.Second},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: time.Second},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 1500 * time.Millisecond, wantLimit: wire.LimitRPM, wantRetry: time.Second, wantWait: 500 * time.Millisecond},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 2 * time.Second},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 30 * time.Second},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 30 * time.Second, wantLimit: wire.LimitRPM, wantRetry: time.Second, wantWait: time.Second},
		// The same key without a burst saves up a minute again: from 31 s
		// on the bucket refills towards 60.
		{limits: Limits{RPM: 60}, now: 31 * time.Second},
		{limits: Limits{RPM: 60}, now: 41 * time.Second},
		{limits: Limits{RPM: 60}, now: 41 * time.Second},
	}
	k := newKeyLimiter()
	for i, s := range steps {
		v := k.admit(at(s.now), s.limits, uint64(i+1), demand{input: s.input, maxTokens: 1, end: at(s.now)})
		k.release(at(s.now), uint64(i+1), 1, 1)
		if v.ok != (s.wantLimit == "") || v.limit != s.wantLimit || v.retryAfter != s.wantRetry || v.wait != s.wantWait || v.tooLarge != s.wantLarger {
			t.Errorf("step %d at %v: admit = ok %v limit %q retry %v wait %v tooLarge %v; want limit %q retry %v wait %v tooLarge %v",
				i, s.now, v.ok, v.limit, v.retryAfter, v.wait, v.tooLarge, s.wantLimit, s.wantRetry, s.wantWait, s.wantLarger)
		}
	}

	l := Limits{ITPM: 6000, Burst: time.Second} // 100 input tokens a second, 100 at once
	tokens := []struct {
		now        time.Duration
		input      int
		wantLimit  string
		wantWait   time.Duration
		wantLarger bool
	}{
		{0, 300, "", 0, false}, // larger than the burst, on a full bucket: admitted, 200 owed
		{time.Second, 50, wire.LimitITPM, 1500 * time.Millisecond, false},     // at -100 now: 150 to refill
		{2500 * time.Millisecond, 50, "", 0, false},                           // 50 left, 50 taken
		{2500 * time.Millisecond, 6001, wire.LimitITPM, time.Second, true},    // above the per-minute limit: never
		{3 * time.Second, 150, wire.LimitITPM, 500 * time.Millisecond, false}, // 50 held: waits for a full bucket
		{3500 * time.Millisecond, 150, "", 0, false},
	}
	k = newKeyLimiter()
	for i, s := range tokens {
		v := k.admit(at(s.now), l, uint64(i+1), demand{input: s.input, maxTokens: 1, end: at(s.now)})
		k.release(at(s.now), uint64(i+1), 1, 1)
		if v.ok != (s.wantLimit == "") || v.limit != s.wantLimit || v.wait != s.wantWait || v.tooLarge != s.wantLarger {
			t.Errorf("tokens step %d at %v (input %d): admit = ok %v limit %q wait %v tooLarge %v; want limit %q wait %v tooLarge %v",
				i, s.now, s.input, v.ok, v.limit, v.wait, v.tooLarge, s.wantLimit, s.wantWait, s.wantLarger)
		}
	}
}

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
