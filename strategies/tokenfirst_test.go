package strategies

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestBudget steps the token-first budget through reservations, grants,
// withdrawals and settlements at named instants: 1 token a second, a burst
// of 10.
func TestBudget(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	b := newBudget(t0, 60, 10)
	claims := map[string]*reservation{}
	steps := []struct {
		at   time.Duration
		op   string // reserve NAME N, withdraw NAME, settle NAME USED, admit
		name string
		n    float64

		wantGranted []string // by this step's admit, in order
		wantNext    time.Duration
		wantTokens  float64
	}{
		{at: 0, op: "reserve", name: "a", n: 4, wantGranted: []string{"a"}, wantTokens: 6},
		{at: 0, op: "reserve", name: "b", n: 8, wantNext: sec(2), wantTokens: 6},
		// c would fit, but b is first in line.
		{at: 0, op: "reserve", name: "c", n: 1, wantNext: sec(2), wantTokens: 6},
		{at: sec(1), op: "admit", wantNext: sec(1), wantTokens: 7},
		{at: sec(2), op: "admit", wantGranted: []string{"b"}, wantNext: sec(1), wantTokens: 0},
		// a used 1 of its 4: the 3 left go to c at once.
		{at: sec(2.5), op: "settle", name: "a", n: 1, wantGranted: []string{"c"}, wantTokens: 2.5},
		// b used 16 of its 8: the bucket is in debt.
		{at: sec(3), op: "settle", name: "b", n: 16, wantTokens: -5},
		{at: sec(3), op: "reserve", name: "d", n: 5, wantNext: sec(10), wantTokens: -5},
		{at: sec(3), op: "reserve", name: "e", n: 2, wantNext: sec(10), wantTokens: -5},
		// d gives up: e moves to the head of the line.
		{at: sec(4), op: "withdraw", name: "d", wantNext: sec(6), wantTokens: -4},
		{at: sec(10), op: "admit", wantGranted: []string{"e"}, wantTokens: 0},
		// e gives its granted tokens back.
		{at: sec(10), op: "withdraw", name: "e", wantTokens: 2},
		// The bucket holds at most the burst.
		{at: sec(100), op: "admit", wantTokens: 10},
		{at: sec(100), op: "settle", name: "c", n: 0, wantTokens: 10},
	}
	for i, st := range steps {
		now := t0.Add(st.at)
		switch st.op {
		case "reserve":
			r, err := b.reserve(now, int(st.n))
			if err != nil {
				t.Fatalf("step %d: reserve(%v): %v", i, st.n, err)
			}
			claims[st.name] = r
		case "withdraw":
			b.withdraw(now, claims[st.name])
		case "settle":
			b.settle(now, claims[st.name].n, st.n)
		}
		granted, next := b.admit(now)
		var names []string
		for _, r := range granted {
			for name, c := range claims {
				if c == r {
					names = append(names, name)
				}
			}
		}
		if !equal(names, st.wantGranted) || next != st.wantNext {
			t.Errorf("step %d (%s %s at t0+%v): granted %v, next %v; want %v, %v", i, st.op, st.name, st.at, names, next, st.wantGranted, st.wantNext)
		}
		if got := b.available(now); got != st.wantTokens {
			t.Errorf("step %d (%s %s at t0+%v): tokens %v, want %v", i, st.op, st.name, st.at, got, st.wantTokens)
		}
	}
	if _, err := b.reserve(t0, 11); !errors.Is(err, ErrExceedsBudget) {
		t.Errorf("reserve(11) with a burst of 10: error = %v, want ErrExceedsBudget", err)
	}
}

