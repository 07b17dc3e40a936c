package strategies

import (
	"math"
	"time"
)

// budgetDim indexes the budgets a response's rate-limit headers publish.
type budgetDim int

const (
	dimRequests budgetDim = iota
	dimInput              // Anthropic's input tokens
	dimOutput             // Anthropic's output tokens
	dimTokens             // the combined (Anthropic) or only (OpenAI) token budget
	numDims
)

// dims returns h's dimensions, indexed by budgetDim.
func (h Limits) dims() [numDims]Limit {
	return [numDims]Limit{h.Requests, h.InputTokens, h.OutputTokens, h.Tokens}
}

// dimCosts returns what a call of cost c takes from each budget when the
// server admits it: one request; its uncached input; its max_tokens, which
// a server reserves from the output budget until it knows the answer's
// length; and both from a combined budget.
func dimCosts(c Cost) [numDims]float64 {
	in := float64(c.uncachedInput())
	out := float64(max(c.MaxTokens, 0))
	return [numDims]float64{1, in, out, in + out}
}

// dimUsed returns what the server kept of an attempt's costs once it ended
// with o: nothing of a refusal (the server charges a call it admits, and
// refused this one) or of an attempt never sent (Abandoned); the usage it
// reported for a success (the output reservation settles to the answer's
// length, the input to what it counted); the whole cost when it cannot
// tell. A combined budget keeps the whole cost: the providers do not agree
// on how it settles.
func dimUsed(o Outcome, cost [numDims]float64) [numDims]float64 {
	switch o.Kind {
	case Throttled, Overloaded, Quota, Abandoned:
		return [numDims]float64{}
	case Success:
		if o.Usage == (Usage{}) {
			return cost
		}
		used := cost
		used[dimInput] = float64(o.Usage.InputTokens + o.Usage.CacheCreationInputTokens)
		used[dimOutput] = float64(o.Usage.OutputTokens)
		return used
	}
	return cost
}

// budgetCopy is the law's copy of one published budget: a bucket refilling
// at the published limit a minute, holding what the headers say the server's
// holds (see adaptiveLaw.syncBudgets).
type budgetCopy struct {
	budget
	limit int64 // the published limit, per minute
	// The server holds between tokens and tokens+slack, as far as the
	// headers so far tell.
	slack float64
	// adjusted is the sum of the corrections the headers made to tokens,
	// so that what the copy gained and lost by itself since a dispatch
	// can be told apart from what it learned.
	adjusted float64
	// learned is whether the copy's rate is learned from 429s
	// (rateLearner), not published: limit is then 0.
	learned bool
}

// set moves the copy's range to [lo, hi] at now, intersected with the range
// it had if they overlap.
func (b *budgetCopy) set(now time.Time, lo, hi float64) {
	b.advance(now)
	if top := b.tokens + b.slack; lo <= top && b.tokens <= hi {
		lo, hi = max(lo, b.tokens), min(hi, top)
	}
	lo, hi = min(lo, b.burst), min(hi, b.burst)
	b.adjusted += lo - b.tokens
	b.tokens, b.slack = lo, max(hi-lo, 0)
}

// roundedTolerance is how far a remaining token count may be from the
// server's level because the headers round it: Anthropic rounds its token
// counts to the nearest thousand (docs/wire.md §1.5), so a multiple of 1,000 is
// read as anywhere within 500 of it. Requests are exact.
func roundedTolerance(d budgetDim, remaining int64) float64 {
	if d != dimRequests && remaining%1000 == 0 {
		return 500
	}
	return 0
}

// takeBudgets spends a's costs from the copies at its dispatch, remembering
// what each copy held before the first call sent at the same instant (the
// server may have admitted a before those).
func (l *adaptiveLaw) takeBudgets(now time.Time, a *adaptiveAttempt, newBatch bool) {
	for d, b := range l.budgets {
		if b == nil {
			continue
		}
		if newBatch {
			l.batchSeen[d] = b.available(now) - b.adjusted
		}
		a.seen[d], a.has[d] = l.batchSeen[d], true
		b.take(now, a.cost[d]) // a retry inside its slot may leave it in debt
	}
}

// settleBudgets gives back to the copies what the server did not keep of
// a's costs (see dimUsed).
func (l *adaptiveLaw) settleBudgets(now time.Time, a adaptiveAttempt, o Outcome) {
	used := dimUsed(o, a.cost)
	for d, b := range l.budgets {
		if b != nil && a.has[d] {
			b.settle(now, a.cost[d], used[d])
		}
	}
}

