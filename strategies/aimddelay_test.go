package strategies

import (
	"testing"
	"time"
)

// stepT0 is the origin of the control laws' step tables.
var stepT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// delayStep is one step of a delayLaw table: at stepT0+at, either dispatch (when
// the law says the dispatch may go at once) or observe an outcome, then check
// the delay and the wait before the next dispatch.
type delayStep struct {
	at        time.Duration
	dispatch  bool
	kind      Kind
	wantDelay time.Duration
	wantNext  time.Duration
}

func runDelaySteps(t *testing.T, cfg AIMDDelayConfig, steps []delayStep) {
	t.Helper()
	l := newDelayLaw(cfg)
	for i, s := range steps {
		now := stepT0.Add(s.at)
		if s.dispatch {
			if w := l.next(now); w != 0 {
				t.Fatalf("step %d at %v: next = %v, want a dispatch at once", i, s.at, w)
			}
			l.dispatch(now)
		} else {
			l.observe(now, Outcome{Kind: s.kind})
		}
		if l.delay != s.wantDelay {
			t.Errorf("step %d at %v (%v): delay = %v, want %v", i, s.at, s.kind, l.delay, s.wantDelay)
		}
		if got := l.next(now); got != s.wantNext {
			t.Errorf("step %d at %v (%v): next = %v, want %v", i, s.at, s.kind, got, s.wantNext)
		}
	}
}

func TestDelayLaw(t *testing.T) {
	const s = time.Second
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name  string
		cfg   AIMDDelayConfig
		steps []delayStep
	}{
		{
			name: "6.0 s becomes 5.4 s after three successes",
			steps: []delayStep{
				{at: 0, dispatch: true, wantDelay: 6 * s, wantNext: 6 * s},
				{at: 1 * s, kind: Success, wantDelay: 6 * s, wantNext: 5 * s},
				{at: 6 * s, dispatch: true, wantDelay: 6 * s, wantNext: 6 * s},
				{at: 7 * s, kind: Success, wantDelay: 6 * s, wantNext: 5 * s},
				{at: 12 * s, dispatch: true, wantDelay: 6 * s, wantNext: 6 * s},
				{at: 13 * s, kind: Success, wantDelay: ms(5400), wantNext: ms(4400)},
				{at: 17*s + ms(400), dispatch: true, wantDelay: ms(5400), wantNext: ms(5400)},
				// Three more: 5.4 s · 0.9 = 4.86 s.
				{at: 18 * s, kind: Success, wantDelay: ms(5400), wantNext: ms(4800)},
				{at: 19 * s, kind: Success, wantDelay: ms(5400), wantNext: ms(3800)},
				{at: 20 * s, kind: Success, wantDelay: ms(4860), wantNext: ms(2260)},
			},
		},
		{
			name: "a failure breaks the streak",
			steps: []delayStep{
				{at: 0, kind: Success, wantDelay: 6 * s},
				{at: 1 * s, kind: Success, wantDelay: 6 * s},
				{at: 2 * s, kind: Failed, wantDelay: 6 * s},
				{at: 3 * s, kind: Success, wantDelay: 6 * s},
				{at: 4 * s, kind: Success, wantDelay: 6 * s},
				{at: 5 * s, kind: Canceled, wantDelay: 6 * s},
				{at: 6 * s, kind: Success, wantDelay: ms(5400)},
			},
		},
		{
			name: "a throttle: ×1.8 and a 10 s cooldown",
			steps: []delayStep{
				{at: 0, dispatch: true, wantDelay: 6 * s, wantNext: 6 * s},
				{at: 1 * s, kind: Success, wantDelay: 6 * s, wantNext: 5 * s},
				{at: 2 * s, kind: Throttled, wantDelay: ms(10800), wantNext: 10 * s},
				// In the cooldown: no second ×1.8, successes do not count.
				{at: 3 * s, kind: Throttled, wantDelay: ms(10800), wantNext: 9 * s},
				{at: 4 * s, kind: Success, wantDelay: ms(10800), wantNext: 8 * s},
				{at: 5 * s, kind: Success, wantDelay: ms(10800), wantNext: 7 * s},
				{at: 6 * s, kind: Success, wantDelay: ms(10800), wantNext: 6 * s},
				// The first dispatch goes at the end of the cooldown, the next
				// one a delay later.
				{at: 12 * s, dispatch: true, wantDelay: ms(10800), wantNext: ms(10800)},
				{at: 13 * s, kind: Success, wantDelay: ms(10800), wantNext: ms(9800)},
				{at: 14 * s, kind: Success, wantDelay: ms(10800), wantNext: ms(8800)},
				{at: 15 * s, kind: Success, wantDelay: ms(9720), wantNext: ms(6720)},
				// After the cooldown a throttle is a new event.
				{at: 16 * s, kind: Overloaded, wantDelay: ms(17496), wantNext: 10 * s},
			},
		},
		{
			name: "clamped to Max",
			cfg:  AIMDDelayConfig{Max: 15 * s},
			steps: []delayStep{
				{at: 0, kind: Throttled, wantDelay: ms(10800), wantNext: 10 * s},
				{at: 10 * s, kind: Throttled, wantDelay: 15 * s, wantNext: 10 * s},
				{at: 20 * s, kind: Throttled, wantDelay: 15 * s, wantNext: 10 * s},
			},
		},
		{
			name: "clamped to Min",
			cfg:  AIMDDelayConfig{Initial: 1 * s, Min: 800 * time.Millisecond},
			steps: []delayStep{
				{at: 0, kind: Success, wantDelay: 1 * s},
				{at: 1 * s, kind: Success, wantDelay: 1 * s},
				{at: 2 * s, kind: Success, wantDelay: ms(900)},
				{at: 3 * s, kind: Success, wantDelay: ms(900)},
				{at: 4 * s, kind: Success, wantDelay: ms(900)},
				{at: 5 * s, kind: Success, wantDelay: ms(810)},
				{at: 6 * s, kind: Success, wantDelay: ms(810)},
				{at: 7 * s, kind: Success, wantDelay: ms(810)},
				{at: 8 * s, kind: Success, wantDelay: ms(800)},
			},
		},
		{
			name: "Initial outside [Min, Max] is clamped",
			cfg:  AIMDDelayConfig{Initial: 90 * s},
			steps: []delayStep{
				{at: 0, dispatch: true, wantDelay: 60 * s, wantNext: 60 * s},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runDelaySteps(t, tt.cfg, tt.steps) })
	}
}

