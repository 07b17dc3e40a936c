package strategies

import (
	"testing"
	"time"
)

// fakeFleet is a Fleet held in memory, shared by the Adaptive strategies of
// a test's "processes", on the test's clock.
type fakeFleet struct {
	limit, peers int
	holder       string    // who holds the probe token
	until        time.Time // when it expires
	now          time.Time
}

// fleetMember is one process's view of a fakeFleet.
type fleetMember struct {
	f    *fakeFleet
	name string
}

func (m fleetMember) Share(provider, key string, learned int) (int, int) {
	if learned > 0 {
		m.f.limit = learned
	}
	return m.f.limit, m.f.peers
}

func (m fleetMember) Probe(provider, key string, hold time.Duration) bool {
	f := m.f
	if f.holder == m.name && f.now.Before(f.until) {
		return true
	}
	if !f.now.Before(f.until) {
		f.holder, f.until = m.name, f.now.Add(hold)
		return true
	}
	return false
}

// TestAdaptiveFleet steps two processes of a fleet of 4 sharing a limit of
// 20 at explicit times: each window is capped at its share (5); a probe
// above the share goes only from the holder of the probe token, one process
// at a time; a throttle publishes a lower fleet limit, a held probe a higher
// one, and the shares follow.
func TestAdaptiveFleet(t *testing.T) {
	fleet := &fakeFleet{limit: 20, peers: 4}
	procs := map[string]*Adaptive{}
	attempts := map[string][]adaptiveAttempt{}
	for _, name := range []string{"a", "b"} {
		procs[name] = NewAdaptive(AdaptiveConfig{Initial: 8, Fleet: fleetMember{fleet, name}})
	}
	k := limitKey{"p", "k"}
	// admit dispatches n attempts of proc at now, as Acquire does, and
	// returns how many were admitted.
	admit := func(proc string, now time.Time, n int) int {
		a := procs[proc]
		ak := a.keyLocked(k)
		got := 0
		for range n {
			a.syncFleetLocked(now, k, ak)
			if ok, _, _ := ak.law.admit(now, Cost{}); !ok {
				break
			}
			attempts[proc] = append(attempts[proc], ak.law.dispatch(now, Cost{}))
			got++
		}
		return got
	}
	end := func(proc string, now time.Time, i int, o Outcome) {
		a := procs[proc]
		ak := a.keyLocked(k)
		ak.law.finish(now, attempts[proc][i], o, true)
		a.syncFleetLocked(now, k, ak)
	}
	const s = time.Second
	ok := Outcome{Kind: Success, Status: 200, Latency: s}
	type step struct {
		at       time.Duration
		do       func(now time.Time)
		proc     string
		want     int // attempts admitted by do (-1: not checked)
		capacity int // proc's capacity after the step
		limit    int // the fleet's limit after the step
	}
	steps := []step{
		// Capped at the share: 5 of 20 over 4, though the window starts at 8.
		{0, func(now time.Time) {}, "a", -1, 5, 20},
		{0, nil, "a", 5, 5, 20},
		{0, nil, "b", 5, 5, 20},
		// At 3 s (ProbeAfter round trips) both may probe; a asks first and
		// takes the token for 3 s, b does not get it.
		{3 * s, nil, "a", 1, 6, 20},
		{3 * s, nil, "b", 0, 5, 20},
		// a's probe is held: the fleet's limit rises by one (21: shares stay 5).
		{3500 * time.Millisecond, func(now time.Time) { end("a", now, 5, ok) }, "a", -1, 5, 21},
		// b still has no token until a's expires at 6 s; then b probes.
		{5 * s, nil, "b", 0, 5, 21},
		{6 * s, nil, "b", 1, 6, 21},
		// A call of b sent before its probe is refused with 5 others of b's
		// in flight: refused in the probe's place (the law's rule), so the
		// limit has not risen; b's share stays 5 and the fleet's limit 21.
		{6500 * time.Millisecond, func(now time.Time) { end("b", now, 0, refusal) }, "b", -1, 5, 21},
		// Another refusal, with 4 of b's held: the server holds 4 of b's
		// where b's share is 5, so b publishes 21 − 5 + 4 = 20, and its
		// window drops to 0.9 × 4.
		{7 * s, func(now time.Time) { end("b", now, 1, refusal) }, "b", -1, 3, 20},
		// a follows the fleet: still 5 of 20, all in flight.
		{7 * s, nil, "a", 0, 5, 20},
	}
	for i, st := range steps {
		now := stepT0.Add(st.at)
		fleet.now = now
		if st.do == nil {
			if got := admit(st.proc, now, 10); got != st.want {
				t.Errorf("step %d at %v: %s admitted %d, want %d", i, st.at, st.proc, got, st.want)
			}
		} else {
			st.do(now)
		}
		a := procs[st.proc]
		ak := a.keyLocked(k)
		a.syncFleetLocked(now, k, ak)
		if got := ak.law.capacity(now); got != st.capacity {
			t.Errorf("step %d at %v: %s capacity %d, want %d", i, st.at, st.proc, got, st.capacity)
		}
		if fleet.limit != st.limit {
			t.Errorf("step %d at %v: fleet limit %d, want %d", i, st.at, fleet.limit, st.limit)
		}
	}
}
