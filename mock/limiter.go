package mock

import (
	"math"
	"time"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// bucket is a token bucket refilling continuously at limit tokens per
// minute and holding at most capacity tokens: limit × burst / 1 minute, so
// that a burst of one minute (the default) holds a minute's refill and one
// of 1 s at 60 per minute holds one token. Every method takes the current
// time, so its behaviour is a pure function of the instants it is given; it
// is not safe for concurrent use.
//
// A request larger than the capacity but within the per-minute limit is let
// through when the bucket is full, leaving the level negative: it then
// waits for its whole cost to refill, as a request of that size would under
// the per-minute limit, rather than never fitting.
type bucket struct {
	limit    float64 // per minute: the refill rate, and the headers' limit
	capacity float64 // the most the bucket holds
	level    float64
	last     time.Time
}

// burstCapacity is the capacity of a bucket of perMinute tokens a minute
// holding burst of refill; burst 0 means one minute.
func burstCapacity(perMinute int, burst time.Duration) float64 {
	if burst <= 0 || burst == time.Minute {
		return float64(perMinute)
	}
	return float64(perMinute) * burst.Seconds() / 60
}

// BurstSize is how many tokens a bucket of perMinute a minute holds under
// l.Burst: what a key may spend at once after an idle spell.
func (l Limits) BurstSize(perMinute int) float64 {
	return burstCapacity(perMinute, l.Burst)
}

// newBucket returns a full bucket of perMinute tokens a minute holding
// burst of refill (0: one minute).
func newBucket(perMinute int, burst time.Duration, now time.Time) *bucket {
	c := burstCapacity(perMinute, burst)
	return &bucket{limit: float64(perMinute), capacity: c, level: c, last: now}
}

// perSecond is the refill rate.
func (b *bucket) perSecond() float64 { return b.limit / 60 }

// advance refills the bucket up to now. A now before the last instant seen
// is treated as the last instant.
func (b *bucket) advance(now time.Time) {
	if !now.After(b.last) {
		return
	}
	b.level = math.Min(b.capacity, b.level+now.Sub(b.last).Seconds()*b.perSecond())
	b.last = now
}

// tokens returns the tokens available at now (negative after a request
// larger than the capacity).
func (b *bucket) tokens(now time.Time) float64 {
	b.advance(now)
	return b.level
}

// wait returns how long until n tokens may be taken: 0 if they may now. n
// above the capacity may be taken when the bucket is full; above the
// per-minute limit it never fits (tooLarge) and wait returns the time to
// fill the bucket.
func (b *bucket) wait(now time.Time, n float64) time.Duration {
	b.advance(now)
	n = math.Min(n, b.capacity)
	if b.level >= n {
		return 0
	}
	return secondsToDuration((n - b.level) / b.perSecond())
}

// tooLarge reports whether n tokens exceed what the bucket ever allows: the
// per-minute limit, or the capacity when a burst above a minute makes it
// larger.
func (b *bucket) tooLarge(n float64) bool {
	return n > math.Max(b.limit, b.capacity)
}

// take removes n tokens; the caller has checked that they may be taken.
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

// resize changes the limit and burst without resetting the level: the
// tokens already used stay used, and a lower capacity caps the level.
func (b *bucket) resize(now time.Time, perMinute int, burst time.Duration) {
	b.advance(now)
	b.limit = float64(perMinute)
	b.capacity = burstCapacity(perMinute, burst)
	b.level = math.Min(b.level, b.capacity)
}

// secondsToDuration rounds to the nanosecond rather than up, so that float
// error does not turn an exact 2s into 2.000000001s and a retry-after of 3.
func secondsToDuration(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}

// syncBucket makes *b match a per-minute limit and burst: nil when
// unlimited, a full new bucket when the limit appears, a resized one when
// the limit or the burst changes.
func syncBucket(b **bucket, perMinute int, burst time.Duration, now time.Time) {
	switch {
	case perMinute <= 0:
		*b = nil
	case *b == nil:
		*b = newBucket(perMinute, burst, now)
	case (*b).limit != float64(perMinute) || (*b).capacity != burstCapacity(perMinute, burst):
		(*b).resize(now, perMinute, burst)
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
	wait       time.Duration // the exact wait retryAfter rounds up (retry-after-ms)
	tooLarge   bool          // the request alone exceeds the limit; retrying cannot help
	need, cap  int           // for messages: what was requested and the limit
	msg        string        // the 429's message, when the limit words it itself
}

// keyLimiter holds one API key's limiter state. Its methods take the time
// as an argument; the Server serializes calls.
type keyLimiter struct {
	inFlight             int
	rpm, itpm, otpm, tpm *bucket
	ends                 map[uint64]time.Time   // planned ends of in-flight requests
	used                 quotaUsage             // toward Config.Quota
	cache                promptCache            // prompt prefixes cached (cache.go)
	pools                map[string]*keyLimiter // Config.LimitsByModel, by pattern (pools.go)
	ramp                 ramp                   // requests started, for Limits.Acceleration (accel.go)
}

func newKeyLimiter() *keyLimiter {
	return &keyLimiter{ends: make(map[uint64]time.Time)}
}

// sync makes the buckets match l, keeping their levels.
func (k *keyLimiter) sync(now time.Time, l Limits) {
	syncBucket(&k.rpm, l.RPM, l.Burst, now)
	syncBucket(&k.itpm, l.ITPM, l.Burst, now)
	syncBucket(&k.otpm, l.OTPM, l.Burst, now)
	syncBucket(&k.tpm, l.TPM, l.Burst, now)
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
			v.retryAfter, v.wait = l.RetryAfter, l.RetryAfter
		}
		return v
	}
	k.inFlight++
	k.ends[id] = d.end
	k.ramp.add(now)
	k.used.requests++
	k.used.input += int64(d.input)
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
		return verdict{limit: wire.LimitConcurrency, retryAfter: ceilSeconds(wait), wait: max(wait, 0), need: 1, cap: l.MaxConcurrent}
	}
	if a := l.Acceleration; a.Factor > 0 {
		if ok, allowed, cur, prev, wait := k.ramp.allows(now, a); !ok {
			return verdict{limit: LimitAcceleration, retryAfter: ceilSeconds(wait), wait: wait, need: cur + 1, cap: allowed,
				msg: accelerationMessage(a, allowed, cur, prev)}
		}
	}
	for _, c := range []struct {
		name string
		b    *bucket
		n    int
	}{
		{wire.LimitRPM, k.rpm, 1},
		{wire.LimitTPM, k.tpm, d.tpmCost()},
		{wire.LimitITPM, k.itpm, d.input},
		{wire.LimitOTPM, k.otpm, d.maxTokens},
	} {
		if c.b == nil {
			continue
		}
		if w, large := c.b.wait(now, float64(c.n)), c.b.tooLarge(float64(c.n)); w > 0 || large {
			return verdict{
				limit:      c.name,
				retryAfter: ceilSeconds(w),
				wait:       w,
				tooLarge:   large,
				need:       c.n,
				cap:        int(c.b.limit),
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
	k.used.output += int64(produced)
	if k.otpm != nil && reserved > produced {
		k.otpm.give(now, float64(reserved-produced))
	}
}

func dim(b *bucket, now time.Time) wire.Dimension {
	if b == nil {
		return wire.Dimension{}
	}
	return wire.Dimension{
		Limit:     int64(b.limit),
		Remaining: max(0, int64(math.Floor(b.tokens(now)))),
		Reset:     b.fullIn(now),
	}
}

// snapshot reports the buckets at now. exceeded, when set, names the limit
// a 429 is about: its dimension reports remaining 0, and only that one. A
// concurrency 429 has no header dimension of its own, so every dimension
// reports what it really has left: a client reading requests-remaining 0
// would wait for the requests bucket's reset for nothing.
func (k *keyLimiter) snapshot(now time.Time, exceeded string) wire.Snapshot {
	s := wire.Snapshot{
		Requests: dim(k.rpm, now),
		Input:    dim(k.itpm, now),
		Output:   dim(k.otpm, now),
		Tokens:   dim(k.tpm, now),
	}
	s.Exhaust(exceeded)
	return s
}

// Limit names, as used in 429 messages, Stats.ThrottledBy and metrics.
const (
	LimitConcurrency = wire.LimitConcurrency
	LimitRPM         = wire.LimitRPM
	LimitITPM        = wire.LimitITPM
	LimitOTPM        = wire.LimitOTPM
	LimitTPM         = wire.LimitTPM
	LimitScript      = wire.LimitScript // a 429 injected by Faults.Script
	// LimitDecodeBudget is a 429 for a request body that waited
	// BodyTimeout for its share of Config.DecodeBudget.
	LimitDecodeBudget = wire.LimitDecodeBudget
)
