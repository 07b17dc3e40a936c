package strategies

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/clock"
)

// An Option configures what every strategy has in common, whatever its kind.
// Each constructor accepts options after its Config.
type Option interface {
	apply(*options)
}

type options struct {
	observer Observer
	clock    clock.Clock
}

// newOptions applies opts.
func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	o.clock = clock.Or(o.clock)
	return o
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithObserver delivers the strategy's events (a new limit, delay or rate, a
// retry-after gate closing or opening) to obs, synchronously and in order.
// obs must not block or call back into the strategy.
func WithObserver(obs Observer) Option {
	return optionFunc(func(o *options) { o.observer = obs })
}

// WithClock runs the strategy on c: it reads the time from c and waits
// through it, and so do Do between attempts under it and engine.Run (see
// ClockOf). It is the one way to give a strategy its clock: clock.Sim for a
// simulated run. Without it, or with a nil c, the strategy runs in real time.
func WithClock(c clock.Clock) Option {
	return optionFunc(func(o *options) { o.clock = c })
}

// A Clocked strategy tells the clock it runs on. Every strategy in this
// package is one (its clock is the one WithClock gave it); a strategy that
// wraps another should be one too, telling the wrapped strategy's clock
// (ClockOf), so that what runs under it waits on the same clock.
type Clocked interface {
	Clock() clock.Clock
}

// ClockOf returns the clock s runs on: s.Clock() when s is Clocked (and
// says one), clock.Real otherwise. Do waits on it between attempts, and
// engine.Run runs on it, so that a run has the one clock its strategy was
// built with.
func ClockOf(s Strategy) clock.Clock {
	if c, ok := s.(Clocked); ok {
		return clock.Or(c.Clock())
	}
	return clock.Real
}

// Waits is the time one call, or one Acquire, spent waiting, by cause. The
// causes add up to the time spent not attempting.
type Waits struct {
	// Slot is time waiting for a concurrency slot or a dispatch turn (pacing
	// to a request rate or a delay between dispatches).
	Slot time.Duration `json:"slot_ns"`
	// Tokens is time waiting for a token budget.
	Tokens time.Duration `json:"tokens_ns"`
	// RetryAfter is time waiting because a server asked for it: a strategy's
	// retry-after gate, or Do sleeping a server's retry-after delay.
	RetryAfter time.Duration `json:"retry_after_ns"`
	// Backoff is time Do slept between attempts with no server delay, by the
	// retry policy's exponential backoff. Acquire never reports it.
	Backoff time.Duration `json:"backoff_ns"`
}

// Total returns the sum of all causes.
func (w Waits) Total() time.Duration { return w.Slot + w.Tokens + w.RetryAfter + w.Backoff }

// Add returns the cause-by-cause sum of w and v.
func (w Waits) Add(v Waits) Waits {
	return Waits{
		Slot:       w.Slot + v.Slot,
		Tokens:     w.Tokens + v.Tokens,
		RetryAfter: w.RetryAfter + v.RetryAfter,
		Backoff:    w.Backoff + v.Backoff,
	}
}

// A WaitReporter is a Permit that knows how long the Acquire that granted it
// waited, by cause. Every strategy in this package returns permits that
// implement it; Do uses it to fill Call.Waits and, for a permit that does not,
// counts the whole of Acquire as Waits.Slot.
type WaitReporter interface {
	Waited() Waits
}

// meter keeps the counters and state that every strategy reports through
// Stats, with the same meaning whichever strategy it is, and delivers the
// strategy's events. A strategy embeds one (the zero value is ready; init
// applies the common options) and calls it at these points:
//
//   - enqueue when a caller starts waiting in Acquire, dequeue when it stops
//     (admitted or not);
//   - grant when Acquire returns a permit (newPermit does it);
//   - gaveUp with what a caller waited before Acquire failed;
//   - the permit calls observe and release for Observe and Done;
//   - set for the gauges (Limit, Delay, Rate, Tokens) and emit for events.
//
// A meter is safe for concurrent use. It never calls back into the strategy,
// so a strategy may call it with its own lock held.
type meter struct {
	mu       sync.Mutex
	stats    Stats
	observer Observer
}