// TestSettledUsage is what Done charges a reservation of 100 tokens, by the
// call's last outcome.
func TestSettledUsage(t *testing.T) {
	tests := []struct {
		o    Outcome
		want float64
	}{
		{Outcome{Kind: Success, Usage: Usage{InputTokens: 30, OutputTokens: 12}}, 42},
		{Outcome{Kind: Success, Usage: Usage{InputTokens: 90, OutputTokens: 60}}, 150},
		// Anthropic's cache reads are reported apart and left out of its
		// limits; cache writes count.
		{Outcome{Kind: Success, Usage: Usage{InputTokens: 10, CacheReadInputTokens: 5000, OutputTokens: 20}}, 30},
		{Outcome{Kind: Success, Usage: Usage{InputTokens: 10, CacheCreationInputTokens: 50, OutputTokens: 20}}, 80},
		// OpenAI's cached tokens are part of input_tokens, and counted.
		{Outcome{Kind: Success, Usage: Usage{InputTokens: 2000, CacheReadInputTokens: 1024, OutputTokens: 20}}, 2020},
		{Outcome{Kind: Success}, 100},
		{Outcome{Kind: Throttled, Status: 429}, 0},
		{Outcome{Kind: Overloaded, Status: 529}, 0},
		{Outcome{Kind: Abandoned}, 0},
		{Outcome{Kind: Quota, Status: 429}, 0},
		{Outcome{Kind: Failed, Status: 500}, 100},
		{Outcome{Kind: Failed, Status: 200, Usage: Usage{InputTokens: 30, OutputTokens: 5}}, 35},
		{Outcome{Kind: Canceled}, 100},
	}
	for _, tt := range tests {
		if got := settledUsage(tt.o, 100); got != tt.want {
			t.Errorf("settledUsage(%v, usage %+v, 100) = %v, want %v", tt.o.Kind, tt.o.Usage, got, tt.want)
		}
	}
}

// TestTokenFirstSettles runs calls through a budget of 60 tokens a minute (1
// a second, a burst of 10) in virtual time: the first call reserves 10 and
// uses 2, so the second, which needs 10, starts as soon as the 8 unused
// tokens and 2 more seconds of refill are in, not after 10 s.
func TestTokenFirstSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewTokenFirst(TokenFirstConfig{TPM: 60, TokenBurst: 10})
		cost := Cost{InputTokens: 5, MaxTokens: 5}
		start := time.Now()
		var wg sync.WaitGroup
		var bStart time.Duration
		wg.Go(func() {
			Do(t.Context(), s, nil, cost, func(context.Context, int) Outcome {
				time.Sleep(time.Second)
				return Outcome{Kind: Success, Usage: Usage{InputTokens: 1, OutputTokens: 1}}
			})
		})
		synctest.Wait()
		wg.Go(func() {
			Do(t.Context(), s, nil, cost, func(context.Context, int) Outcome {
				bStart = time.Since(start)
				return ok200
			})
		})
		wg.Wait()
		if want := 2 * time.Second; bStart != want {
			t.Errorf("second call started at %v, want %v", bStart, want)
		}
		st := s.Stats()
		if st.WaitTokens != 2*time.Second || st.WaitSlot != 0 || st.Tokens != 0 {
			t.Errorf("Stats: waited %v for tokens, %v for slots, %v tokens left; want 2s, 0s, 0", st.WaitTokens, st.WaitSlot, st.Tokens)
		}
	})
}

// TestTokenFirstNoSlotWhileWaitingForTokens checks the point of tokens
// first: with one slot, a call waiting for budget leaves the slot free, and
// a call waiting for the slot already holds its tokens.
func TestTokenFirstNoSlotWhileWaitingForTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewTokenFirst(TokenFirstConfig{TPM: 60, TokenBurst: 10, MaxConcurrent: 1})
		big := Cost{InputTokens: 10}
		start := time.Now()
		var (
			mu     sync.Mutex
			starts = map[string]time.Duration{}
			wg     sync.WaitGroup
		)
		run := func(name string, c Cost, lat time.Duration, used int) {
			wg.Go(func() {
				Do(t.Context(), s, nil, c, func(context.Context, int) Outcome {
					mu.Lock()
					starts[name] = time.Since(start)
					mu.Unlock()
					time.Sleep(lat)
					return Outcome{Kind: Success, Usage: Usage{InputTokens: used}}
				})
			})
			synctest.Wait()
		}
		run("a", big, 3*time.Second, 10) // all the tokens, the slot for 3 s
		run("b", big, time.Second, 10)   // waits 10 s for tokens, holding no slot
		if st := s.Stats(); st.InFlight != 1 || st.Queued != 1 {
			t.Errorf("b waiting for tokens: in flight %d, queued %d; want 1, 1", st.InFlight, st.Queued)
		}
		time.Sleep(3 * time.Second) // a is done; b still waits for tokens
		synctest.Wait()
		if st := s.Stats(); st.InFlight != 0 || st.Queued != 1 {
			t.Errorf("at 3 s: in flight %d, queued %d; want 0, 1", st.InFlight, st.Queued)
		}
		wg.Wait()
		want := map[string]time.Duration{"a": 0, "b": 10 * time.Second}
		for name, w := range want {
			if starts[name] != w {
				t.Errorf("%s started at %v, want %v", name, starts[name], w)
			}
		}
	})
}

