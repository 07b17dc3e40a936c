package admission

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestBucketSteps(t *testing.T) {
	b := newBucket(60, 0, t0) // 60 per minute: 1 per second, burst 60
	steps := []struct {
		now      time.Time
		op       string // take, give, resize
		n        float64
		wantWait time.Duration // wait(now, 1) after the op
		wantLvl  float64
	}{
		{at(0), "take", 60, time.Second, 0},
		{at(500 * time.Millisecond), "", 0, 500 * time.Millisecond, 0.5},
		{at(time.Second), "take", 1, time.Second, 0},
		{at(10 * time.Second), "", 0, 0, 9},
		{at(10 * time.Second), "give", 100, 0, 60},               // capped at capacity
		{at(20 * time.Second), "take", 60, time.Second, 0},       // refill never exceeds capacity
		{at(20 * time.Second), "resize", 30, 2 * time.Second, 0}, // 30/min: 0.5/s
		{at(22 * time.Second), "", 0, 0, 1},
		{at(21 * time.Second), "", 0, 0, 1}, // time going backwards is ignored
		{at(22 * time.Second), "resize", 120, 0, 1},
	}
	for i, s := range steps {
		switch s.op {
		case "take":
			b.take(s.now, s.n)
		case "give":
			b.give(s.now, s.n)
		case "resize":
			b.resize(s.now, int(s.n), 0)
		}
		if got := b.wait(s.now, 1); got != s.wantWait {
			t.Errorf("step %d (%s %v at %v): wait(1) = %v, want %v", i, s.op, s.n, s.now.Sub(t0), got, s.wantWait)
		}
		if got := b.tokens(s.now); got != s.wantLvl {
			t.Errorf("step %d (%s %v at %v): tokens = %v, want %v", i, s.op, s.n, s.now.Sub(t0), got, s.wantLvl)
		}
	}
}

func TestBucketFullIn(t *testing.T) {
	b := newBucket(600, 0, t0) // 10 per second
	b.take(t0, 300)
	if got, want := b.fullIn(t0), 30*time.Second; got != want {
		t.Errorf("fullIn after taking half = %v, want %v", got, want)
	}
	if got, want := b.fullIn(at(30*time.Second)), time.Duration(0); got != want {
		t.Errorf("fullIn 30s later = %v, want %v", got, want)
	}
}

func TestCeilSeconds(t *testing.T) {
	tests := []struct{ in, want time.Duration }{
		{-time.Second, time.Second},
		{0, time.Second},
		{time.Nanosecond, time.Second},
		{time.Second, time.Second},
		{time.Second + time.Nanosecond, 2 * time.Second},
		{59500 * time.Millisecond, 60 * time.Second},
	}
	for _, tt := range tests {
		if got := CeilSeconds(tt.in); got != tt.want {
			t.Errorf("CeilSeconds(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestKeyLimiterAdmit(t *testing.T) {
	l := Limits{MaxConcurrent: 2, RPM: 3, ITPM: 100, OTPM: 1000, TPM: 0}
	k := NewKey()
	d := func(input, maxTok int, end time.Duration) Demand {
		return Demand{Input: input, MaxTokens: maxTok, End: at(end)}
	}
	steps := []struct {
		now        time.Time
		id         uint64
		dem        Demand
		release    bool // release id instead of admitting; dem.maxTokens reserved, dem.input produced
		wantOK     bool
		wantLimit  string
		wantRetry  time.Duration
		wantLarger bool
	}{
		{now: at(0), id: 1, dem: d(10, 400, 3*time.Second), wantOK: true},
		{now: at(0), id: 2, dem: d(10, 400, 5*time.Second), wantOK: true},
		// Both slots taken: the earliest in-flight end is 3s away.
		{now: at(0), id: 3, dem: d(10, 100, 0), wantLimit: LimitConcurrency, wantRetry: 3 * time.Second},
		// Request 1 ends having produced 50 of its 400 reserved tokens.
		{now: at(time.Second), id: 1, dem: d(50, 400, 0), release: true},
		// otpm: 1000 - 400 - 400 + 350 = 550 (+16.7 refilled) left, 600 requested.
		{now: at(time.Second), id: 4, dem: d(10, 600, 0), wantLimit: LimitOTPM, wantRetry: 2 * time.Second},
		{now: at(time.Second), id: 5, dem: d(10, 500, 9*time.Second), wantOK: true},
		{now: at(time.Second), id: 6, dem: d(10, 1, 0), wantLimit: LimitConcurrency, wantRetry: 4 * time.Second},
		{now: at(2 * time.Second), id: 2, dem: d(400, 400, 0), release: true},
		// rpm: 3 used, one refills every 20s.
		{now: at(2 * time.Second), id: 7, dem: d(10, 1, 0), wantLimit: LimitRPM, wantRetry: 18 * time.Second},
		// A request above the limit itself can never succeed.
		{now: at(20 * time.Second), id: 8, dem: d(200, 1, 0), wantLimit: LimitITPM, wantLarger: true, wantRetry: time.Second},
		{now: at(20 * time.Second), id: 5, dem: d(500, 500, 0), release: true},
		{now: at(21 * time.Second), id: 9, dem: d(95, 1, time.Hour), wantOK: true},
		// itpm: 5 left at 21s, 39.17 at 41.5s; 95 needs 33.5s more.
		{now: at(41500 * time.Millisecond), id: 10, dem: d(95, 1, 0), wantLimit: LimitITPM, wantRetry: 34 * time.Second},
		{now: at(75 * time.Second), id: 10, dem: d(95, 1, time.Hour), wantOK: true},
	}
	for i, s := range steps {
		if s.release {
			k.Release(s.now, s.id, s.dem.MaxTokens, s.dem.Input)
			continue
		}
		v := k.admit(s.now, l, s.id, s.dem)
		if v.OK != s.wantOK || v.Limit != s.wantLimit || (!v.OK && v.RetryAfter != s.wantRetry) || v.TooLarge != s.wantLarger {
			t.Errorf("step %d: admit(%v, id %d, %+v) = ok %v limit %q retry %v tooLarge %v; want ok %v limit %q retry %v tooLarge %v",
				i, s.now.Sub(t0), s.id, s.dem, v.OK, v.Limit, v.RetryAfter, v.TooLarge, s.wantOK, s.wantLimit, s.wantRetry, s.wantLarger)
		}
	}
}

func TestKeyLimiterCountRejected(t *testing.T) {
	for _, count := range []bool{false, true} {
		l := Limits{MaxConcurrent: 1, RPM: 10, CountRejected: count}
		k := NewKey()
		k.admit(t0, l, 1, Demand{Input: 1, MaxTokens: 1, End: at(time.Second)})
		for i := range 3 {
			k.admit(t0, l, uint64(2+i), Demand{Input: 1, MaxTokens: 1})
		}
		want := 9.0
		if count {
			want = 6
		}
		if got := k.rpm.tokens(t0); got != want {
			t.Errorf("count_rejected %v: rpm tokens left = %v, want %v", count, got, want)
		}
	}
}

func TestKeyLimiterFixedRetryAfter(t *testing.T) {
	l := Limits{MaxConcurrent: 1, RetryAfter: 7 * time.Second}
	k := NewKey()
	k.admit(t0, l, 1, Demand{Input: 1, MaxTokens: 1, End: at(time.Minute)})
	if v := k.admit(t0, l, 2, Demand{Input: 1, MaxTokens: 1}); v.OK || v.RetryAfter != 7*time.Second {
		t.Errorf("admit over the limit = ok %v retry %v, want rejection with the fixed 7s", v.OK, v.RetryAfter)
	}
}
