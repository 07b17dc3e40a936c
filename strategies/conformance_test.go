package strategies

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

// conformanceCase is one strategy under the conformance suite, which every
// strategy of the package must pass.
type conformanceCase struct {
	name string
	// new returns a fresh strategy with opts applied. The suite acquires with
	// conformanceCost, which the strategy must be able to admit.
	new func(opts ...Option) Strategy
	// gate: a throttled attempt with a server delay closes a retry-after gate
	// shared by every caller of the strategy (for conformanceCost), so no
	// Acquire returns before the delay is over.
	gate bool
}

// conformanceCost is the cost of every call the suite makes.
var conformanceCost = Cost{Provider: "anthropic", Key: "key-1", InputTokens: 50, MaxTokens: 50}

// conformanceStrategies lists every strategy of the package: the core ones
// and the adaptive ones.
func conformanceStrategies() []conformanceCase {
	return append(coreStrategies(), adaptiveStrategies()...)
}

func TestConformance(t *testing.T) {
	for _, tc := range conformanceStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			t.Run("cancel while waiting", func(t *testing.T) { testCancelWhileWaiting(t, tc) })
			t.Run("canceled context", func(t *testing.T) { testCanceledContext(t, tc) })
			t.Run("accounting in slot", func(t *testing.T) { testAccounting(t, tc, false) })
			t.Run("accounting requeue", func(t *testing.T) { testAccounting(t, tc, true) })
			t.Run("done twice panics", func(t *testing.T) { testDoneTwice(t, tc) })
			t.Run("quota fails fast in slot", func(t *testing.T) { testQuota(t, tc, false) })
			t.Run("quota fails fast requeue", func(t *testing.T) { testQuota(t, tc, true) })
			if tc.gate {
				t.Run("retry-after gate", func(t *testing.T) { testGate(t, tc) })
			}
		})
	}
}

// quotaRefusal is a refusal for a spent quota, dressed as a rate limit could
// be: a 429 with a retry-after, x-should-retry: true and every rate-limit
// dimension at 0.
var quotaRefusal = Outcome{Kind: Quota, Status: 429, RetryAfter: 30 * time.Second, HasRetryAfter: true,
	ShouldRetry: ptr(true), Limits: Limits{
		Requests: Limit{Limit: 60, Remaining: 0, Reset: time.Date(2000, 1, 1, 0, 1, 0, 0, time.UTC)},
		Tokens:   Limit{Limit: 1000, Remaining: 0, Reset: time.Date(2000, 1, 1, 0, 1, 0, 0, time.UTC)},
	}}

// testQuota makes calls whose attempt is refused for a spent quota, with
// retries allowed: each must end after that one attempt, at once (no
// retry, no backoff, no retry-after wait), count as Quota, and leave the
// strategy's limit, delay and rate as they were, with the next Acquire
// admitted at once (no gate, no cooldown, no decrease).
func testQuota(t *testing.T, tc conformanceCase, requeue bool) {
	synctest.Test(t, func(t *testing.T) {
		s := tc.new()
		// Warm up with a success, so a strategy pacing dispatches has
		// dispatched once.
		if _, err := Do(t.Context(), s, nil, conformanceCost, func(context.Context, int) Outcome {
			return Outcome{Kind: Success, Status: 200, Latency: time.Millisecond}
		}); err != nil {
			t.Fatal(err)
		}
		before := s.Stats()
		p := &RetryPolicy{MaxRetries: 10, Requeue: requeue, Seed: 1}
		for i := range 3 {
			start := time.Now()
			call, err := Do(t.Context(), s, p, conformanceCost, func(context.Context, int) Outcome { return quotaRefusal })
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			if call.Attempts != 1 || call.Outcome.Kind != Quota {
				t.Errorf("call %d: %d attempts ending %v, want 1 ending quota", i, call.Attempts, call.Outcome.Kind)
			}
			if w := call.Waits; w.Backoff != 0 || w.RetryAfter != 0 {
				t.Errorf("call %d: waited %+v between attempts, want nothing", i, w)
			}
			// At most the strategy's own pacing between dispatches.
			if d, pace := time.Since(start), time.Duration(before.Delay*float64(time.Second)); d > pace {
				t.Errorf("call %d took %v, want at most the pacing delay %v", i, d, pace)
			}
		}
		after := s.Stats()
		if after.Quota != 3 || after.Throttles != before.Throttles || after.Errors != before.Errors {
			t.Errorf("Stats: quota %d, throttles %d, errors %d; want 3, %d, %d",
				after.Quota, after.Throttles, after.Errors, before.Throttles, before.Errors)
		}
		if after.Limit != before.Limit || after.Delay != before.Delay || after.Rate != before.Rate {
			t.Errorf("Stats after quota refusals: limit %v, delay %v, rate %v; want %v, %v, %v as before",
				after.Limit, after.Delay, after.Rate, before.Limit, before.Delay, before.Rate)
		}
		if after.WaitRetryAfter != before.WaitRetryAfter {
			t.Errorf("Stats.WaitRetryAfter = %v after quota refusals, want %v: no gate closes", after.WaitRetryAfter, before.WaitRetryAfter)
		}
	})
}

