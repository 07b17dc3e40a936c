package loadgen

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/strategies"
)

// TestEveryKindRunsOnTheVirtualClock: every client-strategy kind of the
// registry, built for a row of a --virtual run, runs on the run's simulated
// clock (so that Do and the engine, which run on the strategy's clock, do
// too), and a kind built without one runs in real time. A kind whose
// constructor drops its options, or whose strategy does not tell its clock,
// would run a simulated row in real time; this fails for it.
func TestEveryKindRunsOnTheVirtualClock(t *testing.T) {
	sim := clock.NewSim(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	n := 0
	for name, k := range kinds {
		if k.build == nil {
			continue
		}
		n++
		row := &Row{Name: name, Kind: name, Config: k.config()}
		s, err := newStrategy(row, nil, sim)
		if err != nil {
			t.Errorf("%s: newStrategy: %v", name, err)
			continue
		}
		if got := strategies.ClockOf(s); got != sim {
			t.Errorf("kind %s built for a virtual run runs on %T, not the run's clock.Sim", name, got)
		}
		s, err = newStrategy(row, nil, nil)
		if err != nil {
			t.Errorf("%s: newStrategy: %v", name, err)
			continue
		}
		if got := strategies.ClockOf(s); got != clock.Real {
			t.Errorf("kind %s built for a real-time run runs on %T, not clock.Real", name, got)
		}
	}
	if n < 8 {
		t.Errorf("the registry has %d client-strategy kinds, want at least the 8 this test was written for", n)
	}
}
