package strategies

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

// adaptiveStep is one step of an adaptiveLaw table, at stepT0+at: dispatch
// attempts (each must be admitted), or end attempt number end (1 for the
// first dispatched) with outcome o, or neither; then check the law. An
// attempt retried inside its slot keeps its number.
type adaptiveStep struct {
	at       time.Duration
	dispatch int
	end      int
	retry    bool // end keeps the permit for a retry inside the slot
	o        Outcome
	want     adaptiveWant
}

// adaptiveWant is the law's state after a step.
type adaptiveWant struct {
	window    float64
	limit     int
	capacity  int
	slowStart bool
	gate      time.Duration // the gate's wait at the step's time
}

func (l *adaptiveLaw) got(now time.Time) adaptiveWant {
	return adaptiveWant{
		window:    math.Round(l.window*1000) / 1000,
		limit:     l.limit,
		capacity:  l.capacity(now),
		slowStart: l.slowStart,
		gate:      l.gate.wait(now),
	}
}

var (
	served          = Outcome{Kind: Success, Status: 200}
	refusal         = Outcome{Kind: Throttled, Status: 429, RetryAfter: time.Second, HasRetryAfter: true}
	overloadOutcome = Outcome{Kind: Overloaded, Status: 529, RetryAfter: 2 * time.Second, HasRetryAfter: true}
)

func runAdaptiveSteps(t *testing.T, cfg AdaptiveConfig, steps []adaptiveStep) *adaptiveLaw {
	t.Helper()
	law := newAdaptiveLaw(cfg)
	l := &law
	var attempts []adaptiveAttempt
	for i, s := range steps {
		now := stepT0.Add(s.at)
		what := fmt.Sprintf("dispatch %d", s.dispatch)
		if s.dispatch > 0 {
			for range s.dispatch {
				if ok, _, _ := l.admit(now); !ok {
					t.Fatalf("step %d at %v: admit refusal attempt %d (%d in flight, capacity %d)",
						i, s.at, len(attempts)+1, l.inFlight, l.capacity(now))
				}
				attempts = append(attempts, l.dispatch(now))
			}
		} else if s.end > 0 {
			what = fmt.Sprintf("end #%d: %v (retry %v)", s.end, s.o.Kind, s.retry)
			attempts[s.end-1] = l.finish(now, attempts[s.end-1], s.o, !s.retry)
		}
		if got := l.got(now); got != s.want {
			t.Errorf("step %d at %v (%s):\n got %+v\nwant %+v", i, s.at, what, got, s.want)
		}
	}
	return l
}

