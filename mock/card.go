package mock

import (
	"net/http"
	"time"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// ReportCard is how a client behaved toward the server's refusals, as the
// server saw it: the figures of loadgen's report card (docs/loadgen.md,
// "The report card"). Every figure comes from the call accounting
// (CallStats documents how attempts are grouped into calls); a retry is an
// attempt that joined an earlier call.
type ReportCard struct {
	// Retries counts attempts that joined an earlier call.
	Retries int64 `json:"retries"`

	// RetriesAfterQuota counts retries of a call whose previous attempt was
	// refused for a spent quota (Config.Quota: a 429 sent with
	// x-should-retry: false, which no wait fixes); RetriesAfterClientError
	// those whose previous attempt got a 4xx no retry fixes (400, 404, 413,
	// 422, …: any 4xx but 408, 409, 429 and the 499 of a client that went
	// away).
	RetriesAfterQuota       int64 `json:"retries_after_quota"`
	RetriesAfterClientError int64 `json:"retries_after_client_error"`

	// A retry wave is the retries of one API key that arrive within
	// RetryWaveWindow of the wave's first: a client that retries exactly
	// after the retry-after it was given, without jitter, brings back every
	// call refused at one instant at one instant. RetryWaves counts the
	// waves of two retries or more, SynchronizedRetries the retries in
	// them, MaxRetryWave the largest (1 when retries came one by one, 0
	// with none).
	RetryWaves          int64 `json:"retry_waves"`
	SynchronizedRetries int64 `json:"synchronized_retries"`
	MaxRetryWave        int   `json:"max_retry_wave"`

	// RefusedCalls counts the calls with an attempt refused for a rate
	// limit (429, not a quota's) or for overload (529, 503);
	// RefusedCallAttempts the attempts those calls made, all of them;
	// RetryAmplification is their ratio: how many attempts a call costs
	// the server once it was pushed back (0 with no refused call).
	RefusedCalls        int64   `json:"refused_calls"`
	RefusedCallAttempts int64   `json:"refused_call_attempts"`
	RetryAmplification  float64 `json:"retry_amplification"`

	// Capped is true when an attempt arrived while the server capped each
	// key's concurrency (Limits.MaxConcurrent; per-model pools are not
	// followed): idle capacity and the figures over the cap are measured
	// only then, and are 0 without.
	Capped bool `json:"capped"`

	// Idle capacity is measured against the key's concurrency cap
	// (Limits.MaxConcurrent, as the server applies it: a schedule entry
	// from the first request after its time), per API key, from the key's
	// first attempt to its last: while the client was still to send a
	// request, it had work waiting. CapSlotSeconds is the cap integrated
	// over that time, IdleSlotSeconds the slots not in use (the cap less
	// the attempts in flight, when positive) over it, summed over the
	// keys; IdleCapacity is their ratio, 0..1.
	CapSlotSeconds  float64 `json:"cap_slot_seconds"`
	IdleSlotSeconds float64 `json:"idle_slot_seconds"`
	IdleCapacity    float64 `json:"idle_capacity"`

	// OverLimit counts attempts that arrived while their key already had
	// its concurrency cap in flight (they are refused, max_concurrent);
	// PeakOverLimit is the most in flight above the cap, that attempt
	// included.
	OverLimit     int64 `json:"over_limit"`
	PeakOverLimit int   `json:"peak_over_limit"`
}

// RetryWaveWindow is how close together retries of one key arrive to be
// one wave (ReportCard.RetryWaves).
const RetryWaveWindow = 10 * time.Millisecond

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
