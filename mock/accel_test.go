package mock

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestAccelerationSteps replays a key's ramp at named instants under
// factor 2 and floor 3: 3 requests in the first minute, then 6, then 12;
// each refusal says when the next request may start; after an idle spell
// the key is back to the floor.
func TestAccelerationSteps(t *testing.T) {
	l := Limits{Acceleration: Acceleration{Factor: 2, Floor: 3}}
	k := newKeyLimiter()
	id := uint64(0)
	admit := func(now time.Duration) verdict {
		id++
		v := k.admit(at(now), l, id, demand{maxTokens: 1, end: at(now)})
		k.release(at(now), id, 1, 1)
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
			if v := admit(s.at); !v.ok {
				t.Fatalf("step %d at %v: request %d refused (%s: %s), want %d admitted", i, s.at, n+1, v.limit, v.msg, s.admitted)
			}
		}
		v := admit(s.at)
		if v.ok || v.limit != LimitAcceleration || v.wait != s.wantWait || v.retryAfter != ceilSeconds(s.wantWait) {
			t.Errorf("step %d at %v: after %d admitted: ok %v limit %q wait %v retry %v, want refusal by acceleration, wait %v", i, s.at, s.admitted, v.ok, v.limit, v.wait, v.retryAfter, s.wantWait)
		}
	}
}

// Over HTTP the refusal is a 429 naming the rule, counted as throttled by
// acceleration.
func TestAccelerationOverHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits = Limits{RPM: 1000, Acceleration: Acceleration{Factor: 1.5, Floor: 2}}
		ts := startServer(t, cfg)
		defer ts.stop()
		var got []int
		var last reply
		for range 3 {
			last = ts.do(t, "POST", "/v1/messages", anthropicBody(5, false, "hi"))
			got = append(got, last.status)
		}
		if fmt.Sprint(got) != "[200 200 429]" || last.header.Get("Retry-After") != "60" ||
			!strings.Contains(string(last.body), "rate limit exceeded: acceleration: this API key's traffic grew too fast: 2 requests started in the last minute after 0 in the minute before, and it may start max(2, 1.5 × 0) = 2") {
			t.Errorf("statuses %v, retry-after %q, body %s", got, last.header.Get("Retry-After"), last.body)
		}
		if r := last.header.Get("Anthropic-Ratelimit-Requests-Remaining"); r != "998" {
			t.Errorf("requests-remaining = %q on an acceleration 429, want 998: the rule has no header of its own", r)
		}
		if st := ts.Stats(); st.ThrottledBy[LimitAcceleration] != 1 {
			t.Errorf("throttled_by = %v, want acceleration: 1", st.ThrottledBy)
		}
	})
}
