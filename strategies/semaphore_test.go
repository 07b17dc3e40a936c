package strategies

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestSlots steps a slots semaphore through acquires, releases and limit
// changes, checking after each step which waiters hold a slot.
func TestSlots(t *testing.T) {
	type step struct {
		op      string // "acquire" (a new waiter), "release", "limit", "cancel"
		arg     int    // the limit for "limit", the waiter for "cancel"
		holding []bool // by waiter, after the step
		used    int
		waiting int
	}
	tests := []struct {
		name  string
		limit int
		steps []step
	}{
		{"limit 2", 2, []step{
			{op: "acquire", holding: []bool{true}, used: 1},
			{op: "acquire", holding: []bool{true, true}, used: 2},
			{op: "acquire", holding: []bool{true, true, false}, used: 2, waiting: 1},
			{op: "acquire", holding: []bool{true, true, false, false}, used: 2, waiting: 2},
			{op: "release", holding: []bool{true, true, true, false}, used: 2, waiting: 1},
			{op: "release", holding: []bool{true, true, true, true}, used: 2},
		}},
		{"raising the limit admits waiters in order", 1, []step{
			{op: "acquire", holding: []bool{true}, used: 1},
			{op: "acquire", holding: []bool{true, false}, used: 1, waiting: 1},
			{op: "acquire", holding: []bool{true, false, false}, used: 1, waiting: 2},
			{op: "acquire", holding: []bool{true, false, false, false}, used: 1, waiting: 3},
			{op: "limit", arg: 3, holding: []bool{true, true, true, false}, used: 3, waiting: 1},
		}},
		{"lowering the limit holds waiters back", 3, []step{
			{op: "acquire", holding: []bool{true}, used: 1},
			{op: "acquire", holding: []bool{true, true}, used: 2},
			{op: "limit", arg: 1, holding: []bool{true, true}, used: 2},
			{op: "acquire", holding: []bool{true, true, false}, used: 2, waiting: 1},
			{op: "release", holding: []bool{true, true, false}, used: 1, waiting: 1},
			{op: "release", holding: []bool{true, true, true}, used: 1},
		}},
		{"a canceled waiter leaves the line", 1, []step{
			{op: "acquire", holding: []bool{true}, used: 1},
			{op: "acquire", holding: []bool{true, false}, used: 1, waiting: 1},
			{op: "acquire", holding: []bool{true, false, false}, used: 1, waiting: 2},
			{op: "cancel", arg: 1, holding: []bool{true, false, false}, used: 1, waiting: 1},
			{op: "release", holding: []bool{true, false, true}, used: 1},
		}},
		{"zero limit is unlimited", 0, []step{
			{op: "acquire", holding: []bool{true}, used: 1},
			{op: "acquire", holding: []bool{true, true}, used: 2},
			{op: "acquire", holding: []bool{true, true, true}, used: 3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSlots(tt.limit)
				var (
					mu      sync.Mutex
					holding []bool
					cancels []context.CancelFunc
				)
				for i, st := range tt.steps {
					switch st.op {
					case "acquire":
						ctx, cancel := context.WithCancel(t.Context())
						defer cancel()
						cancels = append(cancels, cancel)
						mu.Lock()
						holding = append(holding, false)
						w := len(holding) - 1
						mu.Unlock()
						go func() {
							if err := s.acquire(ctx); err == nil {
								mu.Lock()
								holding[w] = true
								mu.Unlock()
							}
						}()
					case "release":
						s.release()
					case "limit":
						s.setLimit(st.arg)
					case "cancel":
						cancels[st.arg]()
					}
					synctest.Wait()
					mu.Lock()
					got := append([]bool(nil), holding...)
					mu.Unlock()
					_, used, waiting := s.state()
					if !equal(got, st.holding) || used != st.used || waiting != st.waiting {
						t.Errorf("step %d (%s): holding %v, used %d, waiting %d; want %v, %d, %d",
							i, st.op, got, used, waiting, st.holding, st.used, st.waiting)
					}
				}
				for range tt.steps { // let the blocked waiters go
					s.setLimit(0)
				}
			})
		})
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSemaphoreSeedTable reproduces the guide's Semaphore rows in virtual
// time: 200 calls of 500 ms through Semaphore(N) take ceil(200/N)·0.5 s,
// with never more than N in flight and calls admitted in arrival order:
// call i starts in round floor(i/N).
func TestSemaphoreSeedTable(t *testing.T) {
	tests := []struct {
		max         int
		wantElapsed time.Duration
	}{
		{10, 10 * time.Second},
		{20, 5 * time.Second},
		{50, 2 * time.Second},
		{64, 2 * time.Second},
	}
	for _, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			s := NewSemaphore(SemaphoreConfig{Max: tt.max})
			start := time.Now()
			var (
				mu                  sync.Mutex
				inFlight, maxFlight int
				starts              [200]time.Duration
				wg                  sync.WaitGroup
			)
			for i := range 200 {
				wg.Go(func() {
					Do(t.Context(), s, nil, Cost{}, func(context.Context, int) Outcome {
						mu.Lock()
						inFlight++
						maxFlight = max(maxFlight, inFlight)
						starts[i] = time.Since(start)
						mu.Unlock()
						time.Sleep(500 * time.Millisecond)
						mu.Lock()
						inFlight--
						mu.Unlock()
						return ok200
					})
				})
				synctest.Wait() // arrival order = index order
			}
			wg.Wait()
			if got := time.Since(start); got != tt.wantElapsed {
				t.Errorf("Semaphore(%d): 200 calls took %v, want %v", tt.max, got, tt.wantElapsed)
			}
			if maxFlight != tt.max {
				t.Errorf("Semaphore(%d): max in flight %d, want %d", tt.max, maxFlight, tt.max)
			}
			for i, got := range starts {
				if want := time.Duration(i/tt.max) * 500 * time.Millisecond; got != want {
					t.Errorf("Semaphore(%d): call %d started at %v, want %v", tt.max, i, got, want)
					break
				}
			}
			st := s.Stats()
			if st.Limit != float64(tt.max) || st.Permits != 200 || st.Successes != 200 || st.InFlight != 0 {
				t.Errorf("Semaphore(%d): Stats = %+v", tt.max, st)
			}
			// Call k waits floor(k/N) rounds of 500 ms.
			var wantWait time.Duration
			for k := range 200 {
				wantWait += time.Duration(k/tt.max) * 500 * time.Millisecond
			}
			if st.WaitSlot != wantWait {
				t.Errorf("Semaphore(%d): WaitSlot = %v, want %v", tt.max, st.WaitSlot, wantWait)
			}
		})
	}
}

// TestSemaphoreConfig checks the documented zero value.
func TestSemaphoreConfig(t *testing.T) {
	for _, tt := range []struct{ max, want int }{{-1, 1}, {0, 1}, {1, 1}, {20, 20}} {
		if got := NewSemaphore(SemaphoreConfig{Max: tt.max}).Stats().Limit; got != float64(tt.want) {
			t.Errorf("NewSemaphore(Max: %d): Limit = %v, want %d", tt.max, got, tt.want)
		}
	}
}