// TestTokenFirstSlotWait checks that a call holding tokens waits for a slot
// in line, and that its waits split into tokens and slot.
func TestTokenFirstSlotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewTokenFirst(TokenFirstConfig{TPM: 60, TokenBurst: 10, MaxConcurrent: 1})
		var wg sync.WaitGroup
		calls := make([]Call, 3)
		for i, c := range []Cost{{InputTokens: 8}, {InputTokens: 4}, {InputTokens: 1}} {
			wg.Go(func() {
				calls[i], _ = Do(t.Context(), s, nil, c, script(5*time.Second, nil, Outcome{Kind: Success, Usage: Usage{InputTokens: int(c.InputTokens)}}))
			})
			synctest.Wait()
		}
		wg.Wait()
		// t=0: a takes 8 tokens and the slot. b waits 2 s for tokens, then
		// for the slot until a ends at 5 s; c gets its token at 3 s, then
		// waits for the slot until b ends at 10 s.
		want := []Waits{{}, {Tokens: 2 * time.Second, Slot: 3 * time.Second}, {Tokens: 3 * time.Second, Slot: 7 * time.Second}}
		for i := range calls {
			if calls[i].Waits != want[i] {
				t.Errorf("call %d waits = %+v, want %+v", i, calls[i].Waits, want[i])
			}
		}
	})
}

// TestTokenFirstCancelReturnsTokens checks that a call giving up, while
// waiting for tokens or for a slot, returns what it reserved.
func TestTokenFirstCancelReturnsTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewTokenFirst(TokenFirstConfig{TPM: 60, TokenBurst: 10, MaxConcurrent: 1})
		p, _ := s.Acquire(t.Context(), Cost{InputTokens: 4})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		// Holds 5 tokens while waiting for the slot.
		if _, err := s.Acquire(ctx, Cost{InputTokens: 5}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire waiting for a slot: %v, want context.DeadlineExceeded", err)
		}
		if got := s.Stats().Tokens; got != 7 { // 10 - 4 + 1 s of refill
			t.Errorf("after giving up a slot wait: tokens %v, want 7", got)
		}
		ctx2, cancel2 := context.WithTimeout(t.Context(), time.Second)
		defer cancel2()
		if _, err := s.Acquire(ctx2, Cost{InputTokens: 10}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire waiting for tokens: %v, want context.DeadlineExceeded", err)
		}
		if got := s.Stats().Tokens; got != 8 {
			t.Errorf("after giving up a token wait: tokens %v, want 8", got)
		}
		p.Done(Outcome{Kind: Throttled, Status: 429}) // rejected: nothing used
		if st := s.Stats(); st.Tokens != 10 || st.WaitTokens != time.Second || st.WaitSlot != time.Second {
			t.Errorf("Stats = %+v, want 10 tokens, 1s waited for tokens and 1s for a slot", st)
		}
	})
}

// TestTokenFirstObserveCharges checks that an attempt inside the permit that
// reports usage is charged on top of the reservation.
func TestTokenFirstObserveCharges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewTokenFirst(TokenFirstConfig{TPM: 60, TokenBurst: 100})
		p, _ := s.Acquire(t.Context(), Cost{InputTokens: 20, MaxTokens: 20})
		p.Observe(Outcome{Kind: Failed, Status: 500})                                                 // no usage: nothing
		p.Observe(Outcome{Kind: Throttled, Status: 429})                                              // rejected: nothing
		p.Observe(Outcome{Kind: Failed, Status: 200, Usage: Usage{InputTokens: 20, OutputTokens: 5}}) // cut mid-way: 25
		if got := s.Stats().Tokens; got != 35 {
			t.Errorf("after the observed attempts: tokens %v, want 35", got)
		}
		p.Done(Outcome{Kind: Success, Usage: Usage{InputTokens: 20, OutputTokens: 10}})
		if got := s.Stats().Tokens; got != 45 {
			t.Errorf("after settling to 30 of 40: tokens %v, want 45", got)
		}
	})
}
