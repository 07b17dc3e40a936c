package mock

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// cardClient is a test client's retry rule: how long item i waits after a
// refusal given ra, which statuses it retries, and how many times.
type cardClient struct {
	wait    func(ra time.Duration, i int) time.Duration
	retryIf func(status int) bool
	retries int
}

// call sends item i's request until it succeeds or the client gives up.
func (cl cardClient) call(ts *testServer, i int, body string) (reply, error) {
	retryIf := cl.retryIf
	if retryIf == nil {
		retryIf = func(status int) bool { return status == 429 }
	}
	for n := 0; ; n++ {
		r, err := ts.send("POST", "/v1/messages", body)
		if err != nil || r.status == 200 || !retryIf(r.status) || n == cl.retries {
			return r, err
		}
		ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
		time.Sleep(cl.wait(time.Duration(ra)*time.Second, i))
	}
}

// honour waits exactly the retry-after.
func honour(ra time.Duration, _ int) time.Duration { return ra }

// TestReportCardRetries runs four calls 1 ms apart against two slots of
// 0.5 s calls (retry-after 1 s) with three clients and checks the report
// card's exact counts. The first two calls are admitted; the third and
// fourth arrive with the cap in flight (over the limit, by one) and are
// refused. The client that honours the retry-after exactly brings both
// back 1 ms apart, at 1.002 and 1.003 s: one wave of two. The jittered one
// (50 ms more per item) spreads them. The one that ignores the retry-after and retries every
// 100 ms is refused four more times per call (each early, each over the
// cap), in five waves of two, before the slots free at 0.5 s: six
// attempts per refused call.
func TestReportCardRetries(t *testing.T) {
	for _, tc := range []struct {
		name string
		cl   cardClient
		want ReportCard
	}{
		{"honours retry-after, no jitter", cardClient{wait: honour, retries: 10}, ReportCard{
			Retries: 2, RetryWaves: 1, SynchronizedRetries: 2, MaxRetryWave: 2,
			RefusedCalls: 2, RefusedCallAttempts: 4, RetryAmplification: 2,
			// in flight: 1 for 1 ms, 2 to 0.5 s, 1 for 1 ms, 0 to 1.002 s, 1 for 1 ms
			CapSlotSeconds: 2 * 1.003, IdleSlotSeconds: 0.001 + 0.001 + 2*0.501 + 0.001,
			Capped: true, OverLimit: 2, PeakOverLimit: 1,
		}},
		{"honours retry-after, jittered", cardClient{wait: func(ra time.Duration, i int) time.Duration { return ra + time.Duration(50*i)*time.Millisecond }, retries: 10}, ReportCard{
			Retries: 2, MaxRetryWave: 1,
			RefusedCalls: 2, RefusedCallAttempts: 4, RetryAmplification: 2,
			// the retries at 1.102 and 1.153 s
			CapSlotSeconds: 2 * 1.153, IdleSlotSeconds: 0.001 + 0.001 + 2*0.601 + 0.051,
			Capped: true, OverLimit: 2, PeakOverLimit: 1,
		}},
		{"ignores retry-after", cardClient{wait: func(time.Duration, int) time.Duration { return 100 * time.Millisecond }, retries: 10}, ReportCard{
			Retries: 10, RetryWaves: 5, SynchronizedRetries: 10, MaxRetryWave: 2,
			RefusedCalls: 2, RefusedCallAttempts: 12, RetryAmplification: 6,
			// in flight: 1 for 1 ms, 2 to 0.5 s, 1, 0, 1 for 1 ms each; the last arrival at 0.503 s
			CapSlotSeconds: 2 * 0.503, IdleSlotSeconds: 0.001 + 0.001 + 0.002 + 0.001,
			Capped: true, OverLimit: 10, PeakOverLimit: 1,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Limits = Limits{MaxConcurrent: 2, RetryAfter: time.Second}
				ts := startServer(t, cfg)
				defer ts.stop()
				fanOut(t, 4, 0, func(i int) (reply, error) {
					time.Sleep(time.Duration(i) * time.Millisecond)
					return tc.cl.call(ts, i, anthropicBody(100, false, fmt.Sprintf("ticket %d", i)))
				})
				c := ts.Calls()
				if c.Completed != 4 {
					t.Fatalf("completed %d of 4", c.Completed)
				}
				wantEarly := int64(0)
				if tc.name == "ignores retry-after" {
					wantEarly = 10
				}
				if c.EarlyRetries != wantEarly {
					t.Errorf("early retries %d, want %d", c.EarlyRetries, wantEarly)
				}
				checkCard(t, c.Card, tc.want)
			})
		})
	}
}