func TestAdaptiveLaw(t *testing.T) {
	const (
		ms = time.Millisecond
		s  = time.Second
	)
	succeed := func(at time.Duration, n int) adaptiveStep {
		return adaptiveStep{at: at, end: n, o: Outcome{Kind: Success, Status: 200, Latency: s}}
	}
	tests := []struct {
		name  string
		cfg   AdaptiveConfig
		steps []adaptiveStep
	}{
		{
			name: "slow start doubles the window each round trip",
			steps: []adaptiveStep{
				{dispatch: 4, want: adaptiveWant{window: 4, capacity: 4, slowStart: true}},
				// Each success while full adds one: two dispatches per success.
				with(succeed(s, 1), adaptiveWant{window: 5, capacity: 5, slowStart: true}),
				{at: s, dispatch: 2, want: adaptiveWant{window: 5, capacity: 5, slowStart: true}},
				with(succeed(s, 2), adaptiveWant{window: 6, capacity: 6, slowStart: true}),
				{at: s, dispatch: 2, want: adaptiveWant{window: 6, capacity: 6, slowStart: true}},
				with(succeed(s, 3), adaptiveWant{window: 7, capacity: 7, slowStart: true}),
				{at: s, dispatch: 2, want: adaptiveWant{window: 7, capacity: 7, slowStart: true}},
				with(succeed(s, 4), adaptiveWant{window: 8, capacity: 8, slowStart: true}),
				// Not full: no growth.
				with(succeed(2*s, 5), adaptiveWant{window: 8, capacity: 8, slowStart: true}),
			},
		},
		{
			name: "a throttle teaches the limit, drops the window to 0.9 of it and closes the gate",
			cfg:  AdaptiveConfig{Initial: 20},
			steps: []adaptiveStep{
				{dispatch: 20, want: adaptiveWant{window: 20, capacity: 20, slowStart: true}},
				with(succeed(s, 1), adaptiveWant{window: 21, capacity: 21, slowStart: true}),
				{at: s, dispatch: 2, want: adaptiveWant{window: 21, capacity: 21, slowStart: true}},
				// #22 refusal: the server held 20 of ours.
				{at: s + 20*ms, end: 22, o: refusal, want: adaptiveWant{window: 18, limit: 20, capacity: 18, gate: s}},
				// Still closed just before the delay is over, open at its end.
				// Successes with more in flight than the window grow it slowly.
				{at: 2 * s, end: 2, o: served, want: adaptiveWant{window: 18.056, limit: 20, capacity: 18, gate: 20 * ms}},
				{at: 2*s + 20*ms, end: 3, o: served, want: adaptiveWant{window: 18.111, limit: 20, capacity: 18}},
			},
		},
		{
			name: "a burst of refusals keeps the smallest count held, in any order",
			cfg:  AdaptiveConfig{Initial: 17, Min: 1},
			steps: []adaptiveStep{
				{dispatch: 17, want: adaptiveWant{window: 17, capacity: 17, slowStart: true}},
				// The server took 10 and refusal 7; the refusals come back
				// last first. Each counts the refusals still on their way.
				{at: 20 * ms, end: 17, o: refusal, want: adaptiveWant{window: 14.4, limit: 16, capacity: 14, gate: s}},
				{at: 20 * ms, end: 13, o: refusal, want: adaptiveWant{window: 13.5, limit: 15, capacity: 13, gate: s}},
				{at: 20 * ms, end: 11, o: refusal, want: adaptiveWant{window: 12.6, limit: 14, capacity: 12, gate: s}},
				{at: 20 * ms, end: 12, o: refusal, want: adaptiveWant{window: 11.7, limit: 13, capacity: 11, gate: s}},
				{at: 20 * ms, end: 16, o: refusal, want: adaptiveWant{window: 10.8, limit: 12, capacity: 10, gate: s}},
				{at: 20 * ms, end: 14, o: refusal, want: adaptiveWant{window: 9.9, limit: 11, capacity: 9, gate: s}},
				{at: 20 * ms, end: 15, o: refusal, want: adaptiveWant{window: 9, limit: 10, capacity: 9, gate: s}},
			},
		},
		{
			name: "a success during the refusal still counts as held",
			cfg:  AdaptiveConfig{Initial: 5},
			steps: []adaptiveStep{
				{dispatch: 5, want: adaptiveWant{window: 5, capacity: 5, slowStart: true}},
				with(succeed(10*ms, 1), adaptiveWant{window: 6, capacity: 6, slowStart: true}),
				{at: 20 * ms, end: 5, o: refusal, want: adaptiveWant{window: 3.6, limit: 4, capacity: 3, gate: s}},
			},
		},
		{
			name: "a call sent after the refused one does not count as held",
			cfg:  AdaptiveConfig{Initial: 5},
			steps: []adaptiveStep{
				{dispatch: 5, want: adaptiveWant{window: 5, capacity: 5, slowStart: true}},
				with(succeed(10*ms, 1), adaptiveWant{window: 6, capacity: 6, slowStart: true}),
				{at: 10 * ms, dispatch: 2, want: adaptiveWant{window: 6, capacity: 6, slowStart: true}},
				// #5 was refused with #1 to #4 held; #6 and #7 came after.
				{at: 20 * ms, end: 5, o: refusal, want: adaptiveWant{window: 3.6, limit: 4, capacity: 3, gate: s}},
			},
		},
		{
			name: "a retry inside the slot is no probe",
			cfg:  AdaptiveConfig{Initial: 4},
			steps: append(learnLimit4(),
				adaptiveStep{at: 3020 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 5}},
				// #7, sent at 200 ms with #8, is refused: a new event. Held: #8,
				// and #4 and #5 that succeeded meanwhile; not #9 to #11, sent later.
				adaptiveStep{at: 3040 * ms, end: 7, retry: true, o: refusal, want: adaptiveWant{window: 2.7, limit: 3, capacity: 2, gate: s}},
				// Its retry, sent with 5 in flight, is refused again: no refused
				// probe, so the gate closes again, and the limit is what was
				// held this time (#8 to #11).
				adaptiveStep{at: 4040 * ms, end: 7, o: refusal, want: adaptiveWant{window: 2.7, limit: 4, capacity: 2, gate: s}},
			),
		},
		{
			name: "refusals of calls sent before the decrease decrease once",
			cfg:  AdaptiveConfig{Initial: 10, Decrease: 0.5},
			steps: []adaptiveStep{
				{dispatch: 10, want: adaptiveWant{window: 10, capacity: 10, slowStart: true}},
				{at: 20 * ms, end: 10, o: refusal, want: adaptiveWant{window: 4.5, limit: 9, capacity: 4, gate: s}},
				// The same event: the held count (8) only refines the limit.
				{at: 30 * ms, end: 9, o: refusal, want: adaptiveWant{window: 4, limit: 8, capacity: 4, gate: s}},
			},
		},
		{
			name: "hold at the limit, then probe one above it: refusal",
			cfg:  AdaptiveConfig{Initial: 4},
			steps: append(learnLimit4(),
				// At the limit; no probe before 3 round trips (3 s) after the throttle.
				adaptiveStep{at: 2900 * ms, want: adaptiveWant{window: 4, limit: 4, capacity: 4}},
				adaptiveStep{at: 3020 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 5}},
				// Refused: back to the limit, no gate, next probe 3 s later.
				adaptiveStep{at: 3040 * ms, end: 11, o: refusal, want: adaptiveWant{window: 4, limit: 4, capacity: 4}},
				adaptiveStep{at: 6040 * ms, want: adaptiveWant{window: 4, limit: 4, capacity: 5}},
			),
		},
		{
			name: "hold at the limit, then probe one above it: held, slow start again",
			cfg:  AdaptiveConfig{Initial: 4},
			steps: append(learnLimit4(),
				adaptiveStep{at: 3020 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 5}},
				adaptiveStep{at: 3900 * ms, end: 11, o: served, want: adaptiveWant{window: 6, capacity: 6, slowStart: true}},
			),
		},
		{
			name: "an overloadOutcome decreases the window and closes the gate but teaches no limit",
			cfg:  AdaptiveConfig{Initial: 10},
			steps: []adaptiveStep{
				{dispatch: 10, want: adaptiveWant{window: 10, capacity: 10, slowStart: true}},
				{at: s, end: 1, o: overloadOutcome, want: adaptiveWant{window: 9, capacity: 9, gate: 2 * s}},
				{at: s, end: 2, o: overloadOutcome, want: adaptiveWant{window: 9, capacity: 9, gate: 2 * s}},
			},
		},
		{
			name: "remaining 0 closes the gate until the reset",
			steps: []adaptiveStep{
				{dispatch: 1, want: adaptiveWant{window: 4, capacity: 4, slowStart: true}},
				{at: s, end: 1, o: Outcome{Kind: Success, Latency: s, Limits: Limits{
					Tokens: Limit{Limit: 1000, Remaining: 0, Reset: stepT0.Add(5 * s)},
				}}, want: adaptiveWant{window: 4, capacity: 4, slowStart: true, gate: 4 * s}},
			},
		},
		{
			name: "a published requests limit seeds and caps the window",
			steps: []adaptiveStep{
				{dispatch: 1, want: adaptiveWant{window: 4, capacity: 4, slowStart: true}},
				// 1,200 per minute, one call per second each: 20 at once.
				{at: s, end: 1, o: Outcome{Kind: Success, Latency: s, Limits: Limits{
					Requests: Limit{Limit: 1200, Remaining: 1199, Reset: stepT0.Add(2 * s)},
				}}, want: adaptiveWant{window: 20, capacity: 20, slowStart: true}},
				{at: s, dispatch: 20, want: adaptiveWant{window: 20, capacity: 20, slowStart: true}},
				with(succeed(2*s, 2), adaptiveWant{window: 20, capacity: 20, slowStart: true}),
			},
		},
		{
			name: "clamped to Max",
			cfg:  AdaptiveConfig{Initial: 2, Max: 2},
			steps: []adaptiveStep{
				{dispatch: 2, want: adaptiveWant{window: 2, capacity: 2, slowStart: true}},
				with(succeed(s, 1), adaptiveWant{window: 2, capacity: 2, slowStart: true}),
			},
		},
		{
			name: "clamped to Min",
			cfg:  AdaptiveConfig{Initial: 3, Min: 2},
			steps: []adaptiveStep{
				{dispatch: 1, want: adaptiveWant{window: 3, capacity: 3, slowStart: true}},
				// Nothing else in flight: the server held none of ours.
				{at: s, end: 1, o: refusal, want: adaptiveWant{window: 2, limit: 2, capacity: 2, gate: s}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runAdaptiveSteps(t, tt.cfg, tt.steps) })
	}
}

