package mock

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// TestCallsGuideUnbounded is the guide's "gather, no limit, retries=2" row
// seen from the server: 200 distinct items sent at once against 20 slots,
// each retried twice after its retry-after, are 200 calls of which 60
// complete, in 540 attempts and 480 429s: 180, 160 and 140 on the first,
// second and third attempts. It holds whether or not the client sends
// X-Stainless-Retry-Count: the bodies alone group the attempts.
func TestCallsGuideUnbounded(t *testing.T) {
	for _, headers := range []bool{true, false} {
		t.Run(fmt.Sprintf("retry-count-header=%v", headers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Limits = Limits{MaxConcurrent: 20, RetryAfter: time.Second}
				ts := startServer(t, cfg)
				defer ts.stop()
				start := time.Now()
				fanOut(t, 200, 0, func(i int) (reply, error) {
					var r reply
					var err error
					for attempt := range 3 {
						var h []string
						if headers {
							h = []string{"X-Stainless-Retry-Count", strconv.Itoa(attempt)}
						}
						r, err = ts.send("POST", "/v1/messages", anthropicBody(100, false, fmt.Sprintf("Classify ticket %d.", i)), h...)
						if err != nil || r.status != 429 {
							return r, err
						}
						ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
						time.Sleep(time.Duration(ra) * time.Second)
					}
					return r, nil
				})
				c := ts.Calls()
				got := fmt.Sprintf("calls %d, completed %d, failed %d, attempts %d, 429s %d %v by attempt %v, early %d, max attempts %d",
					c.Calls, c.Completed, c.Failed, c.Attempts, c.Throttled, c.ThrottledBy, c.ThrottledByAttempt, c.EarlyRetries, c.MaxAttempts)
				want := "calls 200, completed 60, failed 140, attempts 540, 429s 480 map[max_concurrent:480] by attempt [180 160 140], early 0, max attempts 3"
				if got != want {
					t.Errorf("Calls:\n got %s\nwant %s", got, want)
				}
				if c.PeakConcurrency < 20 || c.InFlight != 0 {
					t.Errorf("peak concurrency %d, in flight %d; want at least 20, 0", c.PeakConcurrency, c.InFlight)
				}
				// The last success ends at 2.5 s: the third wave's 500 ms call.
				if got, want := c.Last.Sub(start), 2500*time.Millisecond; got != want {
					t.Errorf("last response at %v, want %v", got, want)
				}
				if c.Seconds != 2.5 || c.AttemptsPerCall != 9 {
					t.Errorf("seconds %v, attempts/call %v; want 2.5, 9", c.Seconds, c.AttemptsPerCall)
				}
				if c.Latency.Count != 540 || c.Latency.Max != 0.5 {
					t.Errorf("latency count %d max %v, want 540, 0.5", c.Latency.Count, c.Latency.Max)
				}
				// Timeline: 20 in flight through each wave; every completion
				// and 429 in some interval.
				tl := c.Timeline
				if tl.ResolutionSeconds != 0.1 || len(tl.Points) != 26 {
					t.Fatalf("timeline resolution %v with %d points, want 0.1 and 26", tl.ResolutionSeconds, len(tl.Points))
				}
				var done, throttled float64
				for _, p := range tl.Points {
					done += p.CompletionsRate * tl.ResolutionSeconds
					throttled += p.ThrottlesRate * tl.ResolutionSeconds
				}
				if int(done+0.5) != 60 || int(throttled+0.5) != 480 {
					t.Errorf("timeline totals: %v completions, %v 429s; want 60, 480", done, throttled)
				}
				if p := tl.Points[2]; p.InFlight != 20 {
					t.Errorf("in flight at 0.3 s = %d, want 20", p.InFlight)
				}
				if p := tl.Points[len(tl.Points)-1]; p.InFlight != 0 {
					t.Errorf("in flight at the end = %d, want 0", p.InFlight)
				}
			})
		})
	}
}

