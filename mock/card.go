package mock

import (
	"net/http"
	"time"

	"github.com/ratelab/ratelab/internal/reportcard"
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
	early    int64
	inFlight int
	// Idle capacity: slot-seconds accrued up to at, and as of the key's
	// last arrival (what is reported: after it the client had nothing left
	// to send on this key).
	started          bool
	at               time.Time
	capT, idle       float64
	capArrv, idleArr float64
	// The retry wave under way: its first retry's arrival and its size.
	waveStart time.Time
	wave      int
}

// keyOf returns key's account, adding it.
func (c *callCounts) keyOf(key string) *keyCalls {
	kc := c.keys[key]
	if kc == nil {
		if c.keys == nil {
			c.keys = make(map[string]*keyCalls)
		}
		kc = new(keyCalls)
		c.keys[key] = kc
	}
	return kc
}

// accrue adds the slot-seconds from kc.at to now under the concurrency
// cap limit (0: none). Times read before the lock may be a little out of
// order; a step back accrues nothing.
func (kc *keyCalls) accrue(now time.Time, limit int) {
	if !kc.started || !now.After(kc.at) {
		return
	}
	if limit > 0 {
		dt := now.Sub(kc.at).Seconds()
		kc.capT += dt * float64(limit)
		kc.idle += dt * float64(max(0, limit-kc.inFlight))
	}
	kc.at = now
}

// arrive counts an attempt's arrival on kc, after accrue: the cap it
// arrived above, and the idle capacity so far as the reported one.
func (k *cardCounts) arrive(kc *keyCalls, now time.Time, limit int) {
	if !kc.started {
		kc.started, kc.at = true, now
	}
	k.capped = k.capped || limit > 0
	if limit > 0 && kc.inFlight >= limit {
		k.over++
		k.peakOver = max(k.peakOver, kc.inFlight+1-limit)
	}
	kc.inFlight++
	kc.capArrv, kc.idleArr = kc.capT, kc.idle
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

// setCap records a change of the concurrency cap at now (the Server's
// limits changed): the time before it accrues under the old cap.
func (l *callLog) setCap(now time.Time, limit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.cur
	if limit == c.capLimit {
		return
	}
	for _, kc := range c.keys {
		kc.accrue(now, c.capLimit)
	}
	c.capLimit = limit
}

// reportCard is the ReportCard of c, the waves under way closed.
func (c *callCounts) reportCard() ReportCard {
	k := c.card
	var capT, idle float64
	for _, kc := range c.keys {
		k.closeWave(kc.wave)
		capT += kc.capArrv
		idle += kc.idleArr
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
