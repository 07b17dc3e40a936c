package strategies

import "time"

// ratePoints is how many refusals the rate a key's 429s tell is measured
// over (see rateLearner).
const ratePoints = 8

// ratePoint is one refusal the rate learner measures from: when the server
// refused the call (its dispatch: a refusal comes back at once), the cost
// the server had admitted of ours by then, and the refused call's cost.
type ratePoint struct {
	at       time.Time
	admitted [numDims]float64
	cost     [numDims]float64
}

// rateLearner learns an unpublished rate (requests or tokens a minute)
// from the key's 429s, for a provider whose responses publish no budget:
// the law paces the key's calls by a copy of each budget (budgetCopy,
// learned) refilling at the learned rate.
//
// A bucket refilling at r refuses a call of cost c only while it holds less
// than c. Between two such refusals, at s₀ and s, the server admitted A of
// ours, at most what it held after the first (less than c₀) and what it
// refilled since: A < c₀ + r(s − s₀), so r > (A − c₀)/(s − s₀), whatever
// its burst and whatever it did between. The learned rate starts at that
// bound (at least half of A/(s − s₀)) over the oldest of the last
// ratePoints refusals, which sharpens as refusals spread apart, and rises
// from it by 4c/(s − s₀)² a second (c the refused call's cost): a rate
// paced under the true one finds it again within about one such span, and
// the better the rate is known, the slower the probing. A refusal empties the copy.
// When the last two refusals bound the rate below what the older ones
// prove (it fell), the older ones are dropped.
//
// The learner engages on two congestion events in a row that the
// concurrency window cannot explain, each refused with nothing of ours held
// or fewer than a call dispatched since the event before held while it
// succeeded, once the points span a round trip and the refusal asks to wait
// no longer than they span (longWait). From then on a refusal of a call that was no probe above the learned limit is
// the rate's: the window leaves it to the learner, and no gate closes.
// Refusals a round trip apart with nothing of ours admitted between, while
// the learner paces, are no bucket's: it turns off for good (veto).
type rateLearner struct {
	on bool
	// veto is set when the refusals showed no bucket (rateRefusal): the
	// learner stays off.
	veto bool
	// sent is the cost of the key's dispatches so far; refused the cost of
	// the refusals so far (of the dispatches the server did not admit).
	sent, refused [numDims]float64
	points        []ratePoint
	// heldOK is the most calls of ours the server held with a success
	// dispatched since the last congestion event (see adaptiveLaw.cut).
	heldOK int
	// strikes counts the congestion events in a row that came with fewer
	// held than heldOK was at the time.
	strikes int
	// The learned rate of each budget at from, a second, and how fast it
	// rises, a second per second.
	base, growth [numDims]float64
	from         time.Time
}

// rateDims are the budgets the learner paces: requests, input and output
// tokens (a combined budget moves with them).
var rateDims = [...]budgetDim{dimRequests, dimInput, dimOutput}

// published reports whether a response has published a budget to the law.
func (l *adaptiveLaw) published() bool {
	for _, b := range l.budgets {
		if b != nil && !b.learned {
			return true
		}
	}
	return false
}

// rateRefusal learns from a refusal of a that published no budget, with raw
// of ours held when it came, and reports whether it was the rate's (the
// caller leaves the window alone).
func (l *adaptiveLaw) rateRefusal(now time.Time, a adaptiveAttempt, o Outcome, raw int) bool {
	if l.fleet.on || l.published() || l.rate.veto {
		return false
	}
	for _, h := range o.Limits.dims() {
		if h.Known() {
			return false
		}
	}
	for _, d := range rateDims {
		l.rate.refused[d] += a.cost[d]
	}
	p := ratePoint{at: a.start, cost: a.cost}
	for d := range p.admitted {
		p.admitted[d] = a.sentThrough[d] - l.rate.refused[d]
	}
	if n := len(l.rate.points); n > 0 && !p.at.After(l.rate.points[n-1].at) {
		// Sent at the same instant as the last point (or before): the
		// server refused it with no time between; the earlier point bounds
		// no less.
		return l.rate.on && l.applyRate(now)
	}
	if n := len(l.rate.points); n > 0 && l.rate.on {
		if q := l.rate.points[n-1]; p.admitted[dimRequests] <= q.admitted[dimRequests] && p.at.Sub(q.at) >= l.rtt() {
			// Nothing of ours admitted for a round trip or more between
			// two refusals while the learned rate paced the calls: no
			// bucket refilling at a rate does that. Whatever limits the
			// key (an acceleration rule, a window of a minute), it is no
			// rate to learn: the window and the gate answer it, for good.
			l.rate = rateLearner{veto: true, sent: l.rate.sent, refused: l.rate.refused}
			for d, b := range l.budgets {
				if b != nil && b.learned {
					l.budgets[d] = nil
				}
			}
			return false
		}
	}
	l.rate.points = append(l.rate.points, p)
	if len(l.rate.points) > ratePoints {
		l.rate.points = l.rate.points[1:]
	}
	if !l.rate.on {
		if a.seq > l.cut {
			if raw == 0 || raw < l.rate.heldOK {
				l.rate.strikes++
			} else {
				l.rate.strikes = 0
			}
		}
		if l.rate.strikes < 2 || !l.rateKnown() || l.longWait(o) {
			return false
		}
		l.rate.on = true
	}
	return l.applyRate(now)
}

