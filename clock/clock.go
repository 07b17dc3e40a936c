package clock

import (
	"context"
	"sync/atomic"
	"time"
)

// A Clock is the time and the way of waiting of one run.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Go runs f in a new goroutine that takes part in the run.
	Go(f func())
	// Sleep waits d, or until ctx ends and returns ctx.Err(). A d of 0
	// or less returns ctx.Err() at once.
	Sleep(ctx context.Context, d time.Duration) error
	// Wait waits until e has fired (fired true), d has passed (when d > 0;
	// fired false, err nil), or ctx ends (ctx.Err()). A fired e returns at
	// once, even if ctx has ended.
	Wait(ctx context.Context, e *Event, d time.Duration) (fired bool, err error)
	// AfterFunc calls f in a goroutine of the run after d. stop prevents
	// the call if it has not started, and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
	// NewEvent returns an event not fired yet, which this clock's Wait
	// can wait for.
	NewEvent() *Event
}

// An Event fires once; Wait returns when it has. Fire it from any goroutine
// of the run, and wait for it with the clock that made it (NewEvent).
type Event struct {
	fired atomic.Bool
	ch    chan struct{} // closed as it fires; nil for a simulated clock's
	// onFire, when set (by a simulated clock), is called once, as the
	// event fires, before Fire returns.
	onFire func(*Event)
	// waiters are the goroutines a Sim has blocked on the event, guarded
	// by the Sim's lock.
	waiters []simWaiter
}

// Fire fires e. Firing it again does nothing.
func (e *Event) Fire() {
	if !e.fired.CompareAndSwap(false, true) {
		return
	}
	if e.ch != nil {
		close(e.ch)
	}
	if e.onFire != nil {
		e.onFire(e)
	}
}

// Fired reports whether e has fired.
func (e *Event) Fired() bool { return e.fired.Load() }

// Since returns the time elapsed on c since t.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Or returns c, or Real when c is nil: a nil Clock in a config means real
// time.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

// Real is the clock of the time package.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Go(f func()) { go f() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	_, err := realClock{}.Wait(ctx, nil, d)
	return err
}

func (realClock) Wait(ctx context.Context, e *Event, d time.Duration) (bool, error) {
	var fired <-chan struct{}
	if e != nil {
		if e.Fired() {
			return true, nil
		}
		fired = e.ch
	}
	if e == nil && d <= 0 {
		return false, ctx.Err()
	}
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-fired:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

func (realClock) NewEvent() *Event { return &Event{ch: make(chan struct{})} }
