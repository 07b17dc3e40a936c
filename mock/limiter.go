package mock

import (
	"math"
	"time"
)

// Limit names, as used in 429 messages, Stats.ThrottledBy and metrics.
const (
	LimitConcurrency = "max_concurrent"
	LimitRPM         = "rpm"
	LimitITPM        = "itpm"
	LimitOTPM        = "otpm"
	LimitTPM         = "tpm"
	LimitScript      = "script" // a 429 injected by Faults.Script
	// LimitDecodeBudget is a 429 for a request body that waited
	// BodyTimeout for its share of Config.DecodeBudget.
	LimitDecodeBudget = "decode_budget"
)

// bucket is a token bucket holding up to capacity tokens that refills
// continuously at capacity tokens per minute. Every method takes the current
// time, so its behaviour is a pure function of the instants it is given; it
// is not safe for concurrent use.
type bucket struct {
	capacity float64
	level    float64
	last     time.Time
}

// newBucket returns a full bucket of perMinute tokens.
func newBucket(perMinute int, now time.Time) *bucket {
	return &bucket{capacity: float64(perMinute), level: float64(perMinute), last: now}
}

// perSecond is the refill rate.
func (b *bucket) perSecond() float64 { return b.capacity / 60 }

// advance refills the bucket up to now. A now before the last instant seen
// is treated as the last instant.
func (b *bucket) advance(now time.Time) {
	if !now.After(b.last) {
		return
	}
	b.level = math.Min(b.capacity, b.level+now.Sub(b.last).Seconds()*b.perSecond())
	b.last = now
}

// tokens returns the tokens available at now.
func (b *bucket) tokens(now time.Time) float64 {
	b.advance(now)
	return b.level
}

// wait returns how long until n tokens are available: 0 if they are now.
// n above the capacity never fits; wait returns the time to fill the bucket.
func (b *bucket) wait(now time.Time, n float64) time.Duration {
	b.advance(now)
	n = math.Min(n, b.capacity)
	if b.level >= n {
		return 0
	}
	return secondsToDuration((n - b.level) / b.perSecond())
}

// take removes n tokens; the caller has checked that they are available.
func (b *bucket) take(now time.Time, n float64) {
	b.advance(now)
	b.level -= n
}

// give returns n tokens, up to the capacity.
func (b *bucket) give(now time.Time, n float64) {
	b.advance(now)
	b.level = math.Min(b.capacity, b.level+n)
}

// fullIn returns how long until the bucket is full again.
func (b *bucket) fullIn(now time.Time) time.Duration {
	b.advance(now)
	if b.level >= b.capacity {
		return 0
	}
	return secondsToDuration((b.capacity - b.level) / b.perSecond())
}

// resize changes the capacity without resetting the level: the tokens
// already used stay used, and a lower capacity caps the level.
func (b *bucket) resize(now time.Time, perMinute int) {
	b.advance(now)
	b.capacity = float64(perMinute)
	b.level = math.Min(b.level, b.capacity)
}

// secondsToDuration rounds to the nanosecond rather than up, so that float
// error does not turn an exact 2s into 2.000000001s and a retry-after of 3.
func secondsToDuration(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}

// syncBucket makes *b match a per-minute limit: nil when unlimited, a full
// new bucket when the limit appears, a resized one when it changes.
func syncBucket(b **bucket, perMinute int, now time.Time) {
	switch {
	case perMinute <= 0:
		*b = nil
	case *b == nil:
		*b = newBucket(perMinute, now)
	case (*b).capacity != float64(perMinute):
		(*b).resize(now, perMinute)
	}
}

// ceilSeconds rounds a wait up to whole seconds, at least 1: retry-after is
// an integer and a retry sent after 0 seconds would be rejected again.
func ceilSeconds(d time.Duration) time.Duration {
	s := (d + time.Second - 1) / time.Second
	return max(s, 1) * time.Second
}

// demand is what one request asks of its key's limits.
type demand struct {
	input     int       // input tokens
	maxTokens int       // output tokens reserved
	end       time.Time // when the response is planned to end
}

// tpmCost is the OpenAI charge: max(max_tokens, prompt estimate).
func (d demand) tpmCost() int { return max(d.maxTokens, d.input) }

// verdict is the answer of keyLimiter.admit.
type verdict struct {
	ok         bool
	limit      string        // the limit that was exceeded
	retryAfter time.Duration // whole seconds
	tooLarge   bool          // the request alone exceeds the limit; retrying cannot help
	need, cap  int           // for messages: what was requested and the limit
}

// keyLimiter holds one API key's limiter state. Its methods take the time
// as an argument; the Server serializes calls.
type keyLimiter struct {
	inFlight             int
	rpm, itpm, otpm, tpm *bucket
	ends                 map[uint64]time.Time // planned ends of in-flight requests
}

