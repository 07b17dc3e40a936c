package admission

import (
	"math"
	"time"
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

// CeilSeconds rounds a wait up to whole seconds, at least 1: retry-after is
// an integer and a retry sent after 0 seconds would be rejected again.
func CeilSeconds(d time.Duration) time.Duration {
	s := (d + time.Second - 1) / time.Second
	return max(s, 1) * time.Second
}
