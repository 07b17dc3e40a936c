package strategies

import (
	"context"
	"sync"

	"github.com/ratelab/ratelab/clock"
)

// PerProviderConfig configures a PerProvider strategy.
type PerProviderConfig struct {
	// Limits maps a provider name (Cost.Provider, e.g. "anthropic") to the
	// most calls in flight at once for each API key of that provider, e.g.
	// {"anthropic": 10, "openai": 30}.
	Limits map[string]int `json:"limits" yaml:"limits"`
	// Default is the limit for a provider missing from Limits. 0 means calls
	// to such a provider are not limited.
	Default int `json:"default" yaml:"default"`
}

// PerProvider keeps a separate semaphore for each provider and API key
// (Cost.Provider and Cost.Key), each with its own FIFO line, so that a burst
// of calls to one provider never holds up calls to another: the seeds'
// PROVIDER_SEMAPHORES = {"openai": Semaphore(30), "anthropic": Semaphore(10)}.
// Keys of the same provider get the provider's limit each, because providers
// limit per key. Use it when one run fans out to several providers or keys
// whose limits differ.
//
// Stats sums over every provider and key seen so far; its Limit is the sum of
// their limits, or 0 when any of them is unlimited. StatsFor gives one
// provider and key alone. It is safe for concurrent use.
type PerProvider struct {
	clk      clock.Clock
	limits   map[string]int
	fallback int

	mu    sync.Mutex
	parts map[partitionKey]*partition
}

type partitionKey struct{ provider, key string }

// partition is the semaphore of one provider and key, with its own stats.
type partition struct {
	m     meter
	slots *slots
}

var _ Strategy = (*PerProvider)(nil)

// NewPerProvider returns a PerProvider strategy configured by cfg. Its limits
// never change, so it emits no events.
func NewPerProvider(cfg PerProviderConfig, opts ...Option) *PerProvider {
	limits := make(map[string]int, len(cfg.Limits))
	for name, n := range cfg.Limits {
		limits[name] = max(n, 0)
	}
	p := &PerProvider{clk: newOptions(opts).clock, limits: limits, fallback: max(cfg.Default, 0), parts: make(map[partitionKey]*partition)}
	return p
}

// partition returns the partition of provider and key, creating it on first
// use.
func (p *PerProvider) partition(provider, key string) *partition {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := partitionKey{provider, key}
	if pt, ok := p.parts[k]; ok {
		return pt
	}
	limit, ok := p.limits[provider]
	if !ok {
		limit = p.fallback
	}
	pt := &partition{slots: newSlotsOn(p.clk, limit)}
	pt.m.set(func(st *Stats) { st.Limit = float64(limit) })
	p.parts[k] = pt
	return pt
}

// Acquire waits for a slot of c's provider and key, in arrival order among
// the calls to that provider and key, or until ctx ends.
func (p *PerProvider) Acquire(ctx context.Context, c Cost) (Permit, error) {
	pt := p.partition(c.Provider, c.Key)
	w, err := waitSlot(ctx, p.clk, &pt.m, pt.slots)
	if err != nil {
		return nil, err
	}
	return newPermit(&pt.m, w, nil, func(Outcome) { pt.slots.release() }), nil
}

// Stats returns the sum of the stats of every provider and key seen so far.
func (p *PerProvider) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sum Stats
	unlimited := false
	for _, pt := range p.parts {
		st := pt.m.snapshot()
		unlimited = unlimited || st.Limit == 0
		sum = addStats(sum, st)
	}
	if unlimited {
		sum.Limit = 0
	}
	return sum
}

// StatsFor returns the stats of the calls to one provider and key; all zero
// when none was made yet.
func (p *PerProvider) StatsFor(provider, key string) Stats {
	p.mu.Lock()
	pt, ok := p.parts[partitionKey{provider, key}]
	p.mu.Unlock()
	if !ok {
		return Stats{}
	}
	return pt.m.snapshot()
}

// addStats returns the field-by-field sum of a and b.
func addStats(a, b Stats) Stats {
	return Stats{
		InFlight:       a.InFlight + b.InFlight,
		Limit:          a.Limit + b.Limit,
		Delay:          a.Delay + b.Delay,
		Rate:           a.Rate + b.Rate,
		Tokens:         a.Tokens + b.Tokens,
		Queued:         a.Queued + b.Queued,
		WaitSlot:       a.WaitSlot + b.WaitSlot,
		WaitTokens:     a.WaitTokens + b.WaitTokens,
		WaitRetryAfter: a.WaitRetryAfter + b.WaitRetryAfter,
		Permits:        a.Permits + b.Permits,
		Attempts:       a.Attempts + b.Attempts,
		Successes:      a.Successes + b.Successes,
		Throttles:      a.Throttles + b.Throttles,
		Overloads:      a.Overloads + b.Overloads,
		Errors:         a.Errors + b.Errors,
		Cancels:        a.Cancels + b.Cancels,
		Quota:          a.Quota + b.Quota,
		Bound:          joinBounds(a.Bound, b.Bound),
	}
}

// joinBounds lists two Stats.Bound values, each once.
func joinBounds(a, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// Clock returns the clock the strategy runs on (WithClock).
func (p *PerProvider) Clock() clock.Clock { return p.clk }
