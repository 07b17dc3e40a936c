package engine

import (
	"context"
	"github.com/ratelab/ratelab/internal/fakeclient"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// TestAgain: with Config.Again, an item throttled past its retries is made
// again as a new call after the server's delay, and its one Result counts
// every round's attempts and the time waited; without it, or when Again
// says no, the throttled Result is delivered as it is.
func TestAgain(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		again                func(Result) bool
		wantKind             strategies.Kind
		wantAttempts, wantAg int64
	}{
		{"again", func(Result) bool { return true }, strategies.Success, 4, 1},
		{"no again", nil, strategies.Throttled, 2, 0},
		{"again says no", func(Result) bool { return false }, strategies.Throttled, 2, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &fakeclient.Client{RetryAfter: 3 * time.Second, Fail: func(_ string, k int) (int, string) {
					if k < 3 {
						return 429, "rate_limit_error"
					}
					return 0, ""
				}}
				var asked atomic.Int64
				var got []Result
				cfg := Config{
					Client: c, Strategy: strategies.NewUnbounded(), Resolution: -1,
					Retry:    &strategies.RetryPolicy{MaxRetries: 1, Requeue: true},
					OnResult: func(r Result) { got = append(got, r) },
				}
				if tt.again != nil {
					cfg.Again = func(r Result) bool {
						asked.Add(1)
						if r.Kind != strategies.Throttled || r.Attempts != 2 {
							t.Errorf("Again asked about kind %v after %d attempts, want throttled after 2", r.Kind, r.Attempts)
						}
						return tt.again(r)
					}
				}
				start := time.Now()
				sum, err := Run(context.Background(), cfg, Slice([]Item{{Index: 0, ID: "a", Request: testRequest("p")}}))
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || sum.Completed+sum.Failed != 1 {
					t.Fatalf("%d results, summary %d completed %d failed; want one result", len(got), sum.Completed, sum.Failed)
				}
				r := got[0]
				if r.Kind != tt.wantKind || int64(r.Attempts) != tt.wantAttempts || asked.Load() != tt.wantAg {
					t.Errorf("kind %v, attempts %d, Again asked %d; want %v, %d, %d", r.Kind, r.Attempts, asked.Load(), tt.wantKind, tt.wantAttempts, tt.wantAg)
				}
				// Every wait is the server's 3 s: one retry in the first
				// call, then, with Again, the wait between the rounds and
				// the retry in the second call.
				want := time.Duration(tt.wantAttempts-1) * 3 * time.Second
				if r.Timings.WaitRetryAfter != want || time.Since(start) != want || !r.Timings.Start.Equal(start) {
					t.Errorf("waited %v for retry-after, took %v, started %v after the run; want %v, %v, 0", r.Timings.WaitRetryAfter, time.Since(start), r.Timings.Start.Sub(start), want, want)
				}
			})
		})
	}
}

// TestAgainStops: an item waiting between rounds when the run stops is not
// finished, and Again is not asked once it is stopping.
func TestAgainStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &fakeclient.Client{RetryAfter: time.Minute, Fail: func(string, int) (int, string) { return 429, "rate_limit_error" }}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var asked atomic.Int64
		cfg := Config{
			Client: c, Strategy: strategies.NewUnbounded(), Resolution: -1,
			Again:    func(Result) bool { asked.Add(1); return true },
			OnResult: func(r Result) { t.Errorf("result delivered: %+v", r) },
		}
		sum, err := Run(ctx, cfg, Slice([]Item{{Index: 0, Request: testRequest("p")}}))
		if err != context.DeadlineExceeded {
			t.Errorf("Run: %v, want context.DeadlineExceeded", err)
		}
		if asked.Load() != 2 || c.Calls.Load() != 2 || sum.Canceled != 1 || !sum.Incomplete {
			t.Errorf("asked %d, calls %d, canceled %d, incomplete %v; want 2, 2, 1, true", asked.Load(), c.Calls.Load(), sum.Canceled, sum.Incomplete)
		}
	})
}

// testRequest is a request whose prompt is p.
func testRequest(p string) provider.Request {
	return provider.Request{Model: "m", MaxTokens: 10, Messages: []provider.Message{{Role: "user", Content: p}}}
}