func newKeyLimiter() *keyLimiter {
	return &keyLimiter{ends: make(map[uint64]time.Time)}
}

// sync makes the buckets match l, keeping their levels.
func (k *keyLimiter) sync(now time.Time, l Limits) {
	syncBucket(&k.rpm, l.RPM, now)
	syncBucket(&k.itpm, l.ITPM, now)
	syncBucket(&k.otpm, l.OTPM, now)
	syncBucket(&k.tpm, l.TPM, now)
}

// admit decides whether request id with demand d may start at now under l.
// On success it takes a concurrency slot and charges every bucket. On
// failure nothing is charged, except one request of the rpm bucket when
// l.CountRejected is set and the bucket has one.
func (k *keyLimiter) admit(now time.Time, l Limits, id uint64, d demand) verdict {
	k.sync(now, l)
	v := k.check(now, l, d)
	if !v.ok {
		if l.CountRejected && k.rpm != nil && k.rpm.tokens(now) >= 1 {
			k.rpm.take(now, 1)
		}
		if l.RetryAfter > 0 {
			v.retryAfter = l.RetryAfter
		}
		return v
	}
	k.inFlight++
	k.ends[id] = d.end
	if k.rpm != nil {
		k.rpm.take(now, 1)
	}
	if k.itpm != nil {
		k.itpm.take(now, float64(d.input))
	}
	if k.otpm != nil {
		k.otpm.take(now, float64(d.maxTokens))
	}
	if k.tpm != nil {
		k.tpm.take(now, float64(d.tpmCost()))
	}
	return v
}

func (k *keyLimiter) check(now time.Time, l Limits, d demand) verdict {
	if l.MaxConcurrent > 0 && k.inFlight >= l.MaxConcurrent {
		wait, first := time.Second, true
		for _, end := range k.ends {
			if d := end.Sub(now); first || d < wait {
				wait, first = d, false
			}
		}
		return verdict{limit: LimitConcurrency, retryAfter: ceilSeconds(wait), need: 1, cap: l.MaxConcurrent}
	}
	for _, c := range []struct {
		name string
		b    *bucket
		n    int
	}{
		{LimitRPM, k.rpm, 1},
		{LimitTPM, k.tpm, d.tpmCost()},
		{LimitITPM, k.itpm, d.input},
		{LimitOTPM, k.otpm, d.maxTokens},
	} {
		if c.b == nil {
			continue
		}
		if w := c.b.wait(now, float64(c.n)); w > 0 || float64(c.n) > c.b.capacity {
			return verdict{
				limit:      c.name,
				retryAfter: ceilSeconds(w),
				tooLarge:   float64(c.n) > c.b.capacity,
				need:       c.n,
				cap:        int(c.b.capacity),
			}
		}
	}
	return verdict{ok: true}
}

// release ends request id: it frees its slot and settles its output-token
// reservation from reserved to the tokens actually produced.
func (k *keyLimiter) release(now time.Time, id uint64, reserved, produced int) {
	k.inFlight--
	delete(k.ends, id)
	if k.otpm != nil && reserved > produced {
		k.otpm.give(now, float64(reserved-produced))
	}
}

// dimension is one rate-limit header group; limit 0 means absent.
type dimension struct {
	limit, remaining int64
	reset            time.Duration // until fully replenished
}

// snapshot is the state the rate-limit headers report.
type snapshot struct {
	requests, input, output, tokens dimension
}

func dim(b *bucket, now time.Time) dimension {
	if b == nil {
		return dimension{}
	}
	return dimension{
		limit:     int64(b.capacity),
		remaining: max(0, int64(math.Floor(b.tokens(now)))),
		reset:     b.fullIn(now),
	}
}

// snapshot reports the buckets at now. exceeded, when set, names the limit
// a 429 is about: its dimension reports remaining 0, and only that one. A
// concurrency 429 has no header dimension of its own, so every dimension
// reports what it really has left: a client reading requests-remaining 0
// would wait for the requests bucket's reset for nothing.
func (k *keyLimiter) snapshot(now time.Time, exceeded string) snapshot {
	s := snapshot{
		requests: dim(k.rpm, now),
		input:    dim(k.itpm, now),
		output:   dim(k.otpm, now),
		tokens:   dim(k.tpm, now),
	}
	switch exceeded {
	case LimitRPM:
		s.requests.remaining = 0
	case LimitITPM:
		s.input.remaining = 0
	case LimitOTPM:
		s.output.remaining = 0
	case LimitTPM:
		s.tokens.remaining = 0
	}
	return s
}
