package strategies

import (
	"context"

	"github.com/ratelab/ratelab/clock"
)

// SemaphoreConfig configures a Semaphore.
type SemaphoreConfig struct {
	// Max is the most calls in flight at once (n in a scenario). Values
	// below 1 mean 1.
	Max int `json:"n" yaml:"n"`
}

// Semaphore admits at most Max calls at once, in arrival order: the seeds'
// `async with asyncio.Semaphore(N):` around each call. Set at or just below a
// provider's concurrent-request limit, every call goes through on its first
// attempt; above it, the excess is rejected; below it, throughput is lost.
//
// It learns nothing from outcomes. Stats reports Limit = Max and the time
// callers waited for a slot. It is safe for concurrent use.
type Semaphore struct {
	m     meter
	clk   clock.Clock
	max   int
	slots *slots
}

var _ Strategy = (*Semaphore)(nil)

// NewSemaphore returns a Semaphore configured by cfg.
func NewSemaphore(cfg SemaphoreConfig, opts ...Option) *Semaphore {
	n := max(cfg.Max, 1)
	o := newOptions(opts)
	c := o.clock
	s := &Semaphore{max: n, slots: newSlotsOn(c, n), clk: c}
	s.m.init(o)
	s.m.set(func(st *Stats) { st.Limit = float64(n) })
	return s
}

// Acquire waits for a free slot, in arrival order, or until ctx ends.
func (s *Semaphore) Acquire(ctx context.Context, _ Cost) (Permit, error) {
	w, err := waitSlot(ctx, s.clk, &s.m, s.slots)
	if err != nil {
		return nil, err
	}
	return newPermit(&s.m, w, nil, func(Outcome) { s.slots.release() }), nil
}

// Stats implements Strategy.
func (s *Semaphore) Stats() Stats { return s.m.snapshot() }

// waitSlot takes a slot from sl, timing the wait on c, counting the caller as queued on m while it
// waits. It returns the time waited as Waits.Slot; when ctx ends first, it
// records that wait on m and returns ctx's error.
func waitSlot(ctx context.Context, c clock.Clock, m *meter, sl *slots) (Waits, error) {
	if sl.tryAcquire() {
		return Waits{}, nil
	}
	start := c.Now()
	m.enqueue()
	err := sl.acquire(ctx)
	m.dequeue()
	w := Waits{Slot: clock.Since(c, start)}
	if err != nil {
		m.gaveUp(w)
		return Waits{}, err
	}
	return w, nil
}

// Clock returns the clock the strategy runs on (WithClock).
func (s *Semaphore) Clock() clock.Clock { return s.clk }
