package strategies

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

var (
	ok200 = Outcome{Kind: Success, Status: 200}
	// throttled1s is a 429 with retry-after: 1.
	throttled1s = Outcome{Kind: Throttled, Status: 429, RetryAfter: time.Second, HasRetryAfter: true}
)

// script returns an attempt func that returns outs[n] (the last one from
// then on) after latency, and records the attempt numbers it saw.
func script(latency time.Duration, seen *[]int, outs ...Outcome) func(context.Context, int) Outcome {
	return func(ctx context.Context, n int) Outcome {
		if seen != nil {
			*seen = append(*seen, n)
		}
		time.Sleep(latency)
		return outs[min(n, len(outs)-1)]
	}
}

// TestDo runs single calls in virtual time and checks their exact duration,
// attempts, waits and the strategy's counters.
func TestDo(t *testing.T) {
	const lat = 100 * time.Millisecond
	tests := []struct {
		name         string
		policy       *RetryPolicy
		outs         []Outcome
		wantAttempts int
		wantKind     Kind
		wantElapsed  time.Duration
		wantWaits    Waits
		wantPermits  int64
	}{
		{
			name:   "429 retry-after 1 s twice, then success, in slot",
			policy: &RetryPolicy{MaxRetries: 2}, outs: []Outcome{throttled1s, throttled1s, ok200},
			wantAttempts: 3, wantKind: Success, wantElapsed: 3*lat + 2*time.Second,
			wantWaits: Waits{RetryAfter: 2 * time.Second}, wantPermits: 1,
		},
		{
			name:   "429 retry-after 1 s twice, then success, requeue",
			policy: &RetryPolicy{MaxRetries: 2, Requeue: true}, outs: []Outcome{throttled1s, throttled1s, ok200},
			wantAttempts: 3, wantKind: Success, wantElapsed: 3*lat + 2*time.Second,
			wantWaits: Waits{RetryAfter: 2 * time.Second}, wantPermits: 3,
		},
		{
			name:   "retries used up",
			policy: &RetryPolicy{MaxRetries: 2}, outs: []Outcome{throttled1s},
			wantAttempts: 3, wantKind: Throttled, wantElapsed: 3*lat + 2*time.Second,
			wantWaits: Waits{RetryAfter: 2 * time.Second}, wantPermits: 1,
		},
		{
			name:   "no retries",
			policy: &RetryPolicy{}, outs: []Outcome{throttled1s},
			wantAttempts: 1, wantKind: Throttled, wantElapsed: lat, wantPermits: 1,
		},
		{
			name:   "nil policy",
			policy: nil, outs: []Outcome{throttled1s},
			wantAttempts: 1, wantKind: Throttled, wantElapsed: lat, wantPermits: 1,
		},
		{
			name:   "not retryable",
			policy: &RetryPolicy{MaxRetries: 2}, outs: []Outcome{{Kind: Failed, Status: 400}, ok200},
			wantAttempts: 1, wantKind: Failed, wantElapsed: lat, wantPermits: 1,
		},
		{
			name:   "retry-after 0 retries at once",
			policy: &RetryPolicy{MaxRetries: 2}, outs: []Outcome{{Kind: Overloaded, Status: 529, HasRetryAfter: true}, ok200},
			wantAttempts: 2, wantKind: Success, wantElapsed: 2 * lat, wantPermits: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewSemaphore(SemaphoreConfig{Max: 1})
				var seen []int
				start := time.Now()
				call, err := Do(t.Context(), s, tt.policy, Cost{}, script(lat, &seen, tt.outs...))
				if err != nil {
					t.Fatalf("Do: %v", err)
				}
				if got := time.Since(start); got != tt.wantElapsed {
					t.Errorf("elapsed %v, want %v", got, tt.wantElapsed)
				}
				if call.Attempts != tt.wantAttempts || call.Outcome.Kind != tt.wantKind || call.Waits != tt.wantWaits {
					t.Errorf("Call = %d attempts, last %v, waits %+v; want %d, %v, %+v",
						call.Attempts, call.Outcome.Kind, call.Waits, tt.wantAttempts, tt.wantKind, tt.wantWaits)
				}
				for i, n := range seen {
					if n != i {
						t.Errorf("attempt %d was passed n = %d", i, n)
					}
				}
				st := s.Stats()
				if st.Permits != tt.wantPermits || st.Attempts != int64(tt.wantAttempts) || st.InFlight != 0 {
					t.Errorf("Stats: permits %d, attempts %d, in flight %d; want %d, %d, 0", st.Permits, st.Attempts, st.InFlight, tt.wantPermits, tt.wantAttempts)
				}
			})
		})
	}
}

