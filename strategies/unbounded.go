package strategies

import (
	"context"

	"github.com/ratelab/ratelab/clock"
)

// Unbounded admits every call at once: the seeds' asyncio.gather over all
// items. It is the baseline that shows what a provider's limit does to a
// client that ignores it; against a limit, most of its attempts are rejected
// and its retries arrive as a herd.
//
// It never waits, learns nothing and keeps only the common Stats (Limit 0).
// It is safe for concurrent use.
type Unbounded struct {
	m   meter
	clk clock.Clock
}

var _ Strategy = (*Unbounded)(nil)

// NewUnbounded returns an Unbounded strategy. It takes no parameters.
func NewUnbounded(opts ...Option) *Unbounded {
	o := newOptions(opts)
	u := &Unbounded{clk: o.clock}
	u.m.init(o)
	return u
}

// Acquire returns a permit at once, unless ctx is already done.
func (u *Unbounded) Acquire(ctx context.Context, _ Cost) (Permit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return newPermit(&u.m, Waits{}, nil, nil), nil
}

// Stats implements Strategy.
func (u *Unbounded) Stats() Stats { return u.m.snapshot() }

// Clock returns the clock the strategy runs on (WithClock).
func (u *Unbounded) Clock() clock.Clock { return u.clk }
