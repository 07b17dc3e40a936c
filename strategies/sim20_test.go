package strategies

import (
	"math"
	"testing"
	"time"
)

// The 20-concurrent scenario (scenarios/20-concurrent.yaml) in virtual time:
// 200 calls of exactly 0.5 s against a limit of 20, each 429 back at once
// with retry-after 1 s, every call through Do re-queued up to 10 retries. The
// oracle, 20 calls at a time from the first instant, takes 200/20 × 0.5 s.
const (
	sim20Calls  = 200
	sim20Oracle = sim20Calls / simLimit * 500 * time.Millisecond
)

// sim20Figures are what one strategy did in the 20-concurrent scenario.
type sim20Figures struct {
	wall      time.Duration
	completed int
	refusals  int
	perCall   float64
	// growth is the limit's growth per round trip from the start to its peak
	// before its first decrease (or the end of the batch): about +1 for AIMD.
	growth float64
	// to16 is the round trips until the limit first reached 16 from 4:
	// 2 if it doubles every round trip, 12 at +1 per round trip; +Inf if never.
	to16 float64
}

func sim20Measure(t *testing.T, newStrategy func(...Option) Strategy, seed uint64) sim20Figures {
	t.Helper()
	rtt := simFixed.rtt()
	r := runSim(t, simConfig{model: simFixed, new: newStrategy, seed: seed, calls: sim20Calls, maxRetries: 10})
	f := sim20Figures{
		wall:      r.wall,
		completed: r.calls - r.failed,
		refusals:  len(r.refusals),
		perCall:   float64(r.attempts) / float64(r.calls-r.failed),
		to16:      math.Inf(1),
	}
	if len(r.limits) > 0 {
		first, peak := r.limits[0], r.limits[0]
		for _, p := range r.limits[1:] {
			if p.n < peak.n {
				break
			}
			peak = p
		}
		if peak.t > 0 {
			f.growth = float64(peak.n-first.n) / (float64(peak.t) / float64(rtt))
		}
		for _, p := range r.limits {
			if p.n >= 16 {
				f.to16 = float64(p.t) / float64(rtt)
				break
			}
		}
	}
	return f
}

// TestSim20Concurrent runs the 20-concurrent scenario for adaptive, aimd and
// aimd-delay over simSeeds, logs the worst seed's figures, and asserts
// adaptive's wall time within 1.3 × the oracle with at most 5 429s, adaptive's
// slow start doubling per round trip and AIMD's growth of about +1 per round
// trip, although the calls end in synchronized waves.
func TestSim20Concurrent(t *testing.T) {
	results := make(map[string]sim20Figures)
	for _, st := range simStrategies {
		if testing.Short() && st.name == "aimd-delay" {
			continue
		}
		var w sim20Figures
		for i, seed := range simSeeds {
			f := sim20Measure(t, st.new, seed)
			t.Logf("%s seed %d: %+v", st.name, seed, f)
			if i == 0 {
				w = f
				continue
			}
			w.wall = max(w.wall, f.wall)
			w.completed = min(w.completed, f.completed)
			w.refusals = max(w.refusals, f.refusals)
			w.perCall = max(w.perCall, f.perCall)
			w.growth = min(w.growth, f.growth)
			w.to16 = max(w.to16, f.to16)
		}
		results[st.name] = w
	}

	t.Logf("worst of %d seeds; %d calls of %v, C = %d, 429 at once with retry-after %v, requeue, max_retries 10; oracle %v:",
		len(simSeeds), sim20Calls, simFixed.minLatency, simLimit, simRetryAfter, sim20Oracle)
	t.Logf("| figure | target | adaptive | aimd | aimd-delay |")
	t.Logf("|---|---|---|---|---|")
	row := func(name, target string, f func(sim20Figures) string) {
		cell := func(name string) string {
			if r, ok := results[name]; ok {
				return f(r)
			}
			return "–"
		}
		t.Logf("| %s | %s | %s | %s | %s |", name, target, cell("adaptive"), cell("aimd"), cell("aimd-delay"))
	}
	row("completed", "200", func(f sim20Figures) string { return ftoa(float64(f.completed), 0) })
	row("virtual time", "adaptive ≤ 6.5s", func(f sim20Figures) string { return f.wall.Round(10 * time.Millisecond).String() })
	row("time / oracle (5.0 s)", "adaptive ≤ 1.3", func(f sim20Figures) string { return ftoa(f.wall.Seconds()/sim20Oracle.Seconds(), 2) })
	row("429s", "adaptive ≤ 5", func(f sim20Figures) string { return ftoa(float64(f.refusals), 0) })
	row("attempts per completed call", "", func(f sim20Figures) string { return ftoa(f.perCall, 3) })
	row("round trips for the limit from 4 to 16", "adaptive ≤ 3", func(f sim20Figures) string { return fmtRTT(f.to16) })
	row("limit growth per round trip, to its first peak", "aimd ≈ 1", func(f sim20Figures) string { return ftoa(f.growth, 2) })

	a, m := results["adaptive"], results["aimd"]
	if a.completed != sim20Calls {
		t.Errorf("adaptive: %d of %d calls completed, want all", a.completed, sim20Calls)
	}
	if limit := sim20Oracle * 13 / 10; a.wall > limit {
		t.Errorf("adaptive: virtual time %v, want ≤ %v (1.3 × the oracle)", a.wall, limit)
	}
	if a.refusals > 5 {
		t.Errorf("adaptive: %d 429s, want ≤ 5", a.refusals)
	}
	if a.to16 > 3 {
		t.Errorf("adaptive: %.1f round trips for the limit from 4 to 16, want ≤ 3 (doubling per round trip)", a.to16)
	}
	if m.growth < 0.8 || m.growth > 1.2 {
		t.Errorf("aimd: limit growth %.2f per round trip, want 0.8–1.2", m.growth)
	}
	if m.completed != sim20Calls {
		t.Errorf("aimd: %d of %d calls completed, want all", m.completed, sim20Calls)
	}
}
