package strategies

import (
	"math/rand/v2"
	"sync"
	"time"
)

// DefaultMaxRetries is the official SDKs' default number of retries after the
// first attempt (three attempts in all).
const DefaultMaxRetries = 2

// The SDKs' backoff: min(InitialBackoff·2^n, MaxBackoff), n the retries already
// taken, less up to a quarter of it as jitter.
const (
	InitialBackoff = 500 * time.Millisecond
	MaxBackoff     = 8 * time.Second
)

// RetryPolicy decides, after each attempt, whether to retry and how long to
// wait first, exactly as the official Go SDKs do (anthropic-sdk-go and
// openai-go; see Retryable and Backoff for the rules). It is the `retries`
// axis of an experiment, composed with any Strategy by Do.
//
// The zero value, and a nil *RetryPolicy, never retry: one attempt per call.
// Set MaxRetries to DefaultMaxRetries for the SDKs' behaviour.
//
// A RetryPolicy is safe for concurrent use once its fields are set; the jitter
// source is shared by its callers and guarded by a lock. Do not copy a
// RetryPolicy after first use.
type RetryPolicy struct {
	// MaxRetries is how many retries may follow the first attempt: 0 means
	// none, DefaultMaxRetries is the SDKs' default, and a negative value
	// retries without limit (for re-queueing throttled items until they
	// succeed, as the batch runtime of the seeds does).
	MaxRetries int

	// Requeue selects where Do waits between attempts. False: inside the held
	// permit, as an SDK call with retries inside `async with sem:` does, so
	// the slot stays taken during the backoff. True: Do releases the permit,
	// waits outside it and acquires a new one for the next attempt, so the
	// slot serves other calls meanwhile (re-queueing the item).
	Requeue bool

	// Seed seeds the jitter source. Equal seeds give equal jitter sequences
	// for the same sequence of calls to Next.
	Seed int64

	mu  sync.Mutex
	rng *rand.Rand
}

// ForCall returns a copy of p (its fields, not its jitter source) whose
// jitter is drawn from a source of its own, seeded from Seed and id. Calls
// sharing p draw their jitter in whatever order they happen to retry, so
// runs with the same Seed differ when concurrent calls interleave
// differently; a call made with p.ForCall(id), id identifying the call (an
// item's index), gets the same waits whatever the other calls do. A nil p
// gives nil.
func (p *RetryPolicy) ForCall(id int64) *RetryPolicy {
	if p == nil {
		return nil
	}
	return &RetryPolicy{MaxRetries: p.MaxRetries, Requeue: p.Requeue, Seed: int64(mix(uint64(p.Seed), uint64(id)))}
}

// mix combines a seed and an id into a new seed (splitmix64's finalizer), so
// that neighbouring ids give unrelated sequences.
func mix(seed, id uint64) uint64 {
	z := seed ^ (id+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Next decides what follows an attempt that ended with o, when retriesTaken
// retries have already been made for the call (0 after the first attempt).
// It returns whether to retry and, if so, how long to wait before the next
// attempt: the server's delay when it sent one (Outcome.HasRetryAfter),
// otherwise the jittered exponential Backoff. Next is pure except for drawing
// the jitter from the seeded source.
func (p *RetryPolicy) Next(retriesTaken int, o Outcome) (retry bool, wait time.Duration) {
	if p == nil || (p.MaxRetries >= 0 && retriesTaken >= p.MaxRetries) || !Retryable(o) {
		return false, 0
	}
	if o.HasRetryAfter {
		return true, ServerDelay(o)
	}
	return true, Backoff(retriesTaken, p.jitter)
}

// jitter returns a uniform draw from [0, n), n > 0, from the seeded source.
func (p *RetryPolicy) jitter(n int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rng == nil {
		p.rng = rand.New(rand.NewPCG(uint64(p.Seed), 0x9e3779b97f4a7c15))
	}
	return p.rng.Int64N(n)
}

// Retryable reports whether the official SDKs retry an attempt that ended
// with o (anthropic-sdk-go's shouldRetry), retries left permitting:
//
//   - an attempt the caller canceled (Canceled, Abandoned) is never retried;
//   - nor is one refused for a spent quota (Quota), whatever x-should-retry
//     says: the SDKs key on the status alone and retry it, which only
//     spends their retries and time (ratelab's deliberate difference);
//   - an attempt that got no response (Status 0: a connection error, or a
//     per-attempt timeout) is retried;
//   - otherwise the x-should-retry header decides when present, whatever the
//     status (the SDKs honour "true" even on a 2xx);
//   - otherwise 408, 409, 429 and every status from 500 up are retried, and
//     nothing else: in particular not a 2xx whose stream failed mid-way (the
//     SDKs hand a streamed response to the caller and never retry it).
func Retryable(o Outcome) bool {
	switch {
	case o.Kind == Canceled || o.Kind == Abandoned || o.Kind == Quota:
		return false
	case o.Status == 0:
		return o.Kind != Success
	case o.ShouldRetry != nil:
		return *o.ShouldRetry
	}
	switch o.Status {
	case 408, 409, 429:
		return true
	}
	return o.Status >= 500
}

// ServerDelay returns the wait the Go SDKs take for a server delay: the
// parsed retry-after-ms or retry-after used verbatim, without a cap, and a
// negative one (an HTTP date in the past) as no wait. It is meaningful only
// when o.HasRetryAfter.
func ServerDelay(o Outcome) time.Duration { return max(0, o.RetryAfter) }

// Backoff returns the SDKs' wait before a retry when the server gave no
// delay: d = min(InitialBackoff·2^n, MaxBackoff) with n the retries already
// taken, less a jitter drawn uniformly from [0, d/4), so that the wait falls
// in (0.75·d, d]. jitter(k) must return a uniform draw from [0, k), as
// math/rand's Int63n does in the SDKs.
func Backoff(n int, jitter func(k int64) int64) time.Duration {
	d := MaxBackoff
	if n < 5 { // 0.5 s·2^5 = 16 s is past the cap; stop before 2^n overflows
		d = min(InitialBackoff<<max(n, 0), MaxBackoff)
	}
	return d - time.Duration(jitter(int64(d/4)))
}