// TestDoBackoff checks that without a server delay Do sleeps the SDKs'
// jittered backoff, and reports it as Waits.Backoff.
func TestDoBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewUnbounded()
		start := time.Now()
		call, err := Do(t.Context(), s, &RetryPolicy{MaxRetries: 2, Seed: 42}, Cost{},
			script(0, nil, Outcome{Kind: Failed, Status: 500}, Outcome{Kind: Failed, Err: errors.New("reset")}, ok200))
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		elapsed := time.Since(start)
		lo, hi := 375*time.Millisecond+750*time.Millisecond, 1500*time.Millisecond
		if elapsed <= lo || elapsed > hi {
			t.Errorf("elapsed %v, want in (%v, %v]", elapsed, lo, hi)
		}
		if call.Waits != (Waits{Backoff: elapsed}) || call.Attempts != 3 {
			t.Errorf("Call = %d attempts, waits %+v; want 3, {Backoff: %v}", call.Attempts, call.Waits, elapsed)
		}
	})
}

// TestDoRequeueReleasesSlot runs two calls through a Semaphore(1): A is
// throttled with retry-after 1 s once, B arrives while A's first attempt
// runs. In slot, A keeps the slot through its wait and B runs after A; with
// Requeue, B takes the slot during A's wait, and A's retry waits for B.
func TestDoRequeueReleasesSlot(t *testing.T) {
	const lat = 500 * time.Millisecond
	tests := []struct {
		requeue                bool
		wantBStart, wantAEnd   time.Duration
		wantAWaits, wantBWaits Waits
	}{
		{
			requeue:    false,
			wantBStart: lat + time.Second + lat, wantAEnd: 2*lat + time.Second,
			wantAWaits: Waits{RetryAfter: time.Second},
			wantBWaits: Waits{Slot: 2*lat + time.Second - 100*time.Millisecond},
		},
		{
			requeue:    true,
			wantBStart: lat, wantAEnd: lat + time.Second + lat,
			wantAWaits: Waits{RetryAfter: time.Second},
			wantBWaits: Waits{Slot: lat - 100*time.Millisecond},
		},
	}
	for _, tt := range tests {
		name := "in slot"
		if tt.requeue {
			name = "requeue"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewSemaphore(SemaphoreConfig{Max: 1})
				p := &RetryPolicy{MaxRetries: 2, Requeue: tt.requeue}
				start := time.Now()
				var (
					wg         sync.WaitGroup
					bStart     time.Duration
					aEnd       time.Duration
					aCall, bCl Call
				)
				wg.Go(func() {
					aCall, _ = Do(t.Context(), s, p, Cost{}, script(lat, nil, throttled1s, ok200))
					aEnd = time.Since(start)
				})
				wg.Go(func() {
					time.Sleep(100 * time.Millisecond)
					bCl, _ = Do(t.Context(), s, p, Cost{}, func(context.Context, int) Outcome {
						bStart = time.Since(start)
						time.Sleep(lat)
						return ok200
					})
				})
				wg.Wait()
				if bStart != tt.wantBStart || aEnd != tt.wantAEnd {
					t.Errorf("B started at %v, A ended at %v; want %v, %v", bStart, aEnd, tt.wantBStart, tt.wantAEnd)
				}
				if aCall.Waits != tt.wantAWaits || bCl.Waits != tt.wantBWaits {
					t.Errorf("waits: A %+v, B %+v; want %+v, %+v", aCall.Waits, bCl.Waits, tt.wantAWaits, tt.wantBWaits)
				}
			})
		})
	}
}

// TestDoRequeueWaitsForSlot checks the other half of requeue: A's retry,
// due while B holds the only slot, waits for it and reports that as
// Waits.Slot.
func TestDoRequeueWaitsForSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSemaphore(SemaphoreConfig{Max: 1})
		p := &RetryPolicy{MaxRetries: 2, Requeue: true}
		var wg sync.WaitGroup
		var a Call
		wg.Go(func() {
			a, _ = Do(t.Context(), s, p, Cost{}, script(100*time.Millisecond, nil, throttled1s, ok200))
		})
		wg.Go(func() {
			time.Sleep(200 * time.Millisecond) // A is in its retry-after wait
			Do(t.Context(), s, p, Cost{}, script(3*time.Second, nil, ok200))
		})
		wg.Wait()
		// A's retry is due at 1.1 s; B holds the slot from 0.2 s to 3.2 s.
		want := Waits{RetryAfter: time.Second, Slot: 2100 * time.Millisecond}
		if a.Waits != want {
			t.Errorf("A's waits = %+v, want %+v", a.Waits, want)
		}
	})
}