// syncBudgets learns from the rate-limit headers of the response to a,
// which ended with o. A dimension seen for the first time gets a copy; a
// new limit changes its refill. The headers tell what the server held when
// it admitted or refused a, just after a's dispatch: that, plus what the
// copy gained and lost since (refill, the calls sent after a, what the
// calls that ended gave back), is what the server holds now, within the
// headers' rounding. A copy outside that range is set to it; one inside is
// left alone, so that rounded counts do not shake it. A response to a call
// sent before the one that last synced a copy is older news and only
// bounds the copy's capacity: at most the remaining count plus the refill
// until the reset, when the server's bucket is full again.
func (l *adaptiveLaw) syncBudgets(now time.Time, a adaptiveAttempt, o Outcome) {
	for i, h := range o.Limits.dims() {
		d := budgetDim(i)
		if !h.Known() || d == dimTokens && o.Limits.InputTokens.Known() && o.Limits.OutputTokens.Known() {
			// Beside input and output budgets, the combined one is their
			// sum (docs/wire.md §1.5) and would hold no call they do not.
			continue
		}
		b := l.budgets[d]
		rate := float64(h.Limit) / 60
		if b == nil {
			// What the server had left when it admitted a, less what we
			// sent with a and since: errs low, and the next response
			// corrects it.
			b = &budgetCopy{budget: *newBudget(now, float64(h.Limit), int(h.Limit)), limit: h.Limit}
			level := float64(h.Remaining) - float64(l.seq-a.batch)*a.cost[d]
			b.tokens = min(level, b.burst)
			b.slack = b.burst
			l.budgets[d] = b
			// The calls still to be sent at lastDispatch see the copy as
			// it was before the first sent then (see takeBudgets): add
			// back those of them it counts, the ones sent after a's batch.
			l.batchSeen[d] = level + float64(l.seq-max(a.batch, l.batch-1))*a.cost[d]
			l.synced[d] = l.seq
			if d == dimRequests {
				l.requestsPublished(now)
			}
		} else if h.Limit != b.limit {
			b.advance(now)
			b.learned = false
			b.limit, b.rate, b.burst = h.Limit, rate, float64(h.Limit)
			if d == dimRequests {
				l.requestsPublished(now)
			}
		}
		tol := roundedTolerance(d, h.Remaining)
		if h.Reset.After(a.start) {
			// The server's bucket is full at the reset: it holds at most
			// the remaining count and the refill until then. (A reset
			// before a was sent is another clock's: no bound.)
			full := float64(h.Remaining) + tol + max(0, h.Reset.Sub(a.start).Seconds())*rate
			b.burst = max(min(b.burst, full), 1)
		}
		if !a.has[d] || a.seq <= l.synced[d] {
			b.advance(now)
			b.tokens = min(b.tokens, b.burst)
			continue
		}
		l.synced[d] = a.seq
		// The server's level now, as far as the copy can tell.
		drift := b.available(now) - b.adjusted - a.seen[d]
		// What the server took from the budget when it admitted a: its
		// input as counted, its max_tokens as reserved (the answer's
		// length settles later), nothing if it refused a.
		charged := 0.0
		if o.Kind == Success || o.Kind == Failed || o.Kind == Canceled {
			charged = dimUsed(o, a.cost)[d]
			if d == dimOutput {
				charged = a.cost[d]
			}
		}
		est := float64(h.Remaining) + charged + drift
		lo, hi := est-tol, est+tol
		if o.Kind == Throttled && h.Remaining <= 0 {
			// Refused with nothing remaining: the server held less than
			// a's cost.
			lo, hi = drift, drift+a.cost[d]-1
		}
		b.set(now, lo, hi)
	}
}

// requestsPublished notes a newly published requests limit: while slow
// start is still running, it seeds the window at the calls the rate starts
// per round trip.
func (l *adaptiveLaw) requestsPublished(now time.Time) {
	if l.slowStart {
		l.window = min(max(l.window, float64(l.rateWindow())), float64(l.cfg.Max))
	}
	l.note(now, "headers")
}

// untilBudgets returns how long until every copy of a published budget
// holds a call of cost c (or is full, for a call larger than it holds); 0
// if they all do now or none is published.
func (l *adaptiveLaw) untilBudgets(now time.Time, c [numDims]float64) time.Duration {
	var wait time.Duration
	for d, b := range l.budgets {
		if b == nil {
			continue
		}
		need := min(c[d], b.burst)
		have := b.available(now)
		if have >= need {
			continue
		}
		w := max(time.Duration(math.Ceil((need-have)/b.rate*float64(time.Second))), time.Nanosecond)
		wait = max(wait, w)
	}
	return wait
}

// tokensAvailable is what the scarcest copy of a published token budget
// (input, output or combined, by the share of its capacity left) holds at
// now: Stats.Tokens. 0 when none is published.
func (l *adaptiveLaw) tokensAvailable(now time.Time) float64 {
	tokens, share := 0.0, math.Inf(1)
	for _, b := range l.budgets[dimInput:] {
		if b == nil {
			continue
		}
		if have := b.available(now); have/b.burst < share {
			tokens, share = max(have, 0), have/b.burst
		}
	}
	return tokens
}

// spent returns the first budget a response's headers show with nothing
// remaining, if any: a refusal for a rate, which the window does not
// answer.
func spent(h Limits) (budgetDim, bool) {
	for d, l := range h.dims() {
		if l.Known() && l.Remaining <= 0 {
			return budgetDim(d), true
		}
	}
	return 0, false
}
