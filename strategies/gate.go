package strategies

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/clock"
)

// gate is a retry-after gate: once a server asks a key's callers to wait, the
// gate stays closed until that time, for every caller of the key, so that the
// retries of a burst of throttled calls do not come back as a herd and no new
// call is sent into a limit the server has just said is exhausted.
//
// Its owner decides which throttles close it. A closed gate drains the whole
// pipeline for the server's delay: right when nothing better is known (a
// refusal of a call whose cost the caller did not give), wasted on a
// refusal that a smaller window already answers, and too long for a spent
// per-minute budget whose refill the caller can pace to, as Adaptive does
// with its copies of the published budgets (see Adaptive). Each refused
// call still waits out its own delay before its retry (see Do).
//
// The zero value is open. gate is a pure value: it takes the time as an
// argument and is guarded by its owner's lock.
type gate struct {
	until  time.Time // closed before until
	opened bool      // the opening at until has been reported
}

// close closes the gate until until, or keeps it closed until later if it
// already is. It reports whether that moved the opening time.
func (g *gate) close(now, until time.Time) bool {
	if !until.After(now) || !until.After(g.until) {
		return false
	}
	g.until = until
	g.opened = false
	return true
}

// wait returns how long a caller must wait at now before passing the gate:
// 0 when it is open.
func (g *gate) wait(now time.Time) time.Duration {
	if now.Before(g.until) {
		return g.until.Sub(now)
	}
	return 0
}

// reopened reports, once per closing, that the gate is open again at now, so
// the owner can emit EventGateOpen (dated g.until, when it opened).
func (g *gate) reopened(now time.Time) bool {
	if g.opened || g.until.IsZero() || now.Before(g.until) {
		return false
	}
	g.opened = true
	return true
}

// An admitFunc is a strategy's admission decision, evaluated with the strategy's lock
// held: admit the caller at now (ok, having taken whatever the admission
// takes), or say when to ask again. wait is how long until the answer may
// change by itself (0: only when the strategy's state changes); gated says
// that the caller is held by a retry-after gate, so that the time counts as
// Waits.RetryAfter rather than Waits.Slot.
type admitFunc func(now time.Time) (ok bool, wait time.Duration, gated bool)

// line is the blocking wrapper in front of a pure admission core: callers
// wait in arrival order, and only the one at the head of the line evaluates
// the core, again whenever the core's state changes (notifyLocked) or a time
// it named has come. A caller never overtakes an earlier one, so no caller
// starves and a herd released by a gate passes one at a time.
type line struct {
	clk     clock.Clock
	turn    *slots       // the head-of-line token: one slot, taken in arrival order
	changed *clock.Event // fired and replaced by notifyLocked

	// The time the head of the line has spent held by a gate, so that the
	// callers behind it can count that part of their wait as RetryAfter:
	// gatedTotal up to the last such wait, plus the time since gatedSince if
	// one is under way. Guarded by the owner's lock.
	gatedTotal time.Duration
	gatedSince time.Time

	// waiting counts the callers in line (those the meter counts as
	// queued): how much work waits on the owner's limit.
	waiting atomic.Int64
}

// queued returns the callers waiting in line.
func (l *line) queued() int { return int(l.waiting.Load()) }

// gatedLocked returns the time the head of the line has spent held by a
// gate, up to now.
func (l *line) gatedLocked(now time.Time) time.Duration {
	if l.gatedSince.IsZero() {
		return l.gatedTotal
	}
	return l.gatedTotal + now.Sub(l.gatedSince)
}

// newLine returns a line whose callers wait through c (nil: real time).
func newLine(c clock.Clock) *line {
	c = clock.Or(c)
	return &line{clk: c, turn: newSlotsOn(c, 1), changed: c.NewEvent()}
}

// notifyLocked wakes the head of the line to evaluate the core again. Call it
// with the owner's lock held, after any change that could admit a caller.
func (l *line) notifyLocked() {
	l.changed.Fire()
	l.changed = l.clk.NewEvent()
}

// wait waits in line until ok evaluated under mu admits the caller, or ctx
// ends. It counts the caller as queued on m while it waits and returns the
// time waited by cause; when ctx ends first it records that wait on m and
// returns ctx's error, having admitted nothing.
func (l *line) wait(ctx context.Context, m *meter, mu sync.Locker, ok admitFunc) (Waits, error) {
	var (
		w      Waits
		queued bool
		start  = l.clk.Now()
	)
	giveUp := func() (Waits, error) {
		if queued {
			m.dequeue()
			l.waiting.Add(-1)
		}
		m.gaveUp(w)
		return Waits{}, ctx.Err()
	}
	if !l.turn.tryAcquire() {
		// In line behind the head: the part of the wait during which the
		// head was held by a gate is RetryAfter, the rest Slot.
		m.enqueue()
		l.waiting.Add(1)
		queued = true
		mu.Lock()
		g0 := l.gatedLocked(l.clk.Now())
		mu.Unlock()
		err := l.turn.acquire(ctx)
		mu.Lock()
		gated := l.gatedLocked(l.clk.Now()) - g0
		mu.Unlock()
		w.RetryAfter += gated
		w.Slot += clock.Since(l.clk, start) - gated
		if err != nil {
			return giveUp()
		}
	}
	defer l.turn.release()

	for {
		mu.Lock()
		now := l.clk.Now()
		admitted, d, gated := ok(now)
		if !admitted && gated {
			l.gatedSince = now
		}
		changed := l.changed
		mu.Unlock()
		if admitted {
			if queued {
				m.dequeue()
				l.waiting.Add(-1)
			}
			return w, nil
		}
		if !queued {
			m.enqueue()
			l.waiting.Add(1)
			queued = true
		}
		// d == 0: only a change of the state can admit the caller.
		_, err := l.clk.Wait(ctx, changed, d)
		waited := clock.Since(l.clk, now)
		if gated {
			mu.Lock()
			l.gatedTotal += waited
			l.gatedSince = time.Time{}
			mu.Unlock()
			w.RetryAfter += waited
		} else {
			w.Slot += waited
		}
		if err != nil {
			return giveUp()
		}
	}
}