// TestDoCancel checks how a call ends when its context does, at each point.
func TestDoCancel(t *testing.T) {
	t.Run("during an in-slot wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := NewSemaphore(SemaphoreConfig{Max: 1})
			ctx, cancel := context.WithTimeout(t.Context(), 600*time.Millisecond)
			defer cancel()
			call, err := Do(ctx, s, &RetryPolicy{MaxRetries: 2}, Cost{}, script(100*time.Millisecond, nil, throttled1s))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Do error = %v, want context.DeadlineExceeded", err)
			}
			if call.Attempts != 1 || call.Outcome.Kind != Throttled || call.Waits != (Waits{RetryAfter: 500 * time.Millisecond}) {
				t.Errorf("Call = %+v, want 1 attempt, throttled, 500ms of retry-after", call)
			}
			st := s.Stats()
			if st.InFlight != 0 || st.Permits != 1 || st.Attempts != 1 || st.Throttles != 1 || st.Cancels != 1 {
				t.Errorf("Stats = %+v, want nothing in flight, 1 permit, 1 attempt, 1 throttle, 1 cancel", st)
			}
		})
	})
	t.Run("during a requeue wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := NewSemaphore(SemaphoreConfig{Max: 1})
			ctx, cancel := context.WithTimeout(t.Context(), 600*time.Millisecond)
			defer cancel()
			call, err := Do(ctx, s, &RetryPolicy{MaxRetries: 2, Requeue: true}, Cost{}, script(100*time.Millisecond, nil, throttled1s))
			if !errors.Is(err, context.DeadlineExceeded) || call.Attempts != 1 {
				t.Errorf("Do = (%d attempts, %v), want (1, context.DeadlineExceeded)", call.Attempts, err)
			}
			if st := s.Stats(); st.InFlight != 0 || st.Permits != 1 || st.Cancels != 0 {
				t.Errorf("Stats = %+v, want nothing in flight, 1 permit, 0 cancels", st)
			}
		})
	})
	t.Run("during the attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := NewUnbounded()
			ctx, cancel := context.WithCancel(t.Context())
			call, err := Do(ctx, s, &RetryPolicy{MaxRetries: 2}, Cost{}, func(context.Context, int) Outcome {
				cancel()
				return throttled1s // retryable, but the caller is gone
			})
			if !errors.Is(err, context.Canceled) || call.Attempts != 1 {
				t.Errorf("Do = (%d attempts, %v), want (1, context.Canceled)", call.Attempts, err)
			}
			if st := s.Stats(); st.InFlight != 0 || st.Throttles != 1 {
				t.Errorf("Stats = %+v, want nothing in flight, 1 throttle", st)
			}
		})
	})
	t.Run("while acquiring", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := NewSemaphore(SemaphoreConfig{Max: 1})
			p, _ := s.Acquire(t.Context(), Cost{})
			defer p.Done(ok200)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			call, err := Do(ctx, s, &RetryPolicy{MaxRetries: 2}, Cost{}, script(0, nil, ok200))
			if !errors.Is(err, context.DeadlineExceeded) || call.Attempts != 0 || call.Waits != (Waits{Slot: time.Second}) {
				t.Errorf("Do = (%+v, %v), want no attempt, 1s of slot wait, context.DeadlineExceeded", call, err)
			}
		})
	})
}

// TestDoPanic checks that a panicking attempt releases its permit and the
// panic reaches Do's caller.
func TestDoPanic(t *testing.T) {
	s := NewSemaphore(SemaphoreConfig{Max: 1})
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want boom", r)
			}
		}()
		Do(context.Background(), s, nil, Cost{}, func(context.Context, int) Outcome { panic("boom") })
	}()
	if st := s.Stats(); st.InFlight != 0 || st.Errors != 1 {
		t.Errorf("after a panic: in flight %d, errors %d; want 0, 1", st.InFlight, st.Errors)
	}
}

// BenchmarkDo measures the overhead of a call that is admitted at once,
// per strategy.
func BenchmarkDo(b *testing.B) {
	strategies := []struct {
		name string
		s    Strategy
	}{
		{"unbounded", NewUnbounded()},
		{"semaphore", NewSemaphore(SemaphoreConfig{Max: 1 << 20})},
		{"per-provider", NewPerProvider(PerProviderConfig{Default: 1 << 20})},
		{"token-bucket", NewTokenBucket(TokenBucketConfig{RPM: 1e12, TPM: 1e15, RequestBurst: 1 << 30, TokenBurst: 1 << 40})},
		{"token-first", NewTokenFirst(TokenFirstConfig{TPM: 1e15, TokenBurst: 1 << 40, MaxConcurrent: 1 << 20})},
	}
	attempt := func(context.Context, int) Outcome { return ok200 }
	c := Cost{Provider: "anthropic", Key: "k", InputTokens: 100, MaxTokens: 100}
	for _, bm := range strategies {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					Do(context.Background(), bm.s, nil, c, attempt)
				}
			})
		})
	}
}
