package strategies

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/ratelab/ratelab/clock"
)

// TokenFirstConfig configures a TokenFirst strategy. The zero value limits
// nothing.
type TokenFirstConfig struct {
	// TPM is the tokens-per-minute budget. 0 means tokens are not budgeted.
	TPM float64 `json:"tpm" yaml:"tpm"`
	// TokenBurst is the most tokens calls may reserve at once after an idle
	// spell. 0 means a minute's worth (TPM), as a provider's bucket holds.
	// A call costing more is refused with ErrExceedsBudget.
	TokenBurst int `json:"token_burst" yaml:"token_burst"`
	// MaxConcurrent is the most calls in flight at once (n in a scenario,
	// as semaphore's). 0 means no limit.
	MaxConcurrent int `json:"n" yaml:"n"`
}

// TokenFirst gates each call on both a provider's limits, tokens first: it
// reserves the call's Cost.Tokens() (uncached input estimate + max_tokens) from a
// tokens-per-minute budget, then takes one of MaxConcurrent slots, so a call
// waiting for budget never holds a slot a cheaper call could use (a Python
// client's `await gateway.tokens.acquire(reserve)` before `async with gateway.slots`).
//
// Its settlement per outcome, its use, its Stats and events are the package
// documentation's "TokenFirst". It is safe for concurrent use.
type TokenFirst struct {
	m     meter
	clk   clock.Clock
	slots *slots

	mu       sync.Mutex  // guards budget and stopTick
	budget   *budget     // nil when tokens are not budgeted
	stopTick func() bool // stops the pending tick; nil when none is set
}

var _ Strategy = (*TokenFirst)(nil)

// NewTokenFirst returns a TokenFirst strategy configured by cfg, with a full
// budget.
func NewTokenFirst(cfg TokenFirstConfig, opts ...Option) *TokenFirst {
	n := max(cfg.MaxConcurrent, 0)
	o := newOptions(opts)
	c := o.clock
	s := &TokenFirst{clk: c, slots: newSlotsOn(c, n)}
	if cfg.TPM > 0 {
		burst := cfg.TokenBurst
		if burst <= 0 {
			burst = int(math.Ceil(cfg.TPM))
		}
		s.budget = newBudget(c.Now(), cfg.TPM, burst)
	}
	s.m.init(o)
	s.m.set(func(st *Stats) { st.Limit = float64(n) })
	return s
}

// Acquire waits for the call's tokens, then for a slot, each in arrival
// order, or until ctx ends; a call that gives up has its tokens returned. It
// returns an error wrapping ErrExceedsBudget, at once, for a call costing
// more than TokenBurst.
func (s *TokenFirst) Acquire(ctx context.Context, c Cost) (Permit, error) {
	r, wTokens, err := s.reserve(ctx, c.Tokens())
	if err != nil {
		return nil, err
	}
	w, err := waitSlot(ctx, s.clk, &s.m, s.slots)
	if err != nil {
		s.withdraw(r)
		s.m.gaveUp(Waits{Tokens: wTokens})
		return nil, err
	}
	w.Tokens = wTokens
	var onObserve func(Outcome)
	if r != nil {
		onObserve = func(o Outcome) {
			if used := usageOf(o); used > 0 {
				s.settle(0, float64(used))
			}
		}
	}
	return newPermit(&s.m, w, onObserve, func(o Outcome) {
		s.slots.release()
		if r != nil {
			s.settle(r.n, settledUsage(o, r.n))
		}
	}), nil
}

// reserve waits until the budget grants n tokens. It returns a nil
// reservation when tokens are not budgeted.
func (s *TokenFirst) reserve(ctx context.Context, n int) (*reservation, time.Duration, error) {
	if s.budget == nil {
		return nil, 0, nil
	}
	start := s.clk.Now()
	s.mu.Lock()
	r, err := s.budget.reserve(start, n)
	if err != nil {
		s.mu.Unlock()
		return nil, 0, err
	}
	r.ready = s.clk.NewEvent()
	s.admitLocked(start)
	granted := r.granted
	s.mu.Unlock()
	if granted {
		return r, 0, nil
	}

	s.m.enqueue()
	defer s.m.dequeue()
	if fired, _ := s.clk.Wait(ctx, r.ready, 0); fired {
		return r, clock.Since(s.clk, start), nil
	}
	s.withdraw(r)
	s.m.gaveUp(Waits{Tokens: clock.Since(s.clk, start)})
	return nil, 0, ctx.Err()
}

// withdraw takes back a reservation, granted or not; nil is a no-op.
func (s *TokenFirst) withdraw(r *reservation) {
	if r == nil {
		return
	}
	now := s.clk.Now()
	s.mu.Lock()
	s.budget.withdraw(now, r)
	s.admitLocked(now)
	s.mu.Unlock()
}

// settle corrects the budget for a call that reserved reserved tokens and
// used used.
func (s *TokenFirst) settle(reserved, used float64) {
	now := s.clk.Now()
	s.mu.Lock()
	s.budget.settle(now, reserved, used)
	s.admitLocked(now)
	s.mu.Unlock()
}

// admitLocked grants what the budget allows at now, and arms the timer for
// the next grant. s.mu must be held.
func (s *TokenFirst) admitLocked(now time.Time) {
	granted, next := s.budget.admit(now)
	for _, r := range granted {
		r.ready.Fire()
	}
	if s.stopTick != nil {
		s.stopTick()
		s.stopTick = nil
	}
	if next > 0 {
		s.stopTick = s.clk.AfterFunc(next, s.tick)
	}
}

// tick is the timer's callback: the head of the line may now have its tokens.
func (s *TokenFirst) tick() {
	s.mu.Lock()
	s.admitLocked(s.clk.Now())
	s.mu.Unlock()
}

// Stats implements Strategy.
func (s *TokenFirst) Stats() Stats {
	st := s.m.snapshot()
	if s.budget != nil {
		s.mu.Lock()
		st.Tokens = s.budget.available(s.clk.Now())
		s.mu.Unlock()
	}
	return st
}

// usageOf returns the tokens an outcome reports as used against the
// provider's limits (Usage.Counted: cache reads an Anthropic response
// reports apart are not charged).
func usageOf(o Outcome) int { return o.Usage.Counted() }

// settledUsage returns what a call that reserved reserved tokens is charged
// when its last outcome is o (see TokenFirst).
func settledUsage(o Outcome, reserved float64) float64 {
	if used := usageOf(o); used > 0 {
		return float64(used)
	}
	switch o.Kind {
	case Throttled, Overloaded, Abandoned, Quota:
		return 0
	}
	return reserved
}

// Clock returns the clock the strategy runs on (WithClock).
func (s *TokenFirst) Clock() clock.Clock { return s.clk }
