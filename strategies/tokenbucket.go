package strategies

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ratelab/ratelab/clock"
)

// ErrExceedsBudget is returned by Acquire for a call whose Cost.Tokens()
// exceeds what a token budget can ever hold at once (its burst): no wait
// would let it through.
var ErrExceedsBudget = errors.New("strategies: call costs more tokens than the budget holds")

// TokenBucketConfig configures a TokenBucket. The zero value paces nothing.
type TokenBucketConfig struct {
	// RPM is the published requests-per-minute limit. 0 means requests are
	// not paced.
	RPM float64 `json:"rpm" yaml:"rpm"`
	// TPM is the published tokens-per-minute limit (the combined or the
	// input-token limit, whichever binds). Each call spends its
	// Cost.Tokens() (input estimate + max_tokens). 0 means tokens are not
	// paced.
	TPM float64 `json:"tpm" yaml:"tpm"`
	// RequestBurst is how many requests may start at once after an idle
	// spell. 0 means 1: requests start evenly spaced, 60/RPM seconds apart.
	RequestBurst int `json:"request_burst" yaml:"request_burst"`
	// TokenBurst is the most tokens calls may spend at once after an idle
	// spell. 0 means a minute's worth (TPM), as a provider's bucket holds.
	// A call costing more is refused with ErrExceedsBudget.
	TokenBurst int `json:"token_burst" yaml:"token_burst"`
}

// TokenBucket paces calls to a provider's published requests-per-minute and
// tokens-per-minute limits, with two token buckets (golang.org/x/time/rate):
// a call starts when both have room for it, one request and Cost.Tokens()
// tokens, and callers start in the order they arrived. Use it when the limits
// are published and concurrency is not limited: the seeds' batch runtime
// uses a token bucket "where the quota is known".
//
// It spends what a call might use (input estimate + max_tokens) and never
// learns what it did use, so with a generous max_tokens it paces below the
// limit; TokenFirst settles to the actual usage instead. It learns nothing
// from outcomes either: a 429 does not slow it down.
//
// Stats reports Rate (requests per second) and Delay (seconds between
// dispatches, 1/Rate), both 0 when requests are unpaced, and Tokens (the
// token budget available now; negative while calls wait for it). Waiting for the request bucket counts as
// Waits.Slot, the further wait for the token bucket as Waits.Tokens. It is
// safe for concurrent use.
type TokenBucket struct {
	m   meter
	clk clock.Clock

	mu    sync.Mutex // orders reservations on both buckets
	req   *rate.Limiter
	tok   *rate.Limiter
	tpm   float64
	burst int
}

var _ Strategy = (*TokenBucket)(nil)

// NewTokenBucket returns a TokenBucket configured by cfg; both buckets start
// full.
func NewTokenBucket(cfg TokenBucketConfig, opts ...Option) *TokenBucket {
	o := newOptions(opts)
	b := &TokenBucket{
		clk: o.clock,
		req: newLimiter(cfg.RPM, max(cfg.RequestBurst, 1)),
		tpm: max(cfg.TPM, 0),
	}
	if cfg.TPM > 0 {
		b.burst = cfg.TokenBurst
		if b.burst <= 0 {
			b.burst = int(math.Ceil(cfg.TPM))
		}
		b.tok = newLimiter(cfg.TPM, b.burst)
	}
	b.m.init(o)
	if cfg.RPM > 0 {
		b.m.set(func(st *Stats) {
			st.Rate = cfg.RPM / 60
			st.Delay = 60 / cfg.RPM
		})
	}
	return b
}

// newLimiter returns a bucket refilling perMinute tokens a minute, holding
// burst, or nil when perMinute is not positive.
func newLimiter(perMinute float64, burst int) *rate.Limiter {
	if perMinute <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(perMinute/60), burst)
}

// bucketReservation is a call's place in both buckets.
type bucketReservation struct {
	req, tok *rate.Reservation // nil for a bucket that does not pace
	wait     Waits             // Slot: the request bucket's delay; Tokens: the rest
}

// reserve takes room for a call of the given tokens at now from both
// buckets, and returns how long the call must wait before it starts. It is
// the strategy's decision core: no clock, no blocking.
func (b *TokenBucket) reserve(now time.Time, tokens int) (bucketReservation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var r bucketReservation
	if b.tok != nil {
		if tokens > b.burst {
			return r, fmt.Errorf("%w: %d tokens, budget %d", ErrExceedsBudget, tokens, b.burst)
		}
		r.tok = b.tok.ReserveN(now, max(tokens, 0))
	}
	if b.req != nil {
		r.req = b.req.ReserveN(now, 1)
		r.wait.Slot = r.req.DelayFrom(now)
	}
	if r.tok != nil {
		r.wait.Tokens = max(r.tok.DelayFrom(now)-r.wait.Slot, 0)
	}
	return r, nil
}

// cancel gives a reservation's room back at now, as far as later
// reservations allow (rate.Reservation.CancelAt).
func (b *TokenBucket) cancel(now time.Time, r bucketReservation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.req != nil {
		r.req.CancelAt(now)
	}
	if r.tok != nil {
		r.tok.CancelAt(now)
	}
}

// Acquire waits until both buckets have room for the call, or ctx ends. It
// returns an error wrapping ErrExceedsBudget, at once, for a call costing
// more than TokenBurst.
func (b *TokenBucket) Acquire(ctx context.Context, c Cost) (Permit, error) {
	now := b.clk.Now()
	r, err := b.reserve(now, c.Tokens())
	if err != nil {
		return nil, err
	}
	if d := r.wait.Total(); d > 0 {
		b.m.enqueue()
		slept, err := sleep(b.clk, ctx, d)
		b.m.dequeue()
		if err != nil {
			b.cancel(b.clk.Now(), r)
			b.m.gaveUp(splitWait(r.wait, slept))
			return nil, err
		}
	}
	return newPermit(&b.m, r.wait, nil, nil), nil
}

// splitWait returns the part of w, taken cause by cause in the order the
// causes were waited for (slot, then tokens), that fits in d.
func splitWait(w Waits, d time.Duration) Waits {
	slot := min(w.Slot, d)
	return Waits{Slot: slot, Tokens: min(w.Tokens, d-slot)}
}

// Stats implements Strategy.
func (b *TokenBucket) Stats() Stats {
	st := b.m.snapshot()
	st.Tokens = b.tokensAt(b.clk.Now())
	return st
}

// tokensAt returns the tokens the token bucket holds at now; negative while
// reservations wait for it, 0 when tokens are not paced.
func (b *TokenBucket) tokensAt(now time.Time) float64 {
	if b.tok == nil {
		return 0
	}
	return b.tok.TokensAt(now)
}

// Clock returns the clock the strategy runs on (WithClock).
func (b *TokenBucket) Clock() clock.Clock { return b.clk }