// rateKnown reports whether the points span a round trip: a shorter span
// bounds the rate too loosely to pace by.
func (l *adaptiveLaw) rateKnown() bool {
	ps := l.rate.points
	return len(ps) >= 2 && ps[len(ps)-1].at.Sub(ps[0].at) >= l.rtt()
}

// longWait reports whether o asks to wait longer than the refusals the
// rate is measured from span: a limit that does not refill within that span
// (an acceleration rule, a window of a minute) is no bucket the points
// measure.
func (l *adaptiveLaw) longWait(o Outcome) bool {
	ps := l.rate.points
	return o.HasRetryAfter && len(ps) > 0 && o.RetryAfter > ps[len(ps)-1].at.Sub(ps[0].at)
}

// bound returns the lower bound on a budget's rate (a second) and the
// midpoint A/(s − s₀) that the refusals p and q, p first, tell.
func bound(p, q ratePoint, d budgetDim) (lo, mid float64) {
	span := q.at.Sub(p.at).Seconds()
	a := q.admitted[d] - p.admitted[d]
	return (a - p.cost[d]) / span, a / span
}

// applyRate sets the learned copies from the points after a refusal at now
// and reports true.
func (l *adaptiveLaw) applyRate(now time.Time) bool {
	l.advanceRate(now)
	ps := l.rate.points
	if n := len(ps); n >= 3 {
		// The rate fell: the last two refusals bound it above by less than
		// the oldest proves it at least. Forget the older ones.
		p, q := ps[n-2], ps[n-1]
		for _, d := range rateDims {
			span := q.at.Sub(p.at).Seconds()
			hi := (q.admitted[d] - p.admitted[d] + q.cost[d]) / span
			if lo, _ := bound(ps[0], q, d); q.cost[d] > 0 && hi < lo {
				l.rate.points = append(ps[:0], p, q)
				ps = l.rate.points
				break
			}
		}
	}
	first, last := ps[0], ps[len(ps)-1]
	span := last.at.Sub(first.at).Seconds()
	if span <= 0 {
		return true
	}
	l.rate.from = now
	for _, d := range rateDims {
		c := last.cost[d]
		if c <= 0 {
			continue
		}
		lo, mid := bound(first, last, d)
		r := max(lo, mid/2, c/span)
		l.rate.base[d] = r
		l.rate.growth[d] = 4 * c / (span * span)
		b := l.budgets[d]
		if b == nil {
			b = &budgetCopy{budget: budget{last: now}, learned: true}
			l.budgets[d] = b
		}
		b.advance(now)
		b.rate = r
		b.burst = max(c, r*l.rtt().Seconds())
		b.tokens = min(b.tokens, 0)
	}
	return true
}

// advanceRate brings the learned copies' refill up to now: each refills at
// the rate it had since the last call, then at the rate learned and risen
// by now.
func (l *adaptiveLaw) advanceRate(now time.Time) {
	if !l.rate.on {
		return
	}
	for _, d := range rateDims {
		b := l.budgets[d]
		if b == nil || !b.learned {
			continue
		}
		b.advance(now)
		b.rate = l.rate.base[d] + l.rate.growth[d]*now.Sub(l.rate.from).Seconds()
	}
}
