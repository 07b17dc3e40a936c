package loadgen

import (
	"math"
	"testing"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
)

// TestTimelineEvents checks that a strategy's state changes reach the
// report's timeline, at the virtual times they happened.
func TestTimelineEvents(t *testing.T) {
	t.Run("aimd-delay", func(t *testing.T) {
		rep := runVirtual(t, "../scenarios/undocumented-limit.yaml", "aimd-delay")
		evs := timelineEvents(t, rep)
		// The case study's law: 6.0 s becomes 5.4 s after three successes,
		// and a throttle starts a 10 s cooldown, shown as a closed gate.
		var shrank, cooled bool
		for _, e := range evs {
			if e.Type == "delay" && math.Abs(e.Value-5.4) < 1e-9 {
				shrank = true
			}
			if e.Type == "gate_close" && math.Abs(e.Until-e.T-10) < 1e-6 {
				cooled = true
			}
		}
		if !shrank {
			t.Errorf("no delay event of 5.4 s in %d events", len(evs))
		}
		if !cooled {
			t.Errorf("no 10 s cooldown (gate_close) in %d events", len(evs))
		}
	})
	t.Run("adaptive", func(t *testing.T) {
		rep := runVirtual(t, "../scenarios/limit-change.yaml", "adaptive")
		evs := timelineEvents(t, rep)
		// The server's limit is 20, then 10 from 5 s, then 20 again from
		// 15 s: the learned limit must follow it down and back up.
		last := func(before float64) float64 {
			v := math.NaN()
			for _, e := range evs {
				if e.Type == "limit" && e.T < before {
					v = e.Value
				}
			}
			return v
		}
		if got := last(14.9); !(got <= 10) {
			t.Errorf("limit before 15 s = %v, want ≤ 10 (the server's limit dropped to 10 at 5 s)", got)
		}
		if got := last(math.Inf(1)); !(got >= 18) {
			t.Errorf("final limit event = %v, want ≥ 18 (the server's limit is back at 20 from 15 s)", got)
		}
		for i := 1; i < len(evs); i++ {
			if evs[i].T < evs[i-1].T {
				t.Fatalf("events out of order: %v after %v", evs[i], evs[i-1])
			}
		}
	})
}

func timelineEvents(t *testing.T, rep reports.Report) []measure.StrategyEvent {
	t.Helper()
	if len(rep.Results) != 1 || rep.Results[0].Timeline == nil {
		t.Fatalf("want one result with a timeline, got %d results", len(rep.Results))
	}
	tl := rep.Results[0].Timeline
	if len(tl.Events) == 0 {
		t.Fatal("the timeline has no events")
	}
	if tl.EventsDropped != 0 {
		t.Errorf("%d events dropped, want 0", tl.EventsDropped)
	}
	return tl.Events
}
