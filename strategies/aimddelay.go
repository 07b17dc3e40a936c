package strategies

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/ratelab/ratelab/clock"
)

// AIMDDelayConfig configures an AIMDDelay. A zero field takes the default
// given with it, which is the case study's controller.
type AIMDDelayConfig struct {
	// Initial is the delay between dispatches at the start (initial_delay
	// in a scenario). Default 6 s.
	Initial time.Duration `json:"initial_delay" yaml:"initial_delay"`
	// Min and Max clamp the delay (min_delay and max_delay). Defaults 10 ms
	// and 60 s.
	Min time.Duration `json:"min_delay" yaml:"min_delay"`
	Max time.Duration `json:"max_delay" yaml:"max_delay"`
	// Successes is how many consecutive successes shrink the delay. Default 3.
	Successes int `json:"successes" yaml:"successes"`
	// Decrease multiplies the delay after Successes consecutive successes.
	// Default 0.9 (10 % shorter).
	Decrease float64 `json:"decrease" yaml:"decrease"`
	// Increase multiplies the delay on a throttle. Default 1.8.
	Increase float64 `json:"increase" yaml:"increase"`
	// Cooldown is the pause after a throttle (see AIMDDelay). Default 10 s.
	Cooldown time.Duration `json:"cooldown" yaml:"cooldown"`
}

// withDefaults returns c with its zero fields set to the defaults and the
// initial delay clamped to [Min, Max].
func (c AIMDDelayConfig) withDefaults() AIMDDelayConfig {
	if c.Initial <= 0 {
		c.Initial = 6 * time.Second
	}
	if c.Min <= 0 {
		c.Min = 10 * time.Millisecond
	}
	if c.Max <= 0 {
		c.Max = 60 * time.Second
	}
	c.Max = max(c.Max, c.Min)
	c.Initial = min(max(c.Initial, c.Min), c.Max)
	if c.Successes <= 0 {
		c.Successes = 3
	}
	if c.Decrease <= 0 || c.Decrease >= 1 {
		c.Decrease = 0.9
	}
	if c.Increase <= 1 {
		c.Increase = 1.8
	}
	if c.Cooldown <= 0 {
		c.Cooldown = 10 * time.Second
	}
	return c
}

// AIMDDelay paces dispatches with an adaptive delay between them: the
// controller of the batch runtime's case study, exactly.
//
// Its schedule, cooldown, use, Stats and events are the package
// documentation's "AIMDDelay". It is safe for concurrent use.
type AIMDDelay struct {
	m    meter
	mu   sync.Mutex
	clk  clock.Clock
	law  delayLaw
	line *line
}

var _ Strategy = (*AIMDDelay)(nil)

// NewAIMDDelay returns an AIMDDelay configured by cfg.
func NewAIMDDelay(cfg AIMDDelayConfig, opts ...Option) *AIMDDelay {
	o := newOptions(opts)
	c := o.clock
	a := &AIMDDelay{clk: c, law: newDelayLaw(cfg), line: newLine(c)}
	a.m.init(o)
	a.publishLocked()
	return a
}

// Acquire waits, in arrival order, until the delay since the previous
// dispatch has passed and no cooldown is running, or until ctx ends.
func (a *AIMDDelay) Acquire(ctx context.Context, _ Cost) (Permit, error) {
	w, err := a.line.wait(ctx, &a.m, &a.mu, func(now time.Time) (bool, time.Duration, bool) {
		d := a.law.next(now)
		a.publishLocked()
		if d > 0 {
			return false, d, false
		}
		a.law.dispatch(now)
		return true, 0, false
	})
	if err != nil {
		return nil, err
	}
	learn := func(o Outcome) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.law.observe(a.clk.Now(), o)
		a.publishLocked()
		a.line.notifyLocked()
	}
	return newPermit(&a.m, w, learn, learn), nil
}

// Stats implements Strategy.
func (a *AIMDDelay) Stats() Stats { return a.m.snapshot() }