// checkCard compares two report cards, the slot-seconds to a nanosecond's
// rounding.
func checkCard(t *testing.T, got, want ReportCard) {
	t.Helper()
	if want.CapSlotSeconds > 0 {
		want.IdleCapacity = want.IdleSlotSeconds / want.CapSlotSeconds
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if near(got.CapSlotSeconds, want.CapSlotSeconds) && near(got.IdleSlotSeconds, want.IdleSlotSeconds) && near(got.IdleCapacity, want.IdleCapacity) {
		got.CapSlotSeconds, got.IdleSlotSeconds, got.IdleCapacity = want.CapSlotSeconds, want.IdleSlotSeconds, want.IdleCapacity
	}
	if got != want {
		t.Errorf("report card:\n got %+v\nwant %+v", got, want)
	}
}

// TestReportCardBadRetries: a client that retries a spent quota's 429 and
// a 400 twice each is counted for both; one that gives up on them is not.
// The quota allows one request: the first call succeeds, the second is
// refused for the quota, the third sends a body that is not JSON.
func TestReportCardBadRetries(t *testing.T) {
	for _, retry := range []bool{true, false} {
		t.Run(fmt.Sprintf("retries=%v", retry), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Quota = Quota{Requests: 1}
				ts := startServer(t, cfg)
				defer ts.stop()
				// A second between retries: one at a time, no wave.
				cl := cardClient{wait: func(time.Duration, int) time.Duration { return time.Second }, retryIf: func(int) bool { return retry }, retries: 2}
				var statuses []int
				for _, body := range []string{anthropicBody(10, false, "a"), anthropicBody(10, false, "b"), `{"model": `} {
					r, err := cl.call(ts, 0, body)
					if err != nil {
						t.Fatal(err)
					}
					statuses = append(statuses, r.status)
				}
				if fmt.Sprint(statuses) != "[200 429 400]" {
					t.Fatalf("statuses %v, want [200 429 400]", statuses)
				}
				c := ts.Calls()
				want := ReportCard{}
				if retry {
					want = ReportCard{Retries: 4, RetriesAfterQuota: 2, RetriesAfterClientError: 2, MaxRetryWave: 1}
				}
				// One key, no concurrency cap: no idle capacity, never over.
				checkCard(t, c.Card, want)
				if c.Calls != 3 || c.Attempts != 3+want.Retries {
					t.Errorf("calls %d, attempts %d; want 3, %d", c.Calls, c.Attempts, 3+want.Retries)
				}
			})
		})
	}
}

// TestReportCardIdle: eight 0.5 s calls against a cap of 4, two at a time,
// leave half the cap idle until the last call is sent at 1.5 s (4 × 1.5
// slot-seconds of cap, 2 × 1.5 idle); four at a time leave none. With the
// cap lowered to 2 at 1 s by a schedule, two at a time leave 2 of 5 idle:
// the cap is integrated as the server applies it.
func TestReportCardIdle(t *testing.T) {
	two := 2
	for _, tc := range []struct {
		name      string
		sem       int
		schedule  []ScheduleEntry
		cap, idle float64
	}{
		{"two at a time", 2, nil, 4 * 1.5, 2 * 1.5},
		{"four at a time", 4, nil, 4 * 0.5, 0},
		{"two at a time, cap 2 from 1 s", 2, []ScheduleEntry{{At: time.Second, Limits: LimitsPatch{MaxConcurrent: &two}}}, 4*1 + 2*0.5, 2 * 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Limits = Limits{MaxConcurrent: 4, RetryAfter: time.Second}
				cfg.Schedule = tc.schedule
				ts := startServer(t, cfg)
				defer ts.stop()
				fanOut(t, 8, tc.sem, func(i int) (reply, error) {
					return ts.send("POST", "/v1/messages", anthropicBody(100, false, fmt.Sprintf("ticket %d", i)))
				})
				c := ts.Calls()
				if c.Completed != 8 || c.Throttled != 0 {
					t.Fatalf("completed %d, throttled %d; want 8, 0", c.Completed, c.Throttled)
				}
				checkCard(t, c.Card, ReportCard{Capped: true, CapSlotSeconds: tc.cap, IdleSlotSeconds: tc.idle})
			})
		})
	}
}