type acquired struct {
	p   Permit
	err error
}

// testCancelWhileWaiting holds permits until an Acquire waits, then cancels
// that Acquire's context: it must return ctx's error at once (in virtual
// time), leave nobody queued and take no permit.
func testCancelWhileWaiting(t *testing.T, tc conformanceCase) {
	synctest.Test(t, func(t *testing.T) {
		s := tc.new()
		var held []Permit
		defer func() {
			for _, p := range held {
				p.Done(Outcome{Kind: Success, Status: 200})
			}
			if got := s.Stats(); got.InFlight != 0 || got.Queued != 0 {
				t.Errorf("after releasing all permits: in flight %d, queued %d; want 0, 0", got.InFlight, got.Queued)
			}
		}()
		const probes = 1000
		for range probes {
			ctx, cancel := context.WithCancel(t.Context())
			ch := make(chan acquired, 1)
			go func() {
				p, err := s.Acquire(ctx, conformanceCost)
				ch <- acquired{p, err}
			}()
			synctest.Wait()
			select {
			case r := <-ch:
				cancel()
				if r.err != nil {
					t.Fatalf("Acquire #%d: %v", len(held)+1, r.err)
				}
				held = append(held, r.p)
				continue
			default:
			}
			if got := s.Stats().Queued; got != 1 {
				t.Errorf("waiting in Acquire: queued = %d, want 1", got)
			}
			start := time.Now()
			cancel()
			r := <-ch
			if d := time.Since(start); d != 0 {
				t.Errorf("Acquire returned %v after its context was canceled, want at once", d)
			}
			if !errors.Is(r.err, context.Canceled) || r.p != nil {
				t.Errorf("Acquire after cancel = (%v, %v), want (nil, context.Canceled)", r.p, r.err)
			}
			st := s.Stats()
			if st.Queued != 0 || st.Permits != int64(len(held)) {
				t.Errorf("after the canceled Acquire: queued %d, permits %d; want 0, %d", st.Queued, st.Permits, len(held))
			}
			return
		}
		t.Logf("%d Acquires in a row never waited", probes)
	})
}

// testCanceledContext checks that a context canceled before Acquire leaves
// the strategy's accounting intact, whether or not Acquire admits it.
func testCanceledContext(t *testing.T, tc conformanceCase) {
	synctest.Test(t, func(t *testing.T) {
		s := tc.new()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		p, err := s.Acquire(ctx, conformanceCost)
		if err == nil {
			p.Done(Outcome{Kind: Canceled, Err: context.Canceled})
		} else if !errors.Is(err, context.Canceled) {
			t.Errorf("Acquire(canceled ctx) error = %v, want context.Canceled", err)
		}
		if st := s.Stats(); st.InFlight != 0 || st.Queued != 0 {
			t.Errorf("in flight %d, queued %d; want 0, 0", st.InFlight, st.Queued)
		}
	})
}

// conformanceScript is the sequence of outcomes the calls of the accounting
// workload meet, by call index modulo its length: the last outcome of each
// script ends the call (with MaxRetries 2).
var conformanceScript = [][]Outcome{
	{{Kind: Success, Status: 200}},
	{{Kind: Throttled, Status: 429, RetryAfter: time.Second, HasRetryAfter: true}, {Kind: Success, Status: 200}},
	{{Kind: Overloaded, Status: 529}, {Kind: Success, Status: 200}},
	{{Kind: Failed, Status: 400}},
	{{Kind: Failed, Err: errors.New("connection reset")}, {Kind: Failed, Status: 500}, {Kind: Success, Status: 200}},
	{{Kind: Throttled, Status: 429}, {Kind: Throttled, Status: 429}, {Kind: Throttled, Status: 429}},
}