func TestAIMDDelayConfigDefaults(t *testing.T) {
	got := AIMDDelayConfig{}.withDefaults()
	want := AIMDDelayConfig{
		Initial: 6 * time.Second, Min: 10 * time.Millisecond, Max: 60 * time.Second,
		Successes: 3, Decrease: 0.9, Increase: 1.8, Cooldown: 10 * time.Second,
	}
	if got != want {
		t.Errorf("AIMDDelayConfig{}.withDefaults() = %+v, want %+v", got, want)
	}
}

// TestDelayEvents checks the events of a throttle and of its cooldown ending.
func TestDelayEvents(t *testing.T) {
	l := newDelayLaw(AIMDDelayConfig{})
	l.observe(stepT0, Outcome{Kind: Throttled})
	l.next(stepT0.Add(11 * time.Second))
	want := []Event{
		{Time: stepT0, Type: EventDelay, Value: 10.8, Reason: "throttled"},
		{Time: stepT0, Type: EventGateClose, Until: stepT0.Add(10 * time.Second), Reason: "cooldown"},
		{Time: stepT0.Add(10 * time.Second), Type: EventGateOpen, Reason: "cooldown"},
	}
	if len(l.events) != len(want) {
		t.Fatalf("events = %+v, want %+v", l.events, want)
	}
	for i := range want {
		if l.events[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, l.events[i], want[i])
		}
	}
}