// TestCallGrouping replays attempts at named instants straight into a
// callLog and checks how they are grouped, including identical bodies.
func TestCallGrouping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newCallLog()
		type step struct {
			at      time.Duration // since t0
			body    string
			headers []string
			status  int
			ra      time.Duration
			wantN   int // attempt number within its call
		}
		steps := []step{
			{0, "a", nil, 429, 2 * time.Second, 1},                                      // call 1
			{0, "a", []string{"X-Stainless-Retry-Count", "0"}, 429, time.Second, 1},     // an SDK's first attempt: call 2, though call 1 is open
			{time.Second, "a", nil, 200, 0, 2},                                          // joins call 1 (the oldest open): early, its gate is 2s
			{time.Second, "a", []string{"X-Stainless-Retry-Count", "1"}, 200, 0, 2},     // joins call 2, on time
			{time.Second, "a", nil, 429, time.Second, 1},                                // call 1 succeeded: a new call 3
			{2 * time.Second, "b", []string{"Idempotency-Key", "k1"}, 500, 0, 1},        // call 4
			{2 * time.Second, "c", []string{"Idempotency-Key", "k1"}, 200, 0, 2},        // same key, other body: call 4's retry
			{2 * time.Second, "b", nil, 200, 0, 1},                                      // no key: call 5
			{3 * time.Second, "a", []string{"X-Stainless-Retry-Count", "2"}, 200, 0, 2}, // call 3's retry, on time
		}
		t0 := time.Now()
		for i, s := range steps {
			time.Sleep(time.Until(t0.Add(s.at)))
			req := httptest.NewRequest("POST", "/v1/messages", nil)
			for j := 0; j+1 < len(s.headers); j += 2 {
				req.Header.Set(s.headers[j], s.headers[j+1])
			}
			var a callAttempt
			l.arrive(&a, req, anthropic.Format{}, "k", []byte(s.body))
			if a.n != s.wantN {
				t.Errorf("step %d: attempt number %d, want %d", i, a.n, s.wantN)
			}
			l.end(&a, s.status, wire.LimitConcurrency, s.ra)
		}
		c := l.snapshot()
		if c.Calls != 5 || c.Completed != 5 || c.Failed != 0 || c.Attempts != 9 || c.EarlyRetries != 1 {
			t.Errorf("calls %d completed %d failed %d attempts %d early %d; want 5, 5, 0, 9, 1",
				c.Calls, c.Completed, c.Failed, c.Attempts, c.EarlyRetries)
		}
		if c.ServerErrors != 1 || c.Throttled != 3 || !reflect.DeepEqual(c.ThrottledByAttempt, []int64{3}) {
			t.Errorf("5xx %d, 429s %d by attempt %v; want 1, 3, [3]", c.ServerErrors, c.Throttled, c.ThrottledByAttempt)
		}
		if got := l.earlyOf("k"); got != 1 {
			t.Errorf("early retries of key k = %d, want 1", got)
		}
	})
}

// TestCallsConcurrentIdentical: identical requests in flight at once are
// distinct calls, since a retry follows the end of its previous attempt.
func TestCallsConcurrentIdentical(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newCallLog()
		as := make([]callAttempt, 3)
		for i := range as {
			l.arrive(&as[i], httptest.NewRequest("POST", "/v1/messages", nil), anthropic.Format{}, "", []byte("same"))
		}
		for i := range as {
			l.end(&as[i], 200, "", 0)
		}
		if c := l.snapshot(); c.Calls != 3 || c.PeakConcurrency != 3 || c.Completed != 3 {
			t.Errorf("calls %d, peak %d, completed %d; want 3, 3, 3", c.Calls, c.PeakConcurrency, c.Completed)
		}
	})
}

// TestCallsBoundedMemory: failed calls beyond MaxOpenCalls are forgotten,
// still counted as failed, and the timeline coarsens instead of growing.
func TestCallsBoundedMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newCallLog()
		n := MaxOpenCalls + 10
		for i := range n {
			var a callAttempt
			l.arrive(&a, httptest.NewRequest("POST", "/v1/messages", nil), anthropic.Format{}, "", []byte(strconv.Itoa(i)))
			l.end(&a, 429, wire.LimitRPM, time.Second)
		}
		if l.cur.openCalls > MaxOpenCalls {
			t.Errorf("%d open calls remembered, want at most %d", l.cur.openCalls, MaxOpenCalls)
		}
		if c := l.snapshot(); c.Calls != int64(n) || c.Failed != int64(n) {
			t.Errorf("calls %d failed %d, want %d, %d", c.Calls, c.Failed, n, n)
		}
		// An hour of one attempt a second: 36,000 intervals of 100 ms fit
		// in MaxCallPoints only at 1.6 s.
		for range 3600 {
			time.Sleep(time.Second)
			var a callAttempt
			l.arrive(&a, httptest.NewRequest("POST", "/v1/messages", nil), anthropic.Format{}, "", []byte("x"))
			l.end(&a, 200, "", 0)
		}
		c := l.snapshot()
		if len(c.Timeline.Points) > MaxCallPoints || c.Timeline.ResolutionSeconds != 1.6 {
			t.Errorf("timeline: %d points at %vs, want at most %d at 1.6s", len(c.Timeline.Points), c.Timeline.ResolutionSeconds, MaxCallPoints)
		}
		var done float64
		for _, p := range c.Timeline.Points {
			done += p.CompletionsRate * c.Timeline.ResolutionSeconds
		}
		if int(done+0.5) != 3600 {
			t.Errorf("timeline completions = %v, want 3600", done)
		}
	})
}

