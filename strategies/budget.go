package strategies

import (
	"container/list"
	"fmt"
	"math"
	"time"

	"github.com/ratelab/ratelab/clock"
)

// budget is a token bucket that calls reserve from in a FIFO line and settle
// to what they actually used. Unlike rate.Limiter, tokens handed back (a
// reservation canceled, a call that used less than it reserved) go to the
// callers still waiting at once, and a call that used more than it reserved
// leaves the bucket in debt.
//
// Every method takes the time as an argument and nothing blocks: the caller
// (TokenFirst) owns the waiting and the locking.
type budget struct {
	rate   float64 // tokens per second
	burst  float64 // capacity
	tokens float64 // at last; negative while in debt
	last   time.Time
	line   list.List // of *reservation, waiting in arrival order
}

// reservation is one call's claim on a budget.
type reservation struct {
	n       float64
	granted bool
	elem    *list.Element // in budget.line while waiting
	ready   *clock.Event  // set and fired by the owner of the budget when granted
}

// newBudget returns a full budget refilling perMinute tokens a minute and
// holding burst.
func newBudget(now time.Time, perMinute float64, burst int) *budget {
	return &budget{rate: perMinute / 60, burst: float64(burst), tokens: float64(burst), last: now}
}

// advance refills the bucket up to now.
func (b *budget) advance(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// available returns the tokens in the bucket at now, after the grants so
// far; negative when in debt.
func (b *budget) available(now time.Time) float64 {
	b.advance(now)
	return b.tokens
}

// reserve puts a claim for n tokens at the end of the line and admits what
// the bucket allows at now. It fails for n above the burst, which no wait
// would let through.
func (b *budget) reserve(now time.Time, n int) (*reservation, error) {
	if float64(n) > b.burst {
		return nil, fmt.Errorf("%w: %d tokens, budget %.0f", ErrExceedsBudget, n, b.burst)
	}
	r := &reservation{n: float64(max(n, 0))}
	r.elem = b.line.PushBack(r)
	return r, nil
}

// admit grants the claims at the head of the line that the bucket holds
// tokens for at now, in order, and returns them, with the time until the
// claim then at the head can be granted (0 when nobody waits). A claim never
// overtakes an earlier one.
func (b *budget) admit(now time.Time) (granted []*reservation, next time.Duration) {
	b.advance(now)
	for b.line.Len() > 0 {
		r := b.line.Front().Value.(*reservation)
		if b.tokens < r.n {
			need := (r.n - b.tokens) / b.rate
			return granted, max(time.Duration(math.Ceil(need*float64(time.Second))), 1)
		}
		b.tokens -= r.n
		b.line.Remove(r.elem)
		r.elem, r.granted = nil, true
		granted = append(granted, r)
	}
	return granted, 0
}

// take spends n tokens at now without waiting in line, going into debt if
// the bucket holds fewer.
func (b *budget) take(now time.Time, n float64) {
	b.advance(now)
	b.tokens -= n
}

// withdraw takes back a claim: out of the line if it was waiting, its tokens
// back into the bucket if it was granted.
func (b *budget) withdraw(now time.Time, r *reservation) {
	if r.granted {
		b.settle(now, r.n, 0)
		return
	}
	b.line.Remove(r.elem)
	r.elem = nil
}

// settle corrects the bucket for a granted claim of reserved tokens whose
// call used used: the difference goes back into the bucket, or, for a call
// that used more, is taken as debt.
func (b *budget) settle(now time.Time, reserved, used float64) {
	b.advance(now)
	b.tokens = min(b.burst, b.tokens+reserved-used)
}
