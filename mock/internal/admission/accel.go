package admission

import (
	"fmt"
	"time"
)

// ramp counts a key's admitted requests per second over the last two
// minutes.
type ramp struct {
	slot  [120]int64 // the second each count belongs to, since the epoch
	count [120]int
	epoch time.Time
}

func (r *ramp) second(now time.Time) int64 {
	if r.epoch.IsZero() {
		r.epoch = now
	}
	return int64(now.Sub(r.epoch) / time.Second)
}

// windows returns the requests started in the current minute (the last 60
// one-second steps, the current one included) and in the minute before.
func (r *ramp) windows(s int64) (cur, prev int) {
	for i := range r.slot {
		age := s - r.slot[i]
		switch {
		case r.count[i] == 0 || age < 0:
		case age < 60:
			cur += r.count[i]
		case age < 120:
			prev += r.count[i]
		}
	}
	return cur, prev
}

// allows reports whether one more request may start at now under a, with
// the requests the current minute allows, the requests of this minute and
// of the minute before, and when refused the wait until one may start.
func (r *ramp) allows(now time.Time, a Acceleration) (ok bool, allowed, cur, prev int, wait time.Duration) {
	s := r.second(now)
	fits := func(s int64) (bool, int, int, int) {
		cur, prev := r.windows(s)
		allowed := max(a.Floor, int(a.Factor*float64(prev)))
		return cur+1 <= allowed, allowed, cur, prev
	}
	if ok, allowed, cur, prev = fits(s); ok {
		return
	}
	// The counts only age: within two minutes every one has, and Floor
	// (at least 1) lets a request start.
	for k := int64(1); k <= int64(len(r.slot)); k++ {
		if later, _, _, _ := fits(s + k); later {
			return false, allowed, cur, prev, r.epoch.Add(time.Duration(s+k) * time.Second).Sub(now)
		}
	}
	return false, allowed, cur, prev, 2 * time.Minute
}

// add counts a request started at now.
func (r *ramp) add(now time.Time) {
	s := r.second(now)
	i := int(s % int64(len(r.slot)))
	if r.slot[i] != s {
		r.slot[i], r.count[i] = s, 0
	}
	r.count[i]++
}

func accelerationMessage(a Acceleration, allowed, cur, prev int) string {
	return fmt.Sprintf("rate limit exceeded: acceleration: this API key's traffic grew too fast: %d requests started in the last minute after %d in the minute before, and it may start max(%d, %g × %d) = %d (the mock's ramp model of acceleration limits)",
		cur, prev, a.Floor, a.Factor, prev, allowed)
}
