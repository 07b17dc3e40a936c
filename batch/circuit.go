package batch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// CircuitThreshold is how many attempts in a row must fail with a transient
// connection error (provider.Transient) before a batch's circuit opens.
const CircuitThreshold = 3

// DefaultMaxOutage is Batch.MaxOutage when it is zero.
const DefaultMaxOutage = 15 * time.Minute

// ErrOutage is what Batch.Run's error answers errors.Is for when the
// endpoint stayed unreachable for longer than Batch.MaxOutage.
var ErrOutage = errors.New("batch: endpoint unreachable")

// ErrQuota is what Batch.Run's error answers errors.Is for when the batch
// stopped because the key's quota or spend cap is spent: the refused items
// and those not yet made are left for a resume once the quota resets.
var ErrQuota = errors.New("batch: quota or spend cap spent")

// Outage is a change of a batch's circuit: the endpoint stopped answering
// (Open: the batch pauses) or answered again (the batch resumes).
type Outage struct {
	Open bool
	At   time.Time
	// Failures is, when the circuit opens, the connection failures in a row
	// that opened it; when it closes, every attempt that failed while it was
	// open (the probes, and the attempts already under way).
	Failures int
	// Probes is the attempts let through while it was open (when it closes).
	Probes int
	// Down is how long it was open (when it closes).
	Down time.Duration
	// Err is the last connection error.
	Err string
}

// String describes the change for a log line.
func (o Outage) String() string {
	if o.Open {
		return fmt.Sprintf("endpoint unreachable: %d connection failures in a row (last: %s); batch paused, probing with backoff (%s doubling to %s)",
			o.Failures, o.Err, strategies.InitialBackoff, strategies.MaxBackoff)
	}
	return fmt.Sprintf("endpoint answering again after %s (%s, %s); batch resumed",
		o.Down.Round(time.Millisecond), plural(o.Probes, "probe"), plural(o.Failures, "failed attempt"))
}

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// circuit pauses a whole batch while its endpoint does not answer: after
// CircuitThreshold attempts in a row fail with a transient connection error
// it opens, and then lets one attempt through (a probe) per backoff period
// (strategies.Backoff: 0.5 s doubling to 8 s, jittered), holding every other
// attempt before its strategy's Acquire, so that neither slots nor retries
// are spent on a server that is down. The first attempt that gets any
// response closes it. It is a gate in front of the strategy rather than a
// second queue: the items themselves wait in their workers, between rounds
// (Config.Again).
type circuit struct {
	maxOutage time.Duration    // <= 0: never give up
	onChange  func(Outage)     // called outside the lock
	giveUp    func(err error)  // stops the run
	now       func() time.Time // time.Now

	mu       sync.Mutex
	rng      *rand.Rand // the probes' jitter, seeded so that a run in virtual time repeats
	open     bool
	fails    int // closed: transient failures in a row; open: failures during the outage
	probes   int
	openedAt time.Time
	next     time.Time     // when the next probe may go
	closed   chan struct{} // closed when an open circuit closes
	lastErr  string
	gaveUp   bool

	outages int
	down    time.Duration
}

func newCircuit(seed int64, maxOutage time.Duration, onChange func(Outage), giveUp func(error)) *circuit {
	return &circuit{maxOutage: maxOutage, onChange: onChange, giveUp: giveUp, now: time.Now,
		rng: rand.New(rand.NewPCG(uint64(seed), 0x6a09e667f3bcc909))}
}

// observe learns from an attempt: a response closes the circuit; a
// transient connection failure counts towards opening it. Other outcomes
// (canceled, a request that cannot be sent) say nothing of the endpoint,
// and neither does an attempt that started before the circuit opened: only
// a probe can tell that the endpoint is back.
func (c *circuit) observe(a engine.Attempt) {
	o := a.Outcome
	transient := provider.Transient(o)
	if o.Status == 0 && !transient {
		return
	}
	now := c.now()
	var ev *Outage
	var stop error
	c.mu.Lock()
	if c.open && !a.Start.After(c.openedAt) {
		c.mu.Unlock()
		return
	}
	switch {
	case o.Status != 0:
		if c.open {
			c.open = false
			close(c.closed)
			down := now.Sub(c.openedAt)
			c.down += down
			ev = &Outage{At: now, Failures: c.fails, Probes: c.probes, Down: down, Err: c.lastErr}
		}
		c.fails = 0
	case !c.open:
		c.fails++
		c.lastErr = o.Err.Error()
		if c.fails >= CircuitThreshold {
			c.open, c.openedAt, c.probes = true, now, 0
			c.next = now.Add(strategies.Backoff(0, c.rng.Int64N))
			c.closed = make(chan struct{})
			c.outages++
			ev = &Outage{Open: true, At: now, Failures: c.fails, Err: c.lastErr}
			c.fails = 0
		}
	default:
		c.fails++
		c.lastErr = o.Err.Error()
		if c.maxOutage > 0 && now.Sub(c.openedAt) >= c.maxOutage && !c.gaveUp {
			c.gaveUp = true
			stop = fmt.Errorf("%w for %s (last: %s): stopped; the items without a result are made when the batch is rerun",
				ErrOutage, now.Sub(c.openedAt).Round(time.Second), c.lastErr)
		}
	}
	c.mu.Unlock()
	if ev != nil && c.onChange != nil {
		c.onChange(*ev)
	}
	if stop != nil {
		c.giveUp(stop)
	}
}

// wait returns at once while the circuit is closed. While it is open it
// returns for one caller per backoff period (the probe, reported by probe)
// and holds the others until the circuit closes, their turn to probe comes,
// or ctx ends.
func (c *circuit) wait(ctx context.Context) (probe bool, err error) {
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		c.mu.Lock()
		if !c.open {
			c.mu.Unlock()
			return false, nil
		}
		now := c.now()
		if !now.Before(c.next) {
			c.probes++
			c.next = now.Add(strategies.Backoff(c.probes, c.rng.Int64N))
			c.mu.Unlock()
			return true, nil
		}
		d, closed := c.next.Sub(now), c.closed
		c.mu.Unlock()
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-closed:
		case <-t.C:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// isOpen reports whether the circuit is open.
func (c *circuit) isOpen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// stats returns how many times the circuit opened and how long it was open
// in all (including now, when it is open).
func (c *circuit) stats() (outages int, down time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	down = c.down
	if c.open {
		down += c.now().Sub(c.openedAt)
	}
	return c.outages, down
}

// gated is a Strategy whose Acquire first waits for the circuit. A caller
// that passed it while the circuit was closed, then waited in the
// strategy's Acquire while the circuit opened (a worker queued for a slot
// when the server went down), hands the permit back unused (Abandoned: the
// strategies count a cancellation and learn nothing) and waits at the
// circuit again, so that an open circuit lets only its probes through.
type gated struct {
	strategies.Strategy
	c *circuit
}

// Clock tells the wrapped strategy's clock, so that Do waits on it.
func (g gated) Clock() clock.Clock { return strategies.ClockOf(g.Strategy) }

// errCircuitOpen is the reason given with a permit handed back unused.
var errCircuitOpen = errors.New("batch: endpoint unreachable; the batch is paused")

func (g gated) Acquire(ctx context.Context, cost strategies.Cost) (strategies.Permit, error) {
	for {
		probe, err := g.c.wait(ctx)
		if err != nil {
			return nil, err
		}
		pm, err := g.Strategy.Acquire(ctx, cost)
		if err != nil || probe || !g.c.isOpen() {
			return pm, err
		}
		pm.Done(strategies.Outcome{Kind: strategies.Abandoned, Err: errCircuitOpen})
	}
}
