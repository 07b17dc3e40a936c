package strategies

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestGate(t *testing.T) {
	const s = time.Second
	type step struct {
		at, until  time.Duration // close at stepT0+at until stepT0+until; until 0: only check
		wantMoved  bool
		wantWait   time.Duration
		wantOpened bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"zero value is open", []step{{at: 0, wantWait: 0}}},
		{"closed until, then open once", []step{
			{at: 0, until: 2 * s, wantMoved: true, wantWait: 2 * s},
			{at: s, wantWait: s},
			{at: 2 * s, wantWait: 0, wantOpened: true},
			{at: 3 * s, wantWait: 0},
		}},
		{"a later close extends, an earlier one does not shorten", []step{
			{at: 0, until: 2 * s, wantMoved: true, wantWait: 2 * s},
			{at: s, until: 4 * s, wantMoved: true, wantWait: 3 * s},
			{at: 2 * s, until: 3 * s, wantMoved: false, wantWait: 2 * s},
			{at: 4 * s, wantOpened: true},
		}},
		{"a time in the past does not close it", []step{
			{at: 5 * s, until: 4 * s, wantMoved: false, wantWait: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g gate
			for i, st := range tt.steps {
				now := stepT0.Add(st.at)
				if st.until != 0 {
					if got := g.close(now, stepT0.Add(st.until)); got != st.wantMoved {
						t.Errorf("step %d: close(t0+%v, t0+%v) = %v, want %v", i, st.at, st.until, got, st.wantMoved)
					}
				}
				if got := g.wait(now); got != st.wantWait {
					t.Errorf("step %d: wait(t0+%v) = %v, want %v", i, st.at, got, st.wantWait)
				}
				if got := g.reopened(now); got != st.wantOpened {
					t.Errorf("step %d: reopened(t0+%v) = %v, want %v", i, st.at, got, st.wantOpened)
				}
			}
		})
	}
}

// TestAdaptiveGate checks, in virtual time, that while a key's retry-after
// gate is closed no attempt of that key is dispatched, however many callers
// wait; that the waiting is reported as Waits.RetryAfter; and that another
// key is not held up. The throttle says a per-minute budget is spent (its
// headers show no tokens remaining), which the window cannot answer, and the
// calls give no token cost, so the copy of the budget cannot pace them: the
// gate closes for the server's delay of 2 s (not until the reset, a minute
// away, when the bucket is full again).
func TestAdaptiveGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []Event
		var evMu sync.Mutex
		a := NewAdaptive(AdaptiveConfig{Initial: 8}, WithObserver(func(e Event) {
			evMu.Lock()
			events = append(events, e)
			evMu.Unlock()
		}))
		keyA := Cost{Provider: "anthropic", Key: Fingerprint("a")}
		keyB := Cost{Provider: "anthropic", Key: Fingerprint("b")}

		// Two of A's calls in flight; one is refused with retry-after 2 s.
		p1, _ := a.Acquire(t.Context(), keyA)
		p2, _ := a.Acquire(t.Context(), keyA)
		start := time.Now()
		p1.Done(Outcome{Kind: Throttled, Status: 429, RetryAfter: 2 * time.Second, HasRetryAfter: true,
			Limits: Limits{Tokens: Limit{Limit: 100000, Remaining: 0, Reset: start.Add(time.Minute)}}})

		var (
			mu         sync.Mutex
			dispatched []time.Duration
			waits      []Waits
			wg         sync.WaitGroup
		)
		for range 20 {
			wg.Go(func() {
				p, err := a.Acquire(t.Context(), keyA)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				dispatched = append(dispatched, time.Since(start))
				waits = append(waits, p.(WaitReporter).Waited())
				mu.Unlock()
				time.Sleep(500 * time.Millisecond)
				p.Done(Outcome{Kind: Success, Status: 200, Latency: 500 * time.Millisecond})
			})
		}
		// Key B is not gated.
		pb, err := a.Acquire(t.Context(), keyB)
		if err != nil || time.Since(start) != 0 {
			t.Errorf("Acquire for another key: %v after %v, want at once", err, time.Since(start))
		}
		pb.Done(Outcome{Kind: Success, Status: 200})

		synctest.Wait()
		if st := a.Stats(); st.Queued != 20 {
			t.Errorf("while the gate is closed: queued = %d, want 20", st.Queued)
		}
		time.Sleep(time.Second)
		p2.Done(Outcome{Kind: Success, Status: 200})
		wg.Wait()

		if len(dispatched) != 20 {
			t.Fatalf("%d dispatched, want 20", len(dispatched))
		}
		for i, d := range dispatched {
			if d < 2*time.Second {
				t.Errorf("attempt %d dispatched %v after the throttle, while the 2 s gate was closed", i, d)
			}
		}
		if w := waits[0]; w.RetryAfter != 2*time.Second {
			t.Errorf("first caller's waits = %+v, want RetryAfter 2s", w)
		}
		if st := a.Stats(); st.WaitRetryAfter < 20*2*time.Second {
			t.Errorf("Stats.WaitRetryAfter = %v, want at least 20 × 2s", st.WaitRetryAfter)
		}

		var closes, opens int
		for _, e := range events {
			switch e.Type {
			case EventGateClose:
				closes++
				if want := start.Add(2 * time.Second); !e.Until.Equal(want) {
					t.Errorf("gate_close until %v, want %v", e.Until, want)
				}
			case EventGateOpen:
				opens++
			}
		}
		if closes != 1 || opens != 1 {
			t.Errorf("%d gate_close and %d gate_open events, want 1 and 1", closes, opens)
		}
	})
}

