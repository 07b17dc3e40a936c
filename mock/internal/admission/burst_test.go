package admission

import (
	"testing"
	"time"
)

// A bucket with a burst of 1 s at 60 a minute holds one token: it admits
// one at once, then one a second, and never saves up more than one.
func TestBucketBurstSteps(t *testing.T) {
	b := newBucket(60, time.Second, t0)
	steps := []struct {
		now      time.Time
		op       string // take, resize
		n        float64
		wantWait time.Duration // wait(now, 1) after the op
		wantLvl  float64
	}{
		{at(0), "", 0, 0, 1},
		{at(0), "take", 1, time.Second, 0},
		{at(500 * time.Millisecond), "", 0, 500 * time.Millisecond, 0.5},
		{at(time.Second), "take", 1, time.Second, 0},
		{at(10 * time.Second), "", 0, 0, 1}, // 9 s idle saves up one, not nine
		// Back to a minute's burst: the level stays, the capacity grows.
		{at(10 * time.Second), "resize", 0, 0, 1},
		{at(20 * time.Second), "", 0, 0, 11},
		// 10 s of burst at 60/min holds 10: the level is capped.
		{at(20 * time.Second), "resize", 10 * float64(time.Second), 0, 10},
	}
	for i, s := range steps {
		switch s.op {
		case "take":
			b.take(s.now, s.n)
		case "resize":
			b.resize(s.now, 60, time.Duration(s.n))
		}
		if got := b.wait(s.now, 1); got != s.wantWait {
			t.Errorf("step %d (%s at %v): wait(1) = %v, want %v", i, s.op, s.now.Sub(t0), got, s.wantWait)
		}
		if got := b.tokens(s.now); got != s.wantLvl {
			t.Errorf("step %d (%s at %v): tokens = %v, want %v", i, s.op, s.now.Sub(t0), got, s.wantLvl)
		}
	}
}

// TestKeyLimiterBurst replays admissions at named instants under a burst of
// 1 s, for requests (rpm 60: one a second) and input tokens (itpm 6000:
// 100 a second), including a request larger than the burst: it is admitted
// on a full bucket and the next one waits for its whole cost to refill.
func TestKeyLimiterBurst(t *testing.T) {
	steps := []struct {
		limits     Limits
		now        time.Duration
		input      int
		wantLimit  string // "" admitted
		wantRetry  time.Duration
		wantWait   time.Duration
		wantLarger bool
	}{
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 0},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 0, wantLimit: LimitRPM, wantRetry: time.Second, wantWait: time.Second},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: time.Second},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 1500 * time.Millisecond, wantLimit: LimitRPM, wantRetry: time.Second, wantWait: 500 * time.Millisecond},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 2 * time.Second},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 30 * time.Second},
		{limits: Limits{RPM: 60, Burst: time.Second}, now: 30 * time.Second, wantLimit: LimitRPM, wantRetry: time.Second, wantWait: time.Second},
		// The same key without a burst saves up a minute again: from 31 s
		// on the bucket refills towards 60.
		{limits: Limits{RPM: 60}, now: 31 * time.Second},
		{limits: Limits{RPM: 60}, now: 41 * time.Second},
		{limits: Limits{RPM: 60}, now: 41 * time.Second},
	}
	k := NewKey()
	for i, s := range steps {
		v := k.admit(at(s.now), s.limits, uint64(i+1), Demand{Input: s.input, MaxTokens: 1, End: at(s.now)})
		k.Release(at(s.now), uint64(i+1), 1, 1)
		if v.OK != (s.wantLimit == "") || v.Limit != s.wantLimit || v.RetryAfter != s.wantRetry || v.Wait != s.wantWait || v.TooLarge != s.wantLarger {
			t.Errorf("step %d at %v: admit = ok %v limit %q retry %v wait %v tooLarge %v; want limit %q retry %v wait %v tooLarge %v",
				i, s.now, v.OK, v.Limit, v.RetryAfter, v.Wait, v.TooLarge, s.wantLimit, s.wantRetry, s.wantWait, s.wantLarger)
		}
	}

	l := Limits{ITPM: 6000, Burst: time.Second} // 100 input tokens a second, 100 at once
	tokens := []struct {
		now        time.Duration
		input      int
		wantLimit  string
		wantWait   time.Duration
		wantLarger bool
	}{
		{0, 300, "", 0, false}, // larger than the burst, on a full bucket: admitted, 200 owed
		{time.Second, 50, LimitITPM, 1500 * time.Millisecond, false},     // at -100 now: 150 to refill
		{2500 * time.Millisecond, 50, "", 0, false},                      // 50 left, 50 taken
		{2500 * time.Millisecond, 6001, LimitITPM, time.Second, true},    // above the per-minute limit: never
		{3 * time.Second, 150, LimitITPM, 500 * time.Millisecond, false}, // 50 held: waits for a full bucket
		{3500 * time.Millisecond, 150, "", 0, false},
	}
	k = NewKey()
	for i, s := range tokens {
		v := k.admit(at(s.now), l, uint64(i+1), Demand{Input: s.input, MaxTokens: 1, End: at(s.now)})
		k.Release(at(s.now), uint64(i+1), 1, 1)
		if v.OK != (s.wantLimit == "") || v.Limit != s.wantLimit || v.Wait != s.wantWait || v.TooLarge != s.wantLarger {
			t.Errorf("tokens step %d at %v (input %d): admit = ok %v limit %q wait %v tooLarge %v; want limit %q wait %v tooLarge %v",
				i, s.now, s.input, v.OK, v.Limit, v.Wait, v.TooLarge, s.wantLimit, s.wantWait, s.wantLarger)
		}
	}
}