// init takes the common options that concern the meter (the observer).
// Call it once, from the constructor.
func (m *meter) init(o options) {
	m.observer = o.observer
}

// enqueue records a caller starting to wait in Acquire.
func (m *meter) enqueue() {
	m.mu.Lock()
	m.stats.Queued++
	m.mu.Unlock()
}

// dequeue records a caller no longer waiting in Acquire.
func (m *meter) dequeue() {
	m.mu.Lock()
	m.stats.Queued--
	m.mu.Unlock()
}

// grant records a permit granted after waiting w.
func (m *meter) grant(w Waits) {
	m.mu.Lock()
	m.stats.Permits++
	m.stats.InFlight++
	m.addWaits(w)
	m.mu.Unlock()
}

// gaveUp records the waits of a caller whose Acquire failed.
func (m *meter) gaveUp(w Waits) {
	m.mu.Lock()
	m.addWaits(w)
	m.mu.Unlock()
}

func (m *meter) addWaits(w Waits) {
	m.stats.WaitSlot += w.Slot
	m.stats.WaitTokens += w.Tokens
	m.stats.WaitRetryAfter += w.RetryAfter
}

// observe counts an attempt's outcome.
func (m *meter) observe(o Outcome) {
	m.mu.Lock()
	m.count(o)
	m.mu.Unlock()
}

// release counts the last outcome of a permit and releases it.
func (m *meter) release(o Outcome) {
	m.mu.Lock()
	m.count(o)
	m.stats.InFlight--
	m.mu.Unlock()
}

func (m *meter) count(o Outcome) {
	if o.Kind == Abandoned {
		m.stats.Cancels++
		return
	}
	m.stats.Attempts++
	switch o.Kind {
	case Success:
		m.stats.Successes++
	case Throttled:
		m.stats.Throttles++
	case Overloaded:
		m.stats.Overloads++
	case Quota:
		m.stats.Quota++
	case Canceled:
		m.stats.Cancels++
	default:
		m.stats.Errors++
	}
}

// set updates the gauges under the meter's lock.
func (m *meter) set(f func(*Stats)) {
	m.mu.Lock()
	f(&m.stats)
	m.mu.Unlock()
}

// emit delivers e to the observer, if any. Events are delivered one at a
// time, in the order emit is called.
func (m *meter) emit(e Event) {
	if m.observer == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.observer(e)
}

// snapshot returns the counters and gauges as last set.
func (m *meter) snapshot() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// permit is the Permit every strategy in this package returns. It enforces
// the contract (Done exactly once, no Observe after Done) by panicking, like
// a sync.WaitGroup going negative, because a second Done would silently
// corrupt the strategy's accounting.
type permit struct {
	m     *meter
	waits Waits
	// onObserve and onDone are the strategy's own learning and release; either
	// may be nil. They run after the meter has counted the outcome.
	onObserve func(Outcome)
	onDone    func(Outcome)
	done      atomic.Bool
}

// newPermit records the grant on m and returns the permit.
func newPermit(m *meter, w Waits, onObserve, onDone func(Outcome)) *permit {
	m.grant(w)
	return &permit{m: m, waits: w, onObserve: onObserve, onDone: onDone}
}

// Observe implements Permit.
func (p *permit) Observe(o Outcome) {
	if p.done.Load() {
		panic("strategies: Observe after Done")
	}
	if o.Kind == Abandoned {
		panic("strategies: Observe with kind abandoned")
	}
	p.m.observe(o)
	if p.onObserve != nil {
		p.onObserve(o)
	}
}

// Done implements Permit.
func (p *permit) Done(o Outcome) {
	if p.done.Swap(true) {
		panic("strategies: Done called more than once")
	}
	p.m.release(o)
	if p.onDone != nil {
		p.onDone(o)
	}
}

// Waited implements WaitReporter.
func (p *permit) Waited() Waits { return p.waits }

var (
	_ Permit       = (*permit)(nil)
	_ WaitReporter = (*permit)(nil)
)