// publishLocked sets the gauges and emits the law's pending events.
func (a *AIMDDelay) publishLocked() {
	d := a.law.delay
	bound := ""
	switch {
	case d <= a.law.cfg.Min:
		bound = "min_delay: " + a.law.cfg.Min.String()
	case d >= a.law.cfg.Max:
		bound = "max_delay: " + a.law.cfg.Max.String()
	}
	a.m.set(func(st *Stats) {
		st.Delay = d.Seconds()
		st.Rate = 1 / d.Seconds()
		st.Bound = bound
	})
	for _, e := range a.law.events {
		a.m.emit(e)
	}
	a.law.events = a.law.events[:0]
}

// delayLaw is AIMDDelay's control law, a pure function of the times and
// outcomes it is given.
type delayLaw struct {
	cfg      AIMDDelayConfig
	delay    time.Duration
	streak   int       // consecutive successes since the last change
	last     time.Time // the last dispatch; zero before the first
	cooldown gate      // closed for cfg.Cooldown after a throttle
	events   []Event   // state changes not yet delivered
}

func newDelayLaw(cfg AIMDDelayConfig) delayLaw {
	cfg = cfg.withDefaults()
	return delayLaw{cfg: cfg, delay: cfg.Initial}
}

// next returns how long after now the next dispatch may go: 0 if now.
func (l *delayLaw) next(now time.Time) time.Duration {
	l.tick(now)
	if w := l.cooldown.wait(now); w > 0 {
		return w
	}
	if l.last.IsZero() || l.last.Before(l.cooldown.until) {
		return 0 // the first dispatch, or the first after a cooldown
	}
	return max(0, l.last.Add(l.delay).Sub(now))
}

// tick records the end of a cooldown that time alone brought by now. Every
// entry point calls it first, so that events stay in time order.
func (l *delayLaw) tick(now time.Time) {
	if l.cooldown.reopened(now) {
		l.events = append(l.events, Event{Time: l.cooldown.until, Type: EventGateOpen, Reason: "cooldown"})
	}
}

// dispatch records a dispatch at now.
func (l *delayLaw) dispatch(now time.Time) { l.last = now }

// observe learns from an attempt that ended at now with o.
func (l *delayLaw) observe(now time.Time, o Outcome) {
	l.tick(now)
	cooling := l.cooldown.wait(now) > 0
	switch o.Kind {
	case Success:
		if cooling {
			return
		}
		l.streak++
		if l.streak >= l.cfg.Successes {
			l.streak = 0
			l.setDelay(now, scaleDuration(l.delay, l.cfg.Decrease), "successes")
		}
	case Throttled, Overloaded:
		l.streak = 0
		if cooling {
			return
		}
		l.setDelay(now, scaleDuration(l.delay, l.cfg.Increase), o.Kind.String())
		until := now.Add(l.cfg.Cooldown)
		l.cooldown.close(now, until)
		l.events = append(l.events, Event{Time: now, Type: EventGateClose, Until: until, Reason: "cooldown"})
	case Failed, Quota:
		l.streak = 0
	}
}

// setDelay sets the delay to d clamped to [Min, Max].
func (l *delayLaw) setDelay(now time.Time, d time.Duration, reason string) {
	d = min(max(d, l.cfg.Min), l.cfg.Max)
	if d == l.delay {
		return
	}
	l.delay = d
	l.events = append(l.events, Event{Time: now, Type: EventDelay, Value: d.Seconds(), Reason: reason})
}

// scaleDuration returns d·f rounded to the nanosecond, so that 6 s·0.9 is exactly
// 5.4 s rather than a nanosecond short of it.
func scaleDuration(d time.Duration, f float64) time.Duration {
	return time.Duration(math.Round(float64(d) * f))
}

// Clock returns the clock the strategy runs on (WithClock).
func (a *AIMDDelay) Clock() clock.Clock { return a.clk }
