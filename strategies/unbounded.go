package strategies

import "context"

// Unbounded admits every call at once: the seeds' asyncio.gather over all
// items. It is the baseline that shows what a provider's limit does to a
// client that ignores it; against a limit, most of its attempts are rejected
// and its retries arrive as a herd.
//
// It never waits, learns nothing and keeps only the common Stats (Limit 0).
// It is safe for concurrent use.
type Unbounded struct {
	m meter
}

var _ Strategy = (*Unbounded)(nil)

// NewUnbounded returns an Unbounded strategy. It takes no parameters.
func NewUnbounded(opts ...Option) *Unbounded {
	u := &Unbounded{}
	u.m.init(opts)
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