// TestCallsReset: Reset starts a new account; an attempt in flight across
// it ends uncounted.
func TestCallsReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		ts := startServer(t, cfg)
		defer ts.stop()
		done := make(chan struct{})
		go func() {
			defer close(done)
			ts.send("POST", "/v1/messages", anthropicBody(100, false, "long")) // 500 ms
		}()
		time.Sleep(100 * time.Millisecond)
		ts.Reset()
		<-done
		if c := ts.Calls(); c.Attempts != 0 || c.InFlight != 0 || c.Completed != 0 {
			t.Errorf("after reset: attempts %d, in flight %d, completed %d; want 0, 0, 0", c.Attempts, c.InFlight, c.Completed)
		}
		ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "short"))
		if c := ts.Calls(); c.Attempts != 1 || c.Completed != 1 {
			t.Errorf("then one call: attempts %d, completed %d; want 1, 1", c.Attempts, c.Completed)
		}
	})
}

// TestAdminStatsCalls: /_admin/stats serves the call accounting.
func TestAdminStatsCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, DefaultConfig())
		defer ts.stop()
		ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "x"))
		var st struct {
			Calls struct {
				Calls     int64 `json:"calls"`
				Completed int64 `json:"completed"`
				Timeline  struct {
					Points []map[string]float64 `json:"points"`
				} `json:"timeline"`
			} `json:"calls"`
		}
		r := ts.do(t, "GET", "/_admin/stats", "")
		if err := json.Unmarshal(r.body, &st); err != nil {
			t.Fatal(err)
		}
		if st.Calls.Calls != 1 || st.Calls.Completed != 1 || len(st.Calls.Timeline.Points) == 0 {
			t.Errorf("/_admin/stats calls = %+v, want 1 call completed and a timeline", st.Calls)
		}
	})
}

// BenchmarkCallLogAttempt is the accounting's cost for one attempt (arrive
// and end, a 200-byte body, distinct bodies as a scenario's items are),
// run from 2 goroutines so that the lock is contended as on the server.
// Compare with the mock's time per request in BenchmarkJSONThroughput.
func BenchmarkCallLogAttempt(b *testing.B) {
	l := newCallLog()
	req := httptest.NewRequest("POST", "/v1/messages", nil)
	req.Header.Set("X-Stainless-Retry-Count", "0")
	b.ReportAllocs()
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		body := []byte(`{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"Classify ticket 0000000000. Classify it as billing, bug, feature or other; answer in one word."}]}`)
		i := 0
		for pb.Next() {
			i++
			copy(body[95:105], strconv.Itoa(1_000_000_000+i))
			var a callAttempt
			l.arrive(&a, req, anthropic.Format{}, "key", body)
			status := 200
			if i%4 == 0 {
				status = 429
			}
			l.end(&a, status, wire.LimitConcurrency, time.Second)
		}
	})
}

// TestCallsAttemptIndexBounded: a call retried without end does not grow
// ThrottledByAttempt beyond MaxAttemptIndex.
func TestCallsAttemptIndexBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newCallLog()
		for range MaxAttemptIndex + 50 {
			var a callAttempt
			l.arrive(&a, httptest.NewRequest("POST", "/v1/messages", nil), anthropic.Format{}, "", []byte("same"))
			l.end(&a, 429, wire.LimitRPM, 0)
		}
		c := l.snapshot()
		if len(c.ThrottledByAttempt) != MaxAttemptIndex || c.ThrottledByAttempt[MaxAttemptIndex-1] != 51 || c.MaxAttempts != MaxAttemptIndex+50 {
			t.Errorf("by attempt: %d entries, last %d, max attempts %d; want %d, 51, %d",
				len(c.ThrottledByAttempt), c.ThrottledByAttempt[len(c.ThrottledByAttempt)-1], c.MaxAttempts, MaxAttemptIndex, MaxAttemptIndex+50)
		}
	})
}
