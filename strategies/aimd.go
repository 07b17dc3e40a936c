package strategies

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ratelab/ratelab/clock"
)

// AIMDConfig configures an AIMD. A zero field takes the default given with it.
type AIMDConfig struct {
	// Initial is the window at the start. Default 4.
	Initial int `json:"initial" yaml:"initial"`
	// Min and Max clamp the window. Defaults 1 and no bound above (the
	// window grows only while it is full, so never far above the callers).
	Min int `json:"min" yaml:"min"`
	Max int `json:"max" yaml:"max"`
	// Increase is what the window grows by per round trip while it is full.
	// Default 1.
	Increase float64 `json:"increase" yaml:"increase"`
	// Decrease multiplies the window on a throttle. Default 0.9.
	Decrease float64 `json:"decrease" yaml:"decrease"`
}

// noBound is the Max of a window with none: a window grows only while it
// is full, so it never comes near it.
const noBound = math.MaxInt32

// windowDefaults gives a window's zero bounds their defaults (initial 4,
// min 1, no max), raises max to at least min, and clamps initial to
// [min, max]; aimd and adaptive share it.
func windowDefaults(initial, lo, hi int) (int, int, int) {
	if initial <= 0 {
		initial = 4
	}
	if lo <= 0 {
		lo = 1
	}
	if hi <= 0 {
		hi = noBound
	}
	hi = max(hi, lo)
	return min(max(initial, lo), hi), lo, hi
}

// withDefaults returns c with its zero fields set to the defaults and Initial
// clamped to [Min, Max].
func (c AIMDConfig) withDefaults() AIMDConfig {
	c.Initial, c.Min, c.Max = windowDefaults(c.Initial, c.Min, c.Max)
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
//
// Its control law, its use, its Stats and events are the package
// documentation's "AIMD". It is safe for concurrent use.
type AIMD struct {
	m    meter
	clk  clock.Clock
	mu   sync.Mutex
	law  aimdLaw
	line *line
}

var _ Strategy = (*AIMD)(nil)

// NewAIMD returns an AIMD configured by cfg.
func NewAIMD(cfg AIMDConfig, opts ...Option) *AIMD {
	o := newOptions(opts)
	c := o.clock
	a := &AIMD{clk: c, law: newAIMDLaw(cfg), line: newLine(c)}
	a.m.init(o)
	a.publishLocked(c.Now(), "initial")
	return a
}

// Acquire waits, in arrival order, for room in the window, or until ctx ends.
func (a *AIMD) Acquire(ctx context.Context, _ Cost) (Permit, error) {
	var seq uint64
	var limit int
	w, err := a.line.wait(ctx, &a.m, &a.mu, func(time.Time) (bool, time.Duration, bool) {
		if !a.law.admit() {
			return false, 0, false
		}
		limit = a.law.capacity()
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
			a.publishLocked(a.clk.Now(), o.Kind.String())
		}
		a.line.notifyLocked()
	}
	return &windowPermit{newPermit(&a.m, w,
		func(o Outcome) { finish(o, false) },
		func(o Outcome) { finish(o, true) }), limit}, nil
}

// Stats implements Strategy.
func (a *AIMD) Stats() Stats { return a.m.snapshot() }

func (a *AIMD) publishLocked(now time.Time, reason string) {
	c := a.law.capacity()
	bound := windowBound(c, a.law.cfg.Min, a.law.cfg.Max)
	a.m.set(func(st *Stats) { st.Limit, st.Bound = float64(c), bound })
	a.m.emit(Event{Time: now, Type: EventLimit, Value: float64(c), Reason: reason})
}

// windowBound returns Stats.Bound for a window admitting c calls with
// bounds lo and hi: "max: hi" at a configured Max, "min: lo" at a Min above
// 1 (a floor of 1 holds nothing back), "" otherwise.
func windowBound(c, lo, hi int) string {
	switch {
	case hi < noBound && c >= hi:
		return fmt.Sprintf("max: %d", hi)
	case lo > 1 && c <= lo:
		return fmt.Sprintf("min: %d", lo)
	}
	return ""
}

// aimdLaw is AIMD's control law: a pure function of the dispatches and
// outcomes it is given, in order.
type aimdLaw struct {
	cfg      AIMDConfig
	window   float64
	inFlight int
	seq      uint64 // dispatches so far; an attempt's number
	cut      uint64 // the last attempt dispatched before the last decrease
	// full is the number of the last attempt dispatched when the window was
	// last seen full: the window bound during every attempt in flight then,
	// those numbered up to full.
	full uint64
}

func newAIMDLaw(cfg AIMDConfig) aimdLaw {
	cfg = cfg.withDefaults()
	return aimdLaw{cfg: cfg, window: float64(cfg.Initial)}
}

// capacity returns how many attempts may be in flight at once.
func (l *aimdLaw) capacity() int { return int(l.window) }

// admit reports whether an attempt may start now, and records a window
// found full.
func (l *aimdLaw) admit() bool {
	if l.inFlight >= l.capacity() {
		l.full = l.seq
		return false
	}
	return true
}

// dispatch records an attempt starting and returns its number.
func (l *aimdLaw) dispatch() uint64 {
	l.seq++
	l.inFlight++
	if l.inFlight >= l.capacity() {
		l.full = l.seq
	}
	return l.seq
}

// observe learns from attempt seq ending with o. With done false the permit
// is kept for another attempt (a retry inside the slot), which observe
// records as dispatched now and whose number it returns.
func (l *aimdLaw) observe(seq uint64, o Outcome, done bool) uint64 {
	if l.inFlight >= l.capacity() {
		l.full = l.seq
	}
	switch o.Kind {
	case Success:
		if seq <= l.full {
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

// Clock returns the clock the strategy runs on (WithClock).
func (a *AIMD) Clock() clock.Clock { return a.clk }
