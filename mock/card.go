package mock

import (
	"net/http"
	"time"

	"github.com/ratelab/ratelab/internal/reportcard"
	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// ReportCard is how a client behaved toward the server's refusals, as the
// server saw it (internal/reportcard, where each figure is documented).
type ReportCard = reportcard.Card

// RetryWaveWindow is how close together retries of one key arrive to be
// one wave (ReportCard.RetryWaves).
const RetryWaveWindow = reportcard.WaveWindow

// answerKind is what an attempt's answer says of retrying its call.
type answerKind uint8

const (
	answerOther       answerKind = iota
	answerQuota                  // a spent quota: never retry
	answerClientError            // a 4xx no retry fixes
	answerPushback               // a rate limit's 429, or overload: retry later
)

// answerOf classifies an attempt's answer, as end counts it.
func answerOf(status int, limit string) answerKind {
	switch {
	case limit == wire.LimitQuota:
		return answerQuota
	case status == http.StatusTooManyRequests, status == 529, status == http.StatusServiceUnavailable:
		return answerPushback
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusConflict && status != 499:
		return answerClientError
	}
	return answerOther
}

// cardCounts are the report card's counters over every key.
type cardCounts struct {
	retries, afterQuota, afterClientError int64
	waves, synchronized                   int64
	maxWave                               int
	refusedCalls, refusedAttempts         int64
	over                                  int64
	peakOver                              int
	capped                                bool
}

// keyCalls is the call accounting of one API key.
type keyCalls struct {
	early int64
	// scope is the key's own concurrency cap (limits.max_concurrent).
	scope cardScope
	// The retry wave under way: its first retry's arrival and its size.
	waveStart time.Time
	wave      int
}

// A cardScope is one concurrency cap as the admission layer applies it,
// and the attempts it holds: an API key's (limits.max_concurrent), one
// key's instance of a model pool or of its long-context limits, or the
// organization's, which every key shares. An attempt is placed in the
// scopes of the limits it passes (cardChain) when it reaches admission.
type cardScope struct {
	limit    int // the cap in force; 0: none
	inFlight int
	// pool is the LimitsByModel pattern of a key's pool instance ("" for
	// any other scope), whose cap SetLimitsByModel changes.
	pool string
	// keys are the API keys that sent through the organization's scope:
	// its cap is shared between them (bindingScope).
	keys map[string]struct{}
	// Idle capacity: slot-seconds accrued up to at, from the first
	// attempt the scope bound (started), and as of the last one it bound
	// (what is reported: after it the client had nothing left to send
	// that this cap held back).
	started          bool
	at               time.Time
	capT, idle       float64
	capArrv, idleArr float64
}

// keyOf returns key's account, adding it.
func (c *callCounts) keyOf(key string) *keyCalls {
	kc := c.keys[key]
	if kc == nil {
		if c.keys == nil {
			c.keys = make(map[string]*keyCalls)
		}
		kc = new(keyCalls)
		kc.scope.limit = c.capLimit
		c.keys[key] = kc
	}
	return kc
}

// accrue adds the slot-seconds from s.at to now under its cap. Times read
// before the lock may be a little out of order; a step back accrues
// nothing.
func (s *cardScope) accrue(now time.Time) {
	if !s.started || !now.After(s.at) {
		return
	}
	if s.limit > 0 {
		dt := now.Sub(s.at).Seconds()
		s.capT += dt * float64(s.limit)
		s.idle += dt * float64(max(0, s.limit-s.inFlight))
	}
	s.at = now
}

// setLimit makes limit s's cap from now on.
func (s *cardScope) setLimit(now time.Time, limit int) {
	if limit != s.limit {
		s.accrue(now)
		s.limit = limit
	}
}

// share is how many of s's slots one key may count on: the cap, divided
// between the keys that sent through it for the organization's.
func (s *cardScope) share() float64 {
	if s.keys != nil {
		return float64(s.limit) / float64(max(1, len(s.keys)))
	}
	return float64(s.limit)
}

// cardChain names the concurrency caps an attempt passes besides its
// key's (which the callLog tracks itself: setCap), as the Server's
// admitLevels chooses them: a long-context request its key's long-context
// instance alone, any other its model's pool and the organization's.
type cardChain struct {
	long       bool   // a long-context request
	longLimit  int    // long_context.limits.max_concurrent
	pool       string // the model pool's pattern, "" for none
	deployment bool   // pool is a deployment's, not LimitsByModel's
	poolLimit  int    // its max_concurrent
	org        bool   // the organization's pool applies
	orgLimit   int    // organization.limits.max_concurrent
}

// place counts attempt a, by key, reaching admission at now with the caps
// of chain: each scope is charged a slot until the attempt ends, an
// attempt arriving with one of them full is over the limit, and the scope
// that binds it (bindingScope) measures idle capacity up to it.
func (l *callLog) place(a *callAttempt, now time.Time, chain cardChain) {
	if l.disabled {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.gen != l.gen || a.kc == nil || a.scopes[0] != nil {
		return // not counted, or placed already
	}
	c := &l.cur
	sc := a.scopes[:0]
	// Innermost first: bindingScope prefers it among equals.
	switch {
	case chain.long:
		sc = append(sc, c.scopeOf("l\x00"+a.key, "", chain.longLimit))
	case chain.pool != "":
		name, pat := "p\x00", chain.pool
		if chain.deployment {
			name, pat = "d\x00", ""
		}
		sc = append(sc, c.scopeOf(name+a.key+"\x00"+chain.pool, pat, chain.poolLimit))
	}
	sc = append(sc, &a.kc.scope)
	if chain.org && !chain.long {
		if c.org == nil {
			c.org = &cardScope{keys: make(map[string]struct{})}
		}
		c.org.keys[a.key] = struct{}{}
		sc = append(sc, c.org)
	}
	k := &c.card
	var bind *cardScope
	over := false
	for _, s := range sc {
		if s != &a.kc.scope && s.limit != cardLimit(s, chain) {
			s.setLimit(now, cardLimit(s, chain))
		}
		s.accrue(now)
		if s.limit <= 0 {
			continue
		}
		k.capped = true
		if s.inFlight >= s.limit {
			over = true
			k.peakOver = max(k.peakOver, s.inFlight+1-s.limit)
		}
		if bind == nil || s.share() < bind.share() {
			bind = s
		}
	}
	if over {
		k.over++
	}
	if bind != nil && !bind.started {
		bind.started, bind.at = true, now
	}
	for _, s := range sc {
		s.inFlight++
	}
	if bind != nil {
		bind.capArrv, bind.idleArr = bind.capT, bind.idle
	}
}

// cardLimit is the cap chain gives scope s, one of its scopes other than
// the key's.
func cardLimit(s *cardScope, chain cardChain) int {
	switch {
	case s.keys != nil:
		return chain.orgLimit
	case chain.long:
		return chain.longLimit
	}
	return chain.poolLimit
}

// scopeOf returns the scope called name, adding it with cap limit; pool is
// its LimitsByModel pattern, if it has one.
func (c *callCounts) scopeOf(name, pool string, limit int) *cardScope {
	s := c.scopes[name]
	if s == nil {
		if c.scopes == nil {
			c.scopes = make(map[string]*cardScope)
		}
		s = &cardScope{limit: limit, pool: pool}
		c.scopes[name] = s
	}
	return s
}

// unplace frees a's slots at now, when it ends.
func (c *callCounts) unplace(a *callAttempt, now time.Time) {
	for i, s := range a.scopes {
		if s == nil {
			break
		}
		s.accrue(now)
		s.inFlight--
		a.scopes[i] = nil
	}
}

// retry counts a retry of oc on kc at now.
func (k *cardCounts) retry(kc *keyCalls, oc *openCall, now time.Time) {
	k.retries++
	switch oc.last {
	case answerQuota:
		k.afterQuota++
	case answerClientError:
		k.afterClientError++
	}
	if oc.refused {
		k.refusedAttempts++
	}
	if d := now.Sub(kc.waveStart); kc.wave > 0 && d <= RetryWaveWindow && d >= -RetryWaveWindow {
		kc.wave++
		return
	}
	k.closeWave(kc.wave)
	kc.waveStart, kc.wave = now, 1
}

// closeWave counts a wave of n retries.
func (k *cardCounts) closeWave(n int) {
	k.maxWave = max(k.maxWave, n)
	if n >= 2 {
		k.waves++
		k.synchronized += int64(n)
	}
}

// refusal counts oc's refusal for a rate limit or overload: the first
// makes it a refused call, with the attempts it made so far.
func (k *cardCounts) refusal(oc *openCall) {
	if oc.last == answerPushback && !oc.refused {
		oc.refused = true
		k.refusedCalls++
		k.refusedAttempts += int64(oc.attempts)
	}
}

// setCap records a change of the key's concurrency cap at now (the
// Server's limits changed): the time before it accrues under the old cap.
func (l *callLog) setCap(now time.Time, limit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.cur
	if limit == c.capLimit {
		return
	}
	for _, kc := range c.keys {
		kc.scope.setLimit(now, limit)
	}
	c.capLimit = limit
}

// setPoolCaps records a change of the per-model pools at now
// (SetLimitsByModel): each key's instance of a pool takes its new cap, one
// removed has none.
func (l *callLog) setPoolCaps(now time.Time, pools map[string]Limits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.cur.scopes {
		if s.pool != "" {
			s.setLimit(now, pools[s.pool].MaxConcurrent)
		}
	}
}

// reportCard is the ReportCard of c, the waves under way closed.
func (c *callCounts) reportCard() ReportCard {
	k := c.card
	var capT, idle float64
	add := func(s *cardScope) {
		capT += s.capArrv
		idle += s.idleArr
	}
	for _, kc := range c.keys {
		k.closeWave(kc.wave)
		add(&kc.scope)
	}
	for _, s := range c.scopes {
		add(s)
	}
	if c.org != nil {
		add(c.org)
	}
	r := ReportCard{
		Retries:                 k.retries,
		RetriesAfterQuota:       k.afterQuota,
		RetriesAfterClientError: k.afterClientError,
		RetryWaves:              k.waves,
		SynchronizedRetries:     k.synchronized,
		MaxRetryWave:            k.maxWave,
		RefusedCalls:            k.refusedCalls,
		RefusedCallAttempts:     k.refusedAttempts,
		Capped:                  k.capped,
		CapSlotSeconds:          capT,
		IdleSlotSeconds:         idle,
		OverLimit:               k.over,
		PeakOverLimit:           k.peakOver,
	}
	if k.refusedCalls > 0 {
		r.RetryAmplification = float64(k.refusedAttempts) / float64(k.refusedCalls)
	}
	if capT > 0 {
		r.IdleCapacity = idle / capT
	}
	return r
}

// cardChain returns the caps request c passes besides its key's, as
// admitLevels chooses its levels. s.mu is held.
func (s *Server) cardChain(c *wire.Call) cardChain {
	var ch cardChain
	if lc := &s.cfg.LongContext; lc.ThresholdTokens > 0 && c.Input > lc.ThresholdTokens {
		return cardChain{long: true, longLimit: lc.Limits.MaxConcurrent}
	}
	if s.org != nil {
		ch.org, ch.orgLimit = true, s.cfg.Organization.Limits.MaxConcurrent
	}
	if c.Pool != "" {
		ch.pool, ch.deployment, ch.poolLimit = c.Pool, true, s.deploymentPools[c.Pool].MaxConcurrent
	} else if name := admission.PoolFor(s.pools, c.Model); name != "" {
		ch.pool, ch.poolLimit = name, s.pools[name].MaxConcurrent
	}
	return ch
}