// testAccounting runs a workload of concurrent calls through Do and checks
// that the strategy's counters agree with what the calls saw: one Done per
// Acquire, every attempt counted once by kind, nothing left in flight or
// queued, never more in flight than the limit in force when the permits were
// granted (see grantRecorder), and well-formed events.
func testAccounting(t *testing.T, tc conformanceCase, requeue bool) {
	synctest.Test(t, func(t *testing.T) {
		var events []Event // the observer is called one event at a time
		inner := tc.new(WithObserver(func(e Event) { events = append(events, e) }))
		s := &grantRecorder{Strategy: inner, out: make(map[*grantedPermit]struct{})}
		defer func() { checkEvents(t, events) }()
		policy := &RetryPolicy{MaxRetries: 2, Requeue: requeue, Seed: 1}
		const calls = 120
		var (
			mu                   sync.Mutex
			inFlight, maxFlight  int
			attempts             int
			want                 Stats
			sawLimit, overLimits int
		)
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				script := conformanceScript[i%len(conformanceScript)]
				call, err := Do(t.Context(), s, policy, conformanceCost, func(ctx context.Context, n int) Outcome {
					mu.Lock()
					inFlight++
					maxFlight = max(maxFlight, inFlight)
					if lim := s.bound(); lim > 0 {
						sawLimit++
						if float64(inFlight) > lim {
							overLimits++
						}
					}
					mu.Unlock()
					time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
					mu.Lock()
					inFlight--
					mu.Unlock()
					o := script[min(n, len(script)-1)]
					if o.Kind == Success {
						o.Usage = Usage{InputTokens: 40, OutputTokens: 30}
					}
					return o
				})
				if err != nil {
					t.Errorf("call %d: Do: %v", i, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				attempts += call.Attempts
				if call.Attempts != len(script) {
					t.Errorf("call %d: %d attempts, want %d", i, call.Attempts, len(script))
				}
				want.Permits++
				if requeue {
					want.Permits += int64(call.Attempts - 1)
				}
				for _, o := range script {
					want.Attempts++
					switch o.Kind {
					case Success:
						want.Successes++
					case Throttled:
						want.Throttles++
					case Overloaded:
						want.Overloads++
					default:
						want.Errors++
					}
				}
			})
		}
		wg.Wait()
		got := s.Stats()
		if got.Permits != want.Permits || got.Attempts != want.Attempts || got.Attempts != int64(attempts) {
			t.Errorf("permits %d, attempts %d; want %d, %d (calls saw %d attempts)", got.Permits, got.Attempts, want.Permits, want.Attempts, attempts)
		}
		gotKinds := [...]int64{got.Successes, got.Throttles, got.Overloads, got.Errors, got.Cancels}
		wantKinds := [...]int64{want.Successes, want.Throttles, want.Overloads, want.Errors, 0}
		if gotKinds != wantKinds {
			t.Errorf("successes, throttles, overloads, errors, cancels = %v, want %v", gotKinds, wantKinds)
		}
		if got.InFlight != 0 || got.Queued != 0 {
			t.Errorf("after all calls: in flight %d, queued %d; want 0, 0", got.InFlight, got.Queued)
		}
		if overLimits > 0 {
			t.Errorf("%d of %d attempts started with more in flight than the limit their permits were granted under (max in flight %d)", overLimits, sawLimit, maxFlight)
		}
	})
}

// A grantLimiter is a permit that knows the limit in force when it was
// granted: a strategy whose limit can shrink below the permits already out
// (a window cut by a throttle) returns one. A permit cannot be taken back, and
// with retries inside the slot it goes on making attempts, so what such a
// strategy promises is that each permit was granted with the permits out,
// itself included, at most the limit at that moment.
type grantLimiter interface {
	grantLimit() int
}

// grantRecorder wraps a strategy to know, at any moment, the limit that the
// attempts in flight are bound by. Every permit out was granted with at most
// its grant limit out, and the permits out now are a subset of those out when
// the latest of them was granted, so they number at most the largest grant
// limit among them. For permits that know no grant limit (a strategy whose
// limit is fixed), the bound is Stats.Limit.
type grantRecorder struct {
	Strategy
	mu  sync.Mutex
	out map[*grantedPermit]struct{}
}

type grantedPermit struct {
	Permit
	r     *grantRecorder
	limit int // 0 if the permit knows none
}

func (r *grantRecorder) Acquire(ctx context.Context, c Cost) (Permit, error) {
	p, err := r.Strategy.Acquire(ctx, c)
	if err != nil {
		return nil, err
	}
	gp := &grantedPermit{Permit: p, r: r}
	if g, ok := p.(grantLimiter); ok {
		gp.limit = g.grantLimit()
	}
	r.mu.Lock()
	r.out[gp] = struct{}{}
	r.mu.Unlock()
	return gp, nil
}

