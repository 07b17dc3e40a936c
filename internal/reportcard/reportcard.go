// Package reportcard is the report card's vocabulary: the figures the
// mock counts of how a client treated its refusals, and loadgen reports.
//
// It holds data and no behaviour, so both sides may import it
// (internal/archtest): package mock fills a Card from its call accounting
// and package reports prints it (docs/loadgen.md, "The report card").
package reportcard

import "time"

// Card is how a client behaved toward the server's refusals, as the
// server saw it: the figures of loadgen's report card (docs/loadgen.md,
// "The report card"). Every figure comes from the call accounting
// (mock.CallStats documents how attempts are grouped into calls); a retry is an
// attempt that joined an earlier call.
type Card struct {
	// Retries counts attempts that joined an earlier call.
	Retries int64 `json:"retries"`

	// RetriesAfterQuota counts retries of a call whose previous attempt was
	// refused for a spent quota (a quota 429, sent with
	// x-should-retry: false, which no wait fixes); RetriesAfterClientError
	// those whose previous attempt got a 4xx no retry fixes (400, 404, 413,
	// 422, …: any 4xx but 408, 409, 429 and the 499 of a client that went
	// away).
	RetriesAfterQuota       int64 `json:"retries_after_quota"`
	RetriesAfterClientError int64 `json:"retries_after_client_error"`

	// A retry wave is the retries of one API key that arrive within
	// WaveWindow of the wave's first: a client that retries exactly
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

	// Capped is true when an attempt reached admission under a
	// concurrency cap: its key's (limits.max_concurrent, as the schedule
	// and SetLimits change it), its model pool's (limits_by_model, a
	// deployment's), the organization's (organization.limits, shared by
	// every key) or its key's long-context one (long_context.limits).
	// Idle capacity and the figures over the cap are measured only then,
	// and are 0 without. capacity.max_concurrent, the provider's own, is
	// overload, not a cap of the client's.
	Capped bool `json:"capped"`

	// Idle capacity is measured against the cap that bound each attempt:
	// of the caps it passed, the one with the fewest slots for its key
	// (the organization's divided between the keys that sent through it
	// so far; the innermost among equals), as the server applied them
	// when it arrived. Each cap counts from the first attempt it bound to
	// the last: while the client was still to send a request that cap held
	// back, it had work waiting. CapSlotSeconds is the cap integrated over
	// that time, IdleSlotSeconds the slots not in use (the cap less the
	// attempts it held, when positive) over it, summed over the caps;
	// IdleCapacity is their ratio, 0..1.
	CapSlotSeconds  float64 `json:"cap_slot_seconds"`
	IdleSlotSeconds float64 `json:"idle_slot_seconds"`
	IdleCapacity    float64 `json:"idle_capacity"`

	// OverLimit counts attempts that arrived while one of the caps they
	// pass already had its cap in flight (they are refused); PeakOverLimit
	// is the most in flight above a cap, that attempt included.
	OverLimit     int64 `json:"over_limit"`
	PeakOverLimit int   `json:"peak_over_limit"`
}

// BadRetries is the retries sent after an answer no retry fixes.
func (c Card) BadRetries() int64 { return c.RetriesAfterQuota + c.RetriesAfterClientError }

// WaveWindow is how close together retries of one key arrive to be one
// wave (Card.RetryWaves).
const WaveWindow = 10 * time.Millisecond
