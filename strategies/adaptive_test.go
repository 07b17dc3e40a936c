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
// first dispatched) with outcome o, or fill, or nothing; then check the law.
// An attempt retried inside its slot keeps its number.
type adaptiveStep struct {
	at       time.Duration
	dispatch int
	end      int
	retry    bool // end keeps the permit for a retry inside the slot
	o        Outcome
	// fill models callers waiting in Acquire since the previous step: from
	// its time to at, an attempt is dispatched whenever admit allows, at the
	// time admit names (as the line's head does).
	fill bool
	// cost is the cost of the calls dispatched (or filled) at the step.
	cost Cost
	// queued is the callers waiting in line, as Acquire and Done tell the
	// law before it decides (0 unless a step sets it).
	queued int
	want   adaptiveWant
}

// adaptiveWant is the law's state after a step.
type adaptiveWant struct {
	window    float64 // rounded to 3 decimals
	limit     int
	capacity  int
	inFlight  int
	slowStart bool
	gate      time.Duration // the gate's wait at the step's time
	requests  float64       // the copy of a published requests budget, rounded to 3 decimals
	output    float64       // the copy of a published output-tokens budget, rounded to 3 decimals
	input     float64       // the copy of a published input-tokens budget, rounded to 3 decimals
}

func (l *adaptiveLaw) got(now time.Time) adaptiveWant {
	return adaptiveWant{
		window:    math.Round(l.window*1000) / 1000,
		limit:     l.limit,
		capacity:  l.capacity(now),
		inFlight:  l.inFlight,
		slowStart: l.slowStart,
		gate:      l.gate.wait(now),
		requests:  budgetLeft(l, dimRequests, now),
		output:    budgetLeft(l, dimOutput, now),
		input:     budgetLeft(l, dimInput, now),
	}
}

func budgetLeft(l *adaptiveLaw, d budgetDim, now time.Time) float64 {
	b := l.budgets[d]
	if b == nil {
		return 0
	}
	return math.Round(b.available(now)*1000) / 1000
}

var (
	served          = Outcome{Kind: Success, Status: 200}
	refusal         = Outcome{Kind: Throttled, Status: 429, RetryAfter: time.Second, HasRetryAfter: true}
	overloadOutcome = Outcome{Kind: Overloaded, Status: 529, RetryAfter: 2 * time.Second, HasRetryAfter: true}
)