// bound returns the most attempts that may be in flight now; 0 for no limit.
func (r *grantRecorder) bound() float64 {
	r.mu.Lock()
	most := 0
	for p := range r.out {
		most = max(most, p.limit)
	}
	r.mu.Unlock()
	if most > 0 {
		return float64(most)
	}
	return r.Stats().Limit
}

func (p *grantedPermit) Done(o Outcome) {
	p.r.mu.Lock()
	delete(p.r.out, p)
	p.r.mu.Unlock()
	p.Permit.Done(o)
}

func (p *grantedPermit) Waited() Waits {
	if w, ok := p.Permit.(WaitReporter); ok {
		return w.Waited()
	}
	return Waits{}
}

// checkEvents checks that events are dated, in order, of a known type, with
// a sensible value.
func checkEvents(t *testing.T, events []Event) {
	t.Helper()
	var last time.Time
	for i, e := range events {
		switch {
		case e.Time.IsZero():
			t.Errorf("event %d (%+v): no time", i, e)
		case e.Time.Before(last):
			t.Errorf("event %d (%+v): dated before the event before it (%v)", i, e, last)
		case e.Type == EventGateClose && !e.Until.After(e.Time):
			t.Errorf("event %d (%+v): a gate closing until no later than now", i, e)
		case e.Value < 0 || e.Value != e.Value:
			t.Errorf("event %d (%+v): value %v", i, e, e.Value)
		}
		switch e.Type {
		case EventLimit, EventDelay, EventRate, EventGateClose, EventGateOpen:
		default:
			t.Errorf("event %d (%+v): unknown type %q", i, e, e.Type)
		}
		last = e.Time
	}
}

// testDoneTwice checks that a second Done on a permit panics instead of
// corrupting the accounting.
func testDoneTwice(t *testing.T, tc conformanceCase) {
	synctest.Test(t, func(t *testing.T) {
		s := tc.new()
		p, err := s.Acquire(t.Context(), conformanceCost)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		p.Done(Outcome{Kind: Success, Status: 200})
		defer func() {
			if recover() == nil {
				t.Errorf("second Done did not panic")
			}
			if st := s.Stats(); st.InFlight != 0 || st.Attempts != 1 {
				t.Errorf("after Done twice: in flight %d, attempts %d; want 0, 1", st.InFlight, st.Attempts)
			}
		}()
		p.Done(Outcome{Kind: Success, Status: 200})
	})
}

// testGate throttles one attempt with a server delay, reported with Observe
// or with Done, and checks that no permit is granted before the delay ends,
// and that a caller waiting at the gate can give up.
func testGate(t *testing.T, tc conformanceCase) {
	const delay = 2 * time.Second
	throttle := Outcome{Kind: Throttled, Status: 429, RetryAfter: delay, HasRetryAfter: true}
	for _, observe := range []bool{false, true} {
		t.Run(fmt.Sprintf("observe=%v", observe), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := tc.new()
				p, err := s.Acquire(t.Context(), conformanceCost)
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				start := time.Now()
				if observe {
					p.Observe(throttle)
				} else {
					p.Done(throttle)
				}
				var wg sync.WaitGroup
				wg.Go(func() { // gives up while the gate is closed
					ctx, cancel := context.WithTimeout(t.Context(), delay/4)
					defer cancel()
					if q, err := s.Acquire(ctx, conformanceCost); err == nil {
						t.Errorf("Acquire with a %v timeout passed a gate closed for %v", delay/4, delay)
						q.Done(Outcome{Kind: Success, Status: 200})
					} else if d := time.Since(start); d != delay/4 {
						t.Errorf("Acquire gave up on the gate after %v, want %v", d, delay/4)
					}
				})
				for i := range 3 {
					wg.Go(func() {
						q, err := s.Acquire(t.Context(), conformanceCost)
						if err != nil {
							t.Errorf("Acquire %d: %v", i, err)
							return
						}
						if d := time.Since(start); d < delay {
							t.Errorf("Acquire %d returned %v after a throttle with retry-after %v", i, d, delay)
						}
						q.Done(Outcome{Kind: Success, Status: 200})
					})
				}
				if observe {
					time.Sleep(delay)
					p.Done(Outcome{Kind: Success, Status: 200})
				}
				wg.Wait()
			})
		})
	}
}