// TestAdaptiveWindowAnswersConcurrencyThrottle checks, in virtual time, that
// a 429 refusing a call while the server holds others of ours closes no gate:
// the window shrinks to what the server held, so the callers waiting go one
// at a time as slots free, not after the server's delay.
func TestAdaptiveWindowAnswersConcurrencyThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []Event
		a := NewAdaptive(AdaptiveConfig{Initial: 3}, WithObserver(func(e Event) { events = append(events, e) }))
		key := Cost{Provider: "anthropic", Key: Fingerprint("a")}
		start := time.Now()
		var held []Permit
		for range 3 {
			p, err := a.Acquire(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, p)
		}
		// The third is refused at once while the server holds the other two.
		held[2].Done(Outcome{Kind: Throttled, Status: 429, RetryAfter: 2 * time.Second, HasRetryAfter: true})
		if got, want := a.State(key.Provider, key.Key).Limit, 2; got != want {
			t.Errorf("learned limit %d, want %d", got, want)
		}
		var (
			mu         sync.Mutex
			dispatched []time.Duration
			wg         sync.WaitGroup
		)
		for range 2 {
			wg.Go(func() {
				p, err := a.Acquire(t.Context(), key)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				dispatched = append(dispatched, time.Since(start))
				mu.Unlock()
				p.Done(Outcome{Kind: Success, Status: 200, Latency: 500 * time.Millisecond})
			})
		}
		// The window (0.9 × 2, so 1) is full until one of the two ends at
		// 500 ms; then the waiting callers go, long before 2 s.
		time.Sleep(500 * time.Millisecond)
		held[0].Done(Outcome{Kind: Success, Status: 200, Latency: 500 * time.Millisecond})
		held[1].Done(Outcome{Kind: Success, Status: 200, Latency: 500 * time.Millisecond})
		wg.Wait()
		for i, d := range dispatched {
			if d != 500*time.Millisecond {
				t.Errorf("waiting caller %d dispatched %v after the throttle, want 500ms (when a slot freed)", i, d)
			}
		}
		for _, e := range events {
			if e.Type == EventGateClose {
				t.Errorf("event %+v: the gate closed for a throttle the window answers", e)
			}
		}
		if st := a.Stats(); st.WaitRetryAfter != 0 {
			t.Errorf("Stats.WaitRetryAfter = %v, want 0", st.WaitRetryAfter)
		}
	})
}

// TestAIMDDelayCooldownHoldsDispatches checks, in virtual time, that no
// dispatch goes during the cooldown after a throttle.
func TestAIMDDelayCooldownHoldsDispatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := NewAIMDDelay(AIMDDelayConfig{Initial: time.Second})
		start := time.Now()
		p, _ := a.Acquire(t.Context(), Cost{})
		p.Done(Outcome{Kind: Throttled, Status: 429})
		var got []time.Duration
		for range 3 {
			p, err := a.Acquire(context.Background(), Cost{})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, time.Since(start))
			p.Done(Outcome{Kind: Success, Status: 200})
		}
		want := []time.Duration{10 * time.Second, 11800 * time.Millisecond, 13600 * time.Millisecond}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("dispatch %d at %v, want %v", i+1, got[i], want[i])
			}
		}
		// 1 s ·1.8 on the throttle, then ·0.9 after the three successes.
		if st := a.Stats(); st.Delay != 1.62 {
			t.Errorf("Stats.Delay = %v, want 1.62", st.Delay)
		}
	})
}