func runAdaptiveSteps(t *testing.T, cfg AdaptiveConfig, steps []adaptiveStep) *adaptiveLaw {
	t.Helper()
	if cfg.Growth == 0 {
		// The steps are worked out with slow start doubling the window,
		// which keeps the arithmetic of their comments simple; the
		// default growth has its own case.
		cfg.Growth = 2
	}
	law := newAdaptiveLaw(cfg)
	l := &law
	var attempts []adaptiveAttempt
	last := stepT0
	for i, s := range steps {
		now := stepT0.Add(s.at)
		l.queued = s.queued
		what := fmt.Sprintf("dispatch %d", s.dispatch)
		switch {
		case s.dispatch > 0:
			for range s.dispatch {
				if ok, _, _ := l.admit(now, s.cost); !ok {
					t.Fatalf("step %d at %v: admit refused attempt %d (%d in flight, capacity %d)",
						i, s.at, len(attempts)+1, l.inFlight, l.capacity(now))
				}
				attempts = append(attempts, l.dispatch(now, s.cost))
			}
		case s.end > 0:
			what = fmt.Sprintf("end #%d: %v (retry %v)", s.end, s.o.Kind, s.retry)
			attempts[s.end-1] = l.finish(now, attempts[s.end-1], s.o, !s.retry)
		case s.fill:
			n := 0
			for at := last; ; {
				ok, wait, _ := l.admit(at, s.cost)
				if ok {
					attempts = append(attempts, l.dispatch(at, s.cost))
					n++
					continue
				}
				if at.Equal(now) {
					break
				}
				if wait <= 0 || at.Add(wait).After(now) {
					at = now
				} else {
					at = at.Add(wait)
				}
			}
			what = fmt.Sprintf("fill: %d dispatched", n)
		}
		if got := l.got(now); got != s.want {
			t.Errorf("step %d at %v (%s):\n got %+v\nwant %+v", i, s.at, what, got, s.want)
		}
		last = now
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
			// Round trips of 1 s (the default before the first success, and
			// the calls' latency). Callers wait throughout.
			name: "slow start doubles the window every round trip, the calls spread across it",
			steps: []adaptiveStep{
				{fill: true, want: adaptiveWant{window: 4, capacity: 4, inFlight: 4, slowStart: true}},
				// One more call each time the window passes a whole number:
				// at 0.32 s, 0.58 s, 0.81 s and 1 s.
				{at: 999 * ms, fill: true, want: adaptiveWant{window: 7.994, capacity: 7, inFlight: 7, slowStart: true}},
				{at: s, fill: true, want: adaptiveWant{window: 8, capacity: 8, inFlight: 8, slowStart: true}},
				// The first four end together, a synchronized wave: the
				// window neither grows per success nor misses their growth.
				with(succeed(s, 1), adaptiveWant{window: 8, capacity: 8, inFlight: 7, slowStart: true}),
				with(succeed(s, 2), adaptiveWant{window: 8, capacity: 8, inFlight: 6, slowStart: true}),
				with(succeed(s, 3), adaptiveWant{window: 8, capacity: 8, inFlight: 5, slowStart: true}),
				with(succeed(s, 4), adaptiveWant{window: 8, capacity: 8, inFlight: 4, slowStart: true}),
				{at: s, fill: true, want: adaptiveWant{window: 8, capacity: 8, inFlight: 8, slowStart: true}},
				{at: 2 * s, fill: true, want: adaptiveWant{window: 16, capacity: 16, inFlight: 16, slowStart: true}},
			},
		},
		{
			// The default growth, 16 times per round trip (1 s before the
			// first success): from 4, one more call each time 4 × 16^t
			// passes a whole number, 8 at 0.25 s, 16 at 0.5 s, 64 at 1 s
			// (64 × 16^0.001 = 64.178 a millisecond later).
			name: "slow start grows the window 16 times a round trip by default",
			cfg:  AdaptiveConfig{Growth: AdaptiveConfig{}.withDefaults().Growth},
			steps: []adaptiveStep{
				{fill: true, want: adaptiveWant{window: 4, capacity: 4, inFlight: 4, slowStart: true}},
				{at: 250 * ms, fill: true, want: adaptiveWant{window: 8, capacity: 8, inFlight: 8, slowStart: true}},
				{at: 500 * ms, fill: true, want: adaptiveWant{window: 16, capacity: 16, inFlight: 16, slowStart: true}},
				{at: 1001 * ms, fill: true, want: adaptiveWant{window: 64.178, capacity: 64, inFlight: 64, slowStart: true}},
			},
		},
		{
			name: "a window that does not bind does not grow",
			steps: []adaptiveStep{
				{dispatch: 3, want: adaptiveWant{window: 4, capacity: 4, inFlight: 3, slowStart: true}},
				with(succeed(s, 1), adaptiveWant{window: 4, capacity: 4, inFlight: 2, slowStart: true}),
			},
		},
		{
			name: "a full window with nobody waiting grows to one above the calls in flight",
			steps: []adaptiveStep{
				{dispatch: 4, want: adaptiveWant{window: 4, capacity: 4, inFlight: 4, slowStart: true}},
				with(succeed(s, 1), adaptiveWant{window: 5, capacity: 5, inFlight: 3, slowStart: true}),
				with(succeed(2*s, 2), adaptiveWant{window: 5, capacity: 5, inFlight: 2, slowStart: true}),
			},
		},
		{
			name: "slow start's first throttle teaches the limit and lands the window on it",
			cfg:  AdaptiveConfig{Initial: 20},
			steps: []adaptiveStep{
				{dispatch: 20, want: adaptiveWant{window: 20, capacity: 20, inFlight: 20, slowStart: true}},
				{at: 80 * ms, fill: true, want: adaptiveWant{window: 21.14, capacity: 21, inFlight: 21, slowStart: true}},
				// #21 is refused at once, with the other 20 held: the
				// server holds 20, so the window is 20, and no gate.
				{at: 81 * ms, end: 21, o: refusal, want: adaptiveWant{window: 20, limit: 20, capacity: 20, inFlight: 20}},
				// Full at the limit: no further, until a probe is due.
				{at: 1081 * ms, fill: true, want: adaptiveWant{window: 20, limit: 20, capacity: 20, inFlight: 20}},
			},
		},
		{
			name: "a burst of N refusals at F in flight learns F − N, in any order",
			cfg:  AdaptiveConfig{Initial: 17, Min: 1},
			steps: []adaptiveStep{
				{dispatch: 17, want: adaptiveWant{window: 17, capacity: 17, inFlight: 17, slowStart: true}},
				// The server took 10 and refused 7, whatever order they were
				// sent in; each refusal counts the others still on their way.
				{at: 20 * ms, end: 1, o: refusal, want: adaptiveWant{window: 16, limit: 16, capacity: 16, inFlight: 16}},
				{at: 20 * ms, end: 13, o: refusal, want: adaptiveWant{window: 15, limit: 15, capacity: 15, inFlight: 15}},
				{at: 20 * ms, end: 11, o: refusal, want: adaptiveWant{window: 14, limit: 14, capacity: 14, inFlight: 14}},
				{at: 21 * ms, end: 2, o: refusal, want: adaptiveWant{window: 13, limit: 13, capacity: 13, inFlight: 13}},
				{at: 21 * ms, end: 16, o: refusal, want: adaptiveWant{window: 12, limit: 12, capacity: 12, inFlight: 12}},
				{at: 22 * ms, end: 14, o: refusal, want: adaptiveWant{window: 11, limit: 11, capacity: 11, inFlight: 11}},
				{at: 22 * ms, end: 3, o: refusal, want: adaptiveWant{window: 10, limit: 10, capacity: 10, inFlight: 10}},
			},
		},
		{
			name: "a success during the refusal still counts as held",
			cfg:  AdaptiveConfig{Initial: 5},
			steps: []adaptiveStep{
				{dispatch: 5, want: adaptiveWant{window: 5, capacity: 5, inFlight: 5, slowStart: true}},
				with(succeed(10*ms, 1), adaptiveWant{window: 5.035, capacity: 5, inFlight: 4, slowStart: true}),
				{at: 20 * ms, end: 5, o: refusal, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 3}},
			},
		},
		{
			name: "calls sent after the refused one count as far as no success freed their slots",
			cfg:  AdaptiveConfig{Initial: 5},
			steps: []adaptiveStep{
				{dispatch: 5, want: adaptiveWant{window: 5, capacity: 5, inFlight: 5, slowStart: true}},
				with(succeed(10*ms, 1), adaptiveWant{window: 5.035, capacity: 5, inFlight: 4, slowStart: true}),
				{at: 10 * ms, fill: true, want: adaptiveWant{window: 5.035, capacity: 5, inFlight: 5, slowStart: true}},
				// #5 was refused with #1 to #4 held; #6, sent after, took
				// #1's slot: 4 in flight and 1 success, less 1 sent after.
				{at: 20 * ms, end: 5, o: refusal, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
			},
		},
		{
			name: "refusals of calls sent before the cut are the same event: they only refine the limit and the window down",
			cfg:  AdaptiveConfig{Initial: 10, Decrease: 0.5},
			steps: []adaptiveStep{
				{dispatch: 10, want: adaptiveWant{window: 10, capacity: 10, inFlight: 10, slowStart: true}},
				// Slow start's refusal: the window lands on the count, not
				// Decrease times it.
				{at: 20 * ms, end: 10, o: refusal, want: adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 9}},
				// The same event: the held count (8) refines the limit and
				// the window, and does not halve it again.
				{at: 30 * ms, end: 9, o: refusal, want: adaptiveWant{window: 8, limit: 8, capacity: 8, inFlight: 8}},
			},
		},
		{
			name: "refused again before the server held a call sent since the cut, with others held: the window answers, no gate",
			cfg:  AdaptiveConfig{Initial: 10},
			steps: []adaptiveStep{
				{dispatch: 10, want: adaptiveWant{window: 10, capacity: 10, inFlight: 10, slowStart: true}},
				{at: 20 * ms, end: 10, o: refusal, want: adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 9}},
				with(succeed(s, 1), adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 8}),
				{at: s, fill: true, want: adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 9}},
				// #11, sent after the cut, refused with 8 of ours held: a
				// new event after slow start, which the window answers by
				// dropping to 0.9 of the count; the refusal is
				// #11's alone (it waits out its retry-after), the others
				// go on: no gate.
				{at: s + 10*ms, end: 11, o: refusal, want: adaptiveWant{window: 7.2, limit: 8, capacity: 7, inFlight: 8}},
			},
		},
		{
			name: "refused again after the server held a call sent since the cut: the window answers",
			cfg:  AdaptiveConfig{Initial: 10},
			steps: []adaptiveStep{
				{dispatch: 10, want: adaptiveWant{window: 10, capacity: 10, inFlight: 10, slowStart: true}},
				{at: 20 * ms, end: 10, o: refusal, want: adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 9}},
				with(succeed(s, 1), adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 8}),
				with(succeed(s, 2), adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 7}),
				{at: s, fill: true, want: adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 9}},
				// #11, sent after the cut, is held.
				with(succeed(2*s, 11), adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 8}),
				{at: 2 * s, fill: true, want: adaptiveWant{window: 9, limit: 9, capacity: 9, inFlight: 9}},
				// #12, sent with #11, refused: held, the 8 others in flight
				// (#13, sent since, took #11's slot): a new limit, no gate.
				{at: 2*s + 10*ms, end: 12, o: refusal, want: adaptiveWant{window: 7.2, limit: 8, capacity: 7, inFlight: 8}},
			},
		},
		{
			// Calls with no token cost given: the copy of the budget
			// cannot tell when one fits, so the gate holds the key for
			// the server's delay; not until the reset, when the bucket is
			// full again, which no call needs.
			name: "a 429 for a spent budget teaches no limit; a call of unknown cost closes the gate for its delay",
			cfg:  AdaptiveConfig{Initial: 4},
			steps: []adaptiveStep{
				{dispatch: 4, want: adaptiveWant{window: 4, capacity: 4, inFlight: 4, slowStart: true}},
				{at: 10 * ms, end: 4, o: Outcome{Kind: Throttled, Status: 429, RetryAfter: s, HasRetryAfter: true,
					Limits: Limits{Tokens: Limit{Limit: 10000, Remaining: 0, Reset: stepT0.Add(30 * s)}}},
					want: adaptiveWant{window: 4.028, capacity: 4, inFlight: 3, slowStart: true, gate: s}},
				{at: 20 * ms, end: 3, o: Outcome{Kind: Throttled, Status: 429, RetryAfter: 40 * s, HasRetryAfter: true,
					Limits: Limits{Tokens: Limit{Limit: 10000, Remaining: 0, Reset: stepT0.Add(30 * s)}}},
					want: adaptiveWant{window: 4.028, capacity: 4, inFlight: 2, slowStart: true, gate: 40 * s}},
			},
		},
		{
			name: "a call refused in the probe's place is the probe's refusal; its retry inside the slot is no probe",
			cfg:  AdaptiveConfig{Initial: 4},
			steps: append(learnLimit4(),
				adaptiveStep{at: 3370 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 5, inFlight: 5}},
				// #7, sent at 1.4 s, is refused while the probe #10 is out,
				// with the limit held (the 4 others in flight: #3 and #4
				// ended since, but #8 to #10 sent after it took their
				// slots): the server took the probe first. No decrease, no
				// gate, the next probe in 3 round trips.
				adaptiveStep{at: 3390 * ms, end: 7, retry: true, o: refusal, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 5}},
				// Its retry, sent with 5 in flight, is refused again: no
				// probe, so a congestion event; with 4 of ours held, the
				// window answers it and no gate closes.
				adaptiveStep{at: 4390 * ms, end: 7, o: refusal, want: adaptiveWant{window: 3.6, limit: 4, capacity: 3, inFlight: 4}},
			),
		},
		{
			name: "hold at the limit, then probe one above it: refusal",
			cfg:  AdaptiveConfig{Initial: 4},
			steps: append(learnLimit4(),
				// At the limit; no probe before 3 round trips (3 s) after the throttle.
				adaptiveStep{at: 3300 * ms, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
				adaptiveStep{at: 3370 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 5, inFlight: 5}},
				// Refused: back to the limit, no gate, next probe 3 s later.
				adaptiveStep{at: 3390 * ms, end: 10, o: refusal, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
				adaptiveStep{at: 6390 * ms, want: adaptiveWant{window: 4, limit: 4, capacity: 5, inFlight: 4}},
			),
		},
		{
			name: "hold at the limit, then probe one above it: held, slow start again",
			cfg:  AdaptiveConfig{Initial: 4},
			steps: append(learnLimit4(),
				adaptiveStep{at: 3370 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 5, inFlight: 5}},
				adaptiveStep{at: 4250 * ms, end: 10, o: served, want: adaptiveWant{window: 5, capacity: 5, inFlight: 4, slowStart: true}},
				adaptiveStep{at: 5250 * ms, fill: true, want: adaptiveWant{window: 10.106, capacity: 10, inFlight: 10, slowStart: true}},
			),
		},
		{
			name: "two probes refused at the limit double the hold before the next, until the limit changes",
			cfg:  AdaptiveConfig{Initial: 4},
			steps: append(learnLimit4(),
				adaptiveStep{at: 3370 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 5, inFlight: 5}},
				adaptiveStep{at: 3390 * ms, end: 10, o: refusal, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
				// The first refusal: the next probe 3 round trips later.
				adaptiveStep{at: 6390 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 5, inFlight: 5}},
				adaptiveStep{at: 6400 * ms, end: 11, o: refusal, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
				// The second: 6 round trips, not 3.
				adaptiveStep{at: 9400 * ms, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
				adaptiveStep{at: 12400 * ms, want: adaptiveWant{window: 4, limit: 4, capacity: 5, inFlight: 4}},
			),
		},
		{
			// Round trips of 1 s (the default), a limit of 4 learned from
			// a 429 with retry-after 1 s: a refused probe's call would
			// wait 1 s, and the key is worth probing while its line keeps
			// it busy at the limit for 1 s and a round trip, 8 callers.
			name: "a probe waits until the callers in line outlast the retry-after a refused probe would pay",
			cfg:  AdaptiveConfig{Initial: 4},
			steps: []adaptiveStep{
				{dispatch: 4, want: adaptiveWant{window: 4, capacity: 4, inFlight: 4, slowStart: true}},
				{fill: true, at: 330 * ms, want: adaptiveWant{window: 5.028, capacity: 5, inFlight: 5, slowStart: true}},
				// #5 refused with the 4 others held: no gate.
				{at: 350 * ms, end: 5, o: refusal, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
				// Full at the limit.
				{at: 1400 * ms, fill: true, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
				// The probe is due at 3.35 s; 7 in line keep the key busy
				// 1.75 s, short of 2 s.
				{at: 3400 * ms, queued: 7, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
				{at: 3400 * ms, queued: 8, want: adaptiveWant{window: 4, limit: 4, capacity: 5, inFlight: 4}},
			},
		},
		{
			name: "an overload decreases the window and closes the gate but teaches no limit",
			cfg:  AdaptiveConfig{Initial: 10},
			steps: []adaptiveStep{
				{dispatch: 10, want: adaptiveWant{window: 10, capacity: 10, inFlight: 10, slowStart: true}},
				{at: s, end: 1, o: overloadOutcome, want: adaptiveWant{window: 9.9, capacity: 9, inFlight: 9, gate: 2 * s}},
				{at: s, end: 2, o: overloadOutcome, want: adaptiveWant{window: 9.9, capacity: 9, inFlight: 8, gate: 2 * s}},
			},
		},
		{
			// 6,000 output tokens a minute, 100 a second; calls of
			// max_tokens 300.
			name: "nothing remaining holds the next call until its cost has refilled, not until the reset",
			steps: []adaptiveStep{
				{dispatch: 1, cost: Cost{MaxTokens: 300}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true}},
				{at: s, end: 1, o: Outcome{Kind: Success, Latency: s, Usage: Usage{OutputTokens: 100}, Limits: Limits{
					OutputTokens: Limit{Limit: 6000, Remaining: 0, Reset: stepT0.Add(60 * s)},
				}}, want: adaptiveWant{window: 4, capacity: 4, slowStart: true}},
				// No gate: the next call goes when the copy holds its 300,
				// at 4 s, and takes them.
				{at: 5 * s, fill: true, cost: Cost{MaxTokens: 300}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true, output: 100}},
			},
		},
		{
			// 6,000 output tokens a minute, 100 a second; calls of
			// max_tokens 300 whose answers are 100 long.
			name: "a call takes its max_tokens from the output budget; its answer gives back what it did not use",
			steps: []adaptiveStep{
				{dispatch: 1, cost: Cost{MaxTokens: 300}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true}},
				{at: s, end: 1, o: Outcome{Kind: Success, Latency: s, Usage: Usage{OutputTokens: 100}, Limits: Limits{
					OutputTokens: Limit{Limit: 6000, Remaining: 5000, Reset: stepT0.Add(60 * s)},
				}}, want: adaptiveWant{window: 4, capacity: 4, slowStart: true, output: 5000}},
				{at: s, dispatch: 2, cost: Cost{MaxTokens: 300}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 2, slowStart: true, output: 4400}},
				// A second of refill, and #2's 200 unused.
				{at: 2 * s, end: 2, o: Outcome{Kind: Success, Latency: s, Usage: Usage{OutputTokens: 100}},
					want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true, output: 4700}},
				// A refusal gives back all of #3's. (It teaches a limit of
				// 1: the server held #2 when it refused #3.)
				{at: 2 * s, end: 3, o: Outcome{Kind: Throttled, Status: 429},
					want: adaptiveWant{window: 1, limit: 1, capacity: 1, output: 5000}},
			},
		},
		{
			// 60,000 input tokens a minute, 1,000 a second; prompts
			// estimated at 1,000 tokens that the server counts as 800.
			name: "a response syncs the input copy to what the server held when it admitted the call, plus what the copy gained since",
			steps: []adaptiveStep{
				{dispatch: 1, cost: Cost{InputTokens: 1000}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true}},
				// The copy starts at what the server had left when it
				// admitted #1, a second ago (it cannot date the refill
				// since: it errs low).
				{at: s, end: 1, o: Outcome{Kind: Success, Latency: s, Usage: Usage{InputTokens: 800}, Limits: Limits{
					InputTokens: Limit{Limit: 60000, Remaining: 20001},
				}}, want: adaptiveWant{window: 4, capacity: 4, slowStart: true, input: 20001}},
				{at: s, dispatch: 1, cost: Cost{InputTokens: 1000}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true, input: 19001}},
				// #2 was admitted with 20,201 left (the server had 21,001
				// and counted 800): with the 1,000 of refill since, it has
				// 21,201. The copy had taken 1,000 for #2, got 200 back and
				// 1,000 of refill: 20,201, 1,000 low; it is set to 21,201.
				{at: 2 * s, end: 2, o: Outcome{Kind: Success, Latency: s, Usage: Usage{InputTokens: 800}, Limits: Limits{
					InputTokens: Limit{Limit: 60000, Remaining: 20201},
				}}, want: adaptiveWant{window: 4, capacity: 4, slowStart: true, input: 21201}},
			},
		},
		{
			name: "a published requests limit seeds the window; a bucket with plenty left does not cap it",
			steps: []adaptiveStep{
				{dispatch: 1, want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true}},
				// 1,200 per minute, one call per second each: 20 at once.
				{at: s, end: 1, o: Outcome{Kind: Success, Latency: s, Limits: Limits{
					Requests: Limit{Limit: 1200, Remaining: 1199, Reset: stepT0.Add(2 * s)},
				}}, want: adaptiveWant{window: 20, capacity: 20, slowStart: true, requests: 1199}},
				{at: s, dispatch: 20, want: adaptiveWant{window: 20, capacity: 20, inFlight: 20, slowStart: true, requests: 1179}},
				// The bucket holds far more than 20 a second: the window
				// goes on doubling while full (it used to stop at 20, which
				// against a concurrency limit above the rate per round trip
				// left the run paced by a budget it never spent).
				{at: 2 * s, fill: true, want: adaptiveWant{window: 40, capacity: 40, inFlight: 40, slowStart: true, requests: 1179}},
			},
		},
		{
			name: "a published requests budget nearly spent paces the calls to the rate",
			cfg:  AdaptiveConfig{Initial: 8},
			steps: []adaptiveStep{
				{dispatch: 3, want: adaptiveWant{window: 8, capacity: 8, inFlight: 3, slowStart: true}},
				// 60 per minute with 4 left when #1 was admitted, less #2
				// and #3 sent with it: 2.
				{at: s, end: 1, o: Outcome{Kind: Success, Latency: s, Limits: Limits{
					Requests: Limit{Limit: 60, Remaining: 4, Reset: stepT0.Add(56 * s)},
				}}, want: adaptiveWant{window: 8, capacity: 8, inFlight: 2, slowStart: true, requests: 2}},
				{at: s, dispatch: 2, want: adaptiveWant{window: 8, capacity: 8, inFlight: 4, slowStart: true}},
				// Then one a second, as the bucket refills, though the
				// window has room.
				{at: 3 * s, fill: true, want: adaptiveWant{window: 8, capacity: 8, inFlight: 6, slowStart: true}},
				// #3 was sent before the copy existed: its response, which
				// the copy already counts, does not move it.
				{at: 3 * s, end: 3, o: Outcome{Kind: Success, Latency: 3 * s, Limits: Limits{
					Requests: Limit{Limit: 60, Remaining: 2, Reset: stepT0.Add(58 * s)},
				}}, want: adaptiveWant{window: 8, capacity: 8, inFlight: 5, slowStart: true}},
				// #4, sent at 1 s with the copy at 2 (so at 1 after it),
				// was admitted with 1 left: the server has what the copy
				// has, 1 at 1 s less the 2 sent since plus 2 s of refill.
				{at: 3 * s, end: 4, o: Outcome{Kind: Success, Latency: 2 * s, Limits: Limits{
					Requests: Limit{Limit: 60, Remaining: 1, Reset: stepT0.Add(60 * s)},
				}}, want: adaptiveWant{window: 8, capacity: 8, inFlight: 4, slowStart: true}},
				// #5, sent with #4, says the server had 4 before it took
				// #5, where the copy had 2 before #4 and #5 (the server may
				// have taken #5 first): 2 more than the copy, so 2 now.
				{at: 3 * s, end: 5, o: Outcome{Kind: Success, Latency: 2 * s, Limits: Limits{
					Requests: Limit{Limit: 60, Remaining: 3, Reset: stepT0.Add(60 * s)},
				}}, want: adaptiveWant{window: 8, capacity: 8, inFlight: 3, slowStart: true, requests: 2}},
				// A response to a call sent before #5 does not sync.
				{at: 3 * s, end: 2, o: Outcome{Kind: Success, Latency: 3 * s, Limits: Limits{
					Requests: Limit{Limit: 60, Remaining: 50, Reset: stepT0.Add(10 * s)},
				}}, want: adaptiveWant{window: 8, capacity: 8, inFlight: 2, slowStart: true, requests: 2}},
			},
		},
		{
			// 60,000 input tokens a minute, 1,000 a second; prompts of
			// 1,000 tokens, counted as such. #2 is sent at 1 s before
			// #1's response creates the copy, and #3 after it: #3 sees the copy as it was before
			// #2, 20,001 (the server may have taken #3 first), not as
			// nothing at all.
			name: "a copy created between two calls of one instant syncs from the later one's response",
			steps: []adaptiveStep{
				{dispatch: 1, cost: Cost{InputTokens: 1000}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true}},
				{at: s, dispatch: 1, cost: Cost{InputTokens: 1000}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 2, slowStart: true}},
				// 20,001 left at #1's admission, less #2 sent since.
				{at: s, end: 1, o: Outcome{Kind: Success, Latency: s, Usage: Usage{InputTokens: 1000}, Limits: Limits{
					InputTokens: Limit{Limit: 60000, Remaining: 20001},
				}}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true, input: 19001}},
				{at: s, dispatch: 1, cost: Cost{InputTokens: 1000}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 2, slowStart: true, input: 18001}},
				// #3 admitted with 19,001 left: 20,001 before #2 and #3,
				// where the copy had 20,001 too; it is left at 19,001 (a
				// second of refill, which it cannot date, low). Seeing
				// nothing before #3, it had been set to 39,002.
				{at: 2 * s, end: 3, o: Outcome{Kind: Success, Latency: s, Usage: Usage{InputTokens: 1000}, Limits: Limits{
					InputTokens: Limit{Limit: 60000, Remaining: 19001},
				}}, want: adaptiveWant{window: 4, capacity: 4, inFlight: 1, slowStart: true, input: 19001}},
			},
		},
		{
			// The copy, at 0 less the 3 others sent with the refused call,
			// holds the next call for 4 s; no gate.
			name: "a refusal for a spent requests budget teaches no limit and closes no gate",
			cfg:  AdaptiveConfig{Initial: 8},
			steps: []adaptiveStep{
				{dispatch: 4, want: adaptiveWant{window: 8, capacity: 8, inFlight: 4, slowStart: true}},
				{at: s, end: 1, o: Outcome{Kind: Throttled, Status: 429, RetryAfter: 2 * s, HasRetryAfter: true, Limits: Limits{
					Requests: Limit{Limit: 60, Remaining: 0, Reset: stepT0.Add(60 * s)},
				}}, want: adaptiveWant{window: 8, capacity: 8, inFlight: 3, slowStart: true, requests: -3}},
			},
		},
		{
			name: "clamped to Max",
			cfg:  AdaptiveConfig{Initial: 2, Max: 2},
			steps: []adaptiveStep{
				{dispatch: 2, want: adaptiveWant{window: 2, capacity: 2, inFlight: 2, slowStart: true}},
				{at: s, fill: true, want: adaptiveWant{window: 2, capacity: 2, inFlight: 2, slowStart: true}},
			},
		},
		{
			name: "nothing else held: the window is no answer, clamped to Min, and the gate closes",
			cfg:  AdaptiveConfig{Initial: 3, Min: 2},
			steps: []adaptiveStep{
				{dispatch: 1, want: adaptiveWant{window: 3, capacity: 3, inFlight: 1, slowStart: true}},
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
// trips of 1 s, and 9 attempts dispatched.
func learnLimit4() []adaptiveStep {
	const ms = time.Millisecond
	ok := Outcome{Kind: Success, Latency: time.Second}
	return []adaptiveStep{
		{dispatch: 4, want: adaptiveWant{window: 4, capacity: 4, inFlight: 4, slowStart: true}},
		{fill: true, at: 330 * ms, want: adaptiveWant{window: 5.028, capacity: 5, inFlight: 5, slowStart: true}},
		// #5 refused with the 4 others held.
		{at: 350 * ms, end: 5, o: Outcome{Kind: Throttled, Status: 429}, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
		// At the limit, and no further while no probe is due.
		{at: 1350 * ms, end: 1, o: ok, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 3}},
		{at: 1350 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
		{at: 1400 * ms, end: 2, o: ok, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 3}},
		{at: 1400 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
		{at: 1500 * ms, end: 3, o: ok, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 3}},
		{at: 1500 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
		{at: 1600 * ms, end: 4, o: ok, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 3}},
		{at: 1600 * ms, dispatch: 1, want: adaptiveWant{window: 4, limit: 4, capacity: 4, inFlight: 4}},
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

// TestAdaptivePublishesInFirstUseOrder: what Adaptive publishes from its
// keys follows the order of their first use, not a map's: with keys at
// alternate bounds, Stats.Bound is the last-used key's, in every run.
func TestAdaptivePublishesInFirstUseOrder(t *testing.T) {
	for run := range 10 {
		a := NewAdaptive(AdaptiveConfig{Initial: 4, Min: 2, Max: 10})
		for k := range 8 {
			w := 2.0 // at Min
			if k%2 == 1 {
				w = 10 // at Max
			}
			a.SetState("anthropic", fmt.Sprint("key", k), LearnedState{Window: w})
		}
		if got := a.Stats().Bound; got != "max: 10" {
			t.Fatalf("run %d: Stats.Bound = %q, want %q (the last key's)", run, got, "max: 10")
		}
	}
}