// with returns s expecting want.
func with(s adaptiveStep, want adaptiveWant) adaptiveStep {
	s.want = want
	return s
}

// learnLimit4 are steps that bring a law with Initial 4 to a learned limit of
// 4 with a window of 4 and 4 in flight, the last throttle at 20 ms, round
// trips of 1 s, and 11 attempts dispatched.
func learnLimit4() []adaptiveStep {
	const ms = time.Millisecond
	return []adaptiveStep{
		{dispatch: 4, want: adaptiveWant{window: 4, capacity: 4, slowStart: true}},
		{dispatch: 0, end: 1, o: Outcome{Kind: Success, Latency: time.Second}, want: adaptiveWant{window: 5, capacity: 5, slowStart: true}},
		{dispatch: 2, want: adaptiveWant{window: 5, capacity: 5, slowStart: true}},
		// #6 refusal with 4 held; a second refusal is the same event.
		{at: 20 * ms, end: 6, o: Outcome{Kind: Throttled, Status: 429}, want: adaptiveWant{window: 3.6, limit: 4, capacity: 3}},
		// Back up to the limit, about one per round trip, and no further.
		{at: 100 * ms, end: 2, o: Outcome{Kind: Success, Latency: time.Second}, want: adaptiveWant{window: 3.878, limit: 4, capacity: 3}},
		{at: 200 * ms, end: 3, o: Outcome{Kind: Success, Latency: time.Second}, want: adaptiveWant{window: 4, limit: 4, capacity: 4}},
		{at: 200 * ms, dispatch: 2, want: adaptiveWant{window: 4, limit: 4, capacity: 4}},
		{at: 300 * ms, end: 4, o: Outcome{Kind: Success, Latency: time.Second}, want: adaptiveWant{window: 4, limit: 4, capacity: 4}},
		{at: 300 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 4}},
		{at: 400 * ms, end: 5, o: Outcome{Kind: Success, Latency: time.Second}, want: adaptiveWant{window: 4, limit: 4, capacity: 4}},
		{at: 400 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 4}},
	}
}

// BenchmarkWindowAcquireDone measures one uncontended Acquire and Done of
// the window strategies and of aimd-delay with a negligible delay.
func BenchmarkWindowAcquireDone(b *testing.B) {
	for _, bc := range []struct {
		name string
		s    Strategy
	}{
		{"adaptive", NewAdaptive(AdaptiveConfig{})},
		{"aimd", NewAIMD(AIMDConfig{})},
		{"aimd-delay", NewAIMDDelay(AIMDDelayConfig{Initial: time.Nanosecond, Min: time.Nanosecond})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			c := Cost{Provider: "anthropic", Key: "k"}
			for b.Loop() {
				p, err := bc.s.Acquire(ctx, c)
				if err != nil {
					b.Fatal(err)
				}
				p.Done(Outcome{Kind: Success, Status: 200, Latency: time.Millisecond})
			}
		})
	}
}