// TestReportCardFollowsTheCapThatApplied holds idle capacity and the
// figures over the cap to the concurrency cap that applied to each
// request: a model pool's, a long-context one's, the organization's that
// every key shares, and the key's as a schedule changes it. Each stream
// sends its calls one after the other (0.5 s each when admitted, none
// retried); why is each case's hand computation, with the figures the
// server's max_concurrent alone would give (what the card measured before
// it followed each request's caps).
func TestReportCardFollowsTheCapThatApplied(t *testing.T) {
	type stream struct {
		key  string
		n    int
		long bool
	}
	streams := func(n, calls int, keys ...string) []stream {
		var out []stream
		for i := range n {
			key := "k"
			if len(keys) > 0 {
				key = keys[i%len(keys)]
			}
			out = append(out, stream{key: key, n: calls})
		}
		return out
	}
	sonnet := map[string]Limits{"claude-sonnet-*": {MaxConcurrent: 2}}
	one := 1
	for _, tc := range []struct {
		name    string
		cfg     func(*Config)
		streams []stream
		want    ReportCard
		why     string
	}{
		{"model pool's cap", func(c *Config) {
			c.Limits.MaxConcurrent = 10
			c.LimitsByModel = sonnet
		}, streams(2, 4), ReportCard{Capped: true, CapSlotSeconds: 2 * 1.5},
			"the sonnet pool's 2 bind, not the key's 10: 2 in flight to the last arrival at 1.5 s, none idle (the key's 10 alone: 12 of 15 slot-seconds idle)"},
		{"over the model pool's cap", func(c *Config) {
			c.Limits.MaxConcurrent = 10
			c.LimitsByModel = sonnet
		}, streams(3, 1), ReportCard{Capped: true, OverLimit: 1, PeakOverLimit: 1, RefusedCalls: 1, RefusedCallAttempts: 1, RetryAmplification: 1},
			"three at once against the pool's 2: the third is over it, by one, and refused (the key's 10 alone: none over)"},
		{"key's cap falls below the pool's", func(c *Config) {
			c.Limits.MaxConcurrent = 4
			c.LimitsByModel = sonnet
			c.Schedule = []ScheduleEntry{{At: time.Second, Limits: LimitsPatch{MaxConcurrent: &one}}}
		}, streams(1, 6), ReportCard{Capped: true, CapSlotSeconds: 2*0.5 + 1*1.5, IdleSlotSeconds: 1 * 0.5},
			"the pool's 2 bind the calls at 0 and 0.5 s (1 of 2 idle for 0.5 s), the key's 1 from 1 s those at 1 to 2.5 s (none idle)"},
		{"organization's cap shared by three keys", func(c *Config) {
			c.APIKeys = []string{"ka", "kb", "kc"}
			c.Limits.MaxConcurrent = 2
			c.Organization = Organization{Limits: Limits{MaxConcurrent: 3}}
		}, streams(3, 2, "ka", "kb", "kc"), ReportCard{Capped: true, CapSlotSeconds: 3 * 0.5},
			"once two keys have sent, the organization's 3 bind (1.5 a key, below each key's 2): 3 in flight to the last arrivals at 0.5 s (the keys' 2 alone: 3 of 6 slot-seconds idle)"},
		{"long-context cap", func(c *Config) {
			c.Limits.MaxConcurrent = 10
			c.LongContext = LongContext{ThresholdTokens: 1000, Limits: Limits{MaxConcurrent: 1}}
		}, []stream{{key: "k", n: 2, long: true}, {key: "k", n: 2, long: true}}, ReportCard{
			Capped: true, CapSlotSeconds: 1 * 0.5, OverLimit: 2, PeakOverLimit: 1, RefusedCalls: 2, RefusedCallAttempts: 2, RetryAmplification: 1},
			"the long-context 1 binds: one stream's calls run at 0 and 0.5 s, the other's two arrive at 0 over it and are refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Limits.RetryAfter = time.Second
				tc.cfg(&cfg)
				ts := startServer(t, cfg)
				defer ts.stop()
				var wg sync.WaitGroup
				for si, st := range tc.streams {
					wg.Go(func() {
						for i := range st.n {
							text := fmt.Sprintf("stream %d call %d", si, i)
							if st.long {
								text += strings.Repeat(" word", 2000) // above 1,000 input tokens
							}
							if _, err := ts.send("POST", "/v1/messages", anthropicBody(100, false, text), "x-api-key", st.key); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				if t.Failed() {
					return
				}
				c := ts.Calls()
				if c.Errors != 0 {
					t.Fatalf("%d attempts failed other than by a limit", c.Errors)
				}
				t.Log(tc.why)
				checkCard(t, c.Card, tc.want)
			})
		})
	}
}
