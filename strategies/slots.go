package strategies

import (
	"container/list"
	"context"
	"sync"

	"github.com/ratelab/ratelab/clock"
)

// slots is a FIFO counting semaphore whose limit may change while callers
// wait. Waiters are admitted in arrival order: a caller never overtakes an
// earlier one still waiting, so a steady stream of new callers cannot starve
// an old one. A limit of 0 or less means unlimited. The zero value is an
// unlimited semaphore waiting in real time; clk, when set, is the clock its
// callers wait through.
type slots struct {
	clk     clock.Clock
	mu      sync.Mutex
	limit   int
	used    int
	waiters list.List // of *clock.Event, fired when granted
}

// newSlots returns a semaphore admitting limit callers at once.
func newSlots(limit int) *slots { return &slots{limit: limit} }

// newSlotsOn returns a semaphore admitting limit callers at once, whose
// callers wait through c (nil: real time).
func newSlotsOn(c clock.Clock, limit int) *slots { return &slots{clk: c, limit: limit} }

// acquire takes a slot, waiting in line for one if none is free. If ctx ends
// first it returns ctx's error and holds no slot.
func (s *slots) acquire(ctx context.Context) error {
	s.mu.Lock()
	if s.waiters.Len() == 0 && s.freeLocked() {
		s.used++
		s.mu.Unlock()
		return nil
	}
	c := clock.Or(s.clk)
	ready := c.NewEvent()
	e := s.waiters.PushBack(ready)
	s.mu.Unlock()

	if fired, _ := c.Wait(ctx, ready, 0); fired {
		return nil
	}
	s.mu.Lock()
	if ready.Fired() {
		// Granted as ctx ended: give the slot to the next in line.
		s.used--
		s.grantLocked()
	} else {
		s.waiters.Remove(e)
	}
	s.mu.Unlock()
	return ctx.Err()
}

// tryAcquire takes a slot if one is free and nobody is waiting.
func (s *slots) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters.Len() == 0 && s.freeLocked() {
		s.used++
		return true
	}
	return false
}

// release returns a slot and admits waiters the freed capacity allows.
func (s *slots) release() {
	s.mu.Lock()
	if s.used <= 0 {
		s.mu.Unlock()
		panic("strategies: slot released more often than acquired")
	}
	s.used--
	s.grantLocked()
	s.mu.Unlock()
}

// setLimit changes the limit. Raising it admits waiters at once; lowering it
// below the slots in use admits nobody until enough are released.
func (s *slots) setLimit(n int) {
	s.mu.Lock()
	s.limit = n
	s.grantLocked()
	s.mu.Unlock()
}

// state returns the limit, the slots in use and the number of waiters.
func (s *slots) state() (limit, used, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit, s.used, s.waiters.Len()
}

func (s *slots) freeLocked() bool { return s.limit <= 0 || s.used < s.limit }

func (s *slots) grantLocked() {
	for s.waiters.Len() > 0 && s.freeLocked() {
		ready := s.waiters.Remove(s.waiters.Front()).(*clock.Event)
		s.used++
		ready.Fire()
	}
}
