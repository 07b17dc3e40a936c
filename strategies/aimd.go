package strategies

import (
	"context"
	"sync"
	"time"
)

// AIMDConfig configures an AIMD. A zero field takes the default given with it.
type AIMDConfig struct {
	// Initial is the window at the start. Default 4.
	Initial int `json:"initial" yaml:"initial"`
	// Min and Max clamp the window. Defaults 1 and 1000.
	Min int `json:"min" yaml:"min"`
	Max int `json:"max" yaml:"max"`
	// Increase is what the window grows by per round trip while it is full.
	// Default 1.
	Increase float64 `json:"increase" yaml:"increase"`
	// Decrease multiplies the window on a throttle. Default 0.9.
	Decrease float64 `json:"decrease" yaml:"decrease"`
}

// withDefaults returns c with its zero fields set to the defaults and Initial
// clamped to [Min, Max].
func (c AIMDConfig) withDefaults() AIMDConfig {
	if c.Initial <= 0 {
		c.Initial = 4
	}
	if c.Min <= 0 {
		c.Min = 1
	}
	if c.Max <= 0 {
		c.Max = 1000
	}
	c.Max = max(c.Max, c.Min)
	c.Initial = min(max(c.Initial, c.Min), c.Max)
	if c.Increase <= 0 {
		c.Increase = 1
	}
	if c.Decrease <= 0 || c.Decrease >= 1 {
		c.Decrease = 0.9
	}
	return c
}

// AIMD limits the calls in flight to a window that it finds by additive
// increase and multiplicative decrease, as TCP's congestion avoidance does.
// Each success that ends while the window is full adds Increase/window to it,
// about +Increase per round trip; a throttle (429) or an overload (529/503)
// multiplies it by Decrease, at most once per round trip: a throttle of an
// attempt dispatched before the last decrease is the same congestion event
// and changes nothing. The window stays within [Min, Max]; at most
// floor(window) calls are in flight, admitted in arrival order.
//
// AIMD honours no retry-after itself: the retry policy (see Do) waits out a
// throttled call's server delay. It is the textbook controller that Adaptive
// improves on: from a small window it takes one round trip per call of
// concurrency to find a limit (Adaptive's slow start takes a few round trips
// in all), and each decrease forgets how far the limit was. Use it as the
// baseline for window control, or where a plain, well-understood controller
// is wanted.
//
// Stats reports Limit = floor(window), the calls it admits at once; events
// are EventLimit when that changes. It is safe for concurrent use.
type AIMD struct {
	m    meter
	mu   sync.Mutex
	law  aimdLaw
	line *line
}

var _ Strategy = (*AIMD)(nil)

// NewAIMD returns an AIMD configured by cfg.
func NewAIMD(cfg AIMDConfig, opts ...Option) *AIMD {
	a := &AIMD{law: newAIMDLaw(cfg), line: newLine()}
	a.m.init(opts)
	a.publishLocked(time.Now(), "initial")
	return a
}

// Acquire waits, in arrival order, for room in the window, or until ctx ends.
func (a *AIMD) Acquire(ctx context.Context, _ Cost) (Permit, error) {
	var seq uint64
	w, err := a.line.wait(ctx, &a.m, &a.mu, func(time.Time) (bool, time.Duration, bool) {
		if a.law.inFlight >= a.law.capacity() {
			return false, 0, false
		}
		seq = a.law.dispatch()
		return true, 0, false
	})
	if err != nil {
		return nil, err
	}
	finish := func(o Outcome, done bool) {
		a.mu.Lock()
		defer a.mu.Unlock()
		before := a.law.capacity()
		seq = a.law.observe(seq, o, done)
		if c := a.law.capacity(); c != before {
			a.publishLocked(time.Now(), o.Kind.String())
		}
		a.line.notifyLocked()
	}
	return newPermit(&a.m, w,
		func(o Outcome) { finish(o, false) },
		func(o Outcome) { finish(o, true) }), nil
}

// Stats implements Strategy.
func (a *AIMD) Stats() Stats { return a.m.snapshot() }

func (a *AIMD) publishLocked(now time.Time, reason string) {
	c := a.law.capacity()
	a.m.set(func(st *Stats) { st.Limit = float64(c) })
	a.m.emit(Event{Time: now, Type: EventLimit, Value: float64(c), Reason: reason})
}

// aimdLaw is AIMD's control law: a pure function of the dispatches and
// outcomes it is given, in order.
type aimdLaw struct {
	cfg      AIMDConfig
	window   float64
	inFlight int
	seq      uint64 // dispatches so far; an attempt's number
	cut      uint64 // the last attempt dispatched before the last decrease
}

func newAIMDLaw(cfg AIMDConfig) aimdLaw {
	cfg = cfg.withDefaults()
	return aimdLaw{cfg: cfg, window: float64(cfg.Initial)}
}

// capacity returns how many attempts may be in flight at once.
func (l *aimdLaw) capacity() int { return int(l.window) }

// dispatch records an attempt starting and returns its number.
func (l *aimdLaw) dispatch() uint64 {
	l.seq++
	l.inFlight++
	return l.seq
}

// observe learns from attempt seq ending with o. With done false the permit
// is kept for another attempt (a retry inside the slot), which observe
// records as dispatched now and whose number it returns.
func (l *aimdLaw) observe(seq uint64, o Outcome, done bool) uint64 {
	full := l.inFlight >= l.capacity()
	switch o.Kind {
	case Success:
		if full {
			l.window = min(l.window+l.cfg.Increase/l.window, float64(l.cfg.Max))
		}
	case Throttled, Overloaded:
		if seq > l.cut {
			l.window = max(l.window*l.cfg.Decrease, float64(l.cfg.Min))
			l.cut = l.seq
		}
	}
	l.inFlight--
	if done {
		return 0
	}
	return l.dispatch()
}
