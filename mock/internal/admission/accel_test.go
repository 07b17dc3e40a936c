package admission

import (
	"testing"
	"time"
)

// TestAccelerationSteps replays a key's ramp at named instants under
// factor 2 and floor 3: 3 requests in the first minute, then 6, then 12;
// each refusal says when the next request may start; after an idle spell
// the key is back to the floor.
func TestAccelerationSteps(t *testing.T) {
	l := Limits{Acceleration: Acceleration{Factor: 2, Floor: 3}}
	k := NewKey()
	id := uint64(0)
	admit := func(now time.Duration) Verdict {
		id++
		v := k.admit(at(now), l, id, Demand{MaxTokens: 1, End: at(now)})
		k.Release(at(now), id, 1, 1)
		return v
	}
	steps := []struct {
		at       time.Duration
		admitted int           // requests admitted at this instant
		wantWait time.Duration // the wait the next one is told
	}{
		{0, 3, time.Minute},
		{30 * time.Second, 0, 30 * time.Second},
		{time.Minute, 6, time.Minute},      // 3 the minute before: 6 allowed
		{2 * time.Minute, 12, time.Minute}, // 6 before: 12
		{2*time.Minute + 500*time.Millisecond, 0, 59500 * time.Millisecond},
		{10 * time.Minute, 3, time.Minute}, // idle: the floor again
	}
	for i, s := range steps {
		for n := range s.admitted {
			if v := admit(s.at); !v.OK {
				t.Fatalf("step %d at %v: request %d refused (%s: %s), want %d admitted", i, s.at, n+1, v.Limit, v.Msg, s.admitted)
			}
		}
		v := admit(s.at)
		if v.OK || v.Limit != LimitAcceleration || v.Wait != s.wantWait || v.RetryAfter != CeilSeconds(s.wantWait) {
			t.Errorf("step %d at %v: after %d admitted: ok %v limit %q wait %v retry %v, want refusal by acceleration, wait %v", i, s.at, s.admitted, v.OK, v.Limit, v.Wait, v.RetryAfter, s.wantWait)
		}
	}
}
