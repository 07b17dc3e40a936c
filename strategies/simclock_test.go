package strategies

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ratelab/ratelab/clock"
)

var simT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clockStrategies are the strategies of the agreement tests, built on a
// clock (nil: real time).
var clockStrategies = []struct {
	name string
	new  func(c clock.Clock, opts ...Option) Strategy
}{
	{"semaphore-20", func(c clock.Clock, opts ...Option) Strategy {
		return NewSemaphore(SemaphoreConfig{Max: 20}, append(opts, WithClock(c))...)
	}},
	{"semaphore-50", func(c clock.Clock, opts ...Option) Strategy {
		return NewSemaphore(SemaphoreConfig{Max: 50}, append(opts, WithClock(c))...)
	}},
	{"aimd", func(c clock.Clock, opts ...Option) Strategy {
		return NewAIMD(AIMDConfig{}, append(opts, WithClock(c))...)
	}},
	{"aimd-delay", func(c clock.Clock, opts ...Option) Strategy {
		return NewAIMDDelay(AIMDDelayConfig{Initial: 20 * time.Millisecond}, append(opts, WithClock(c))...)
	}},
	{"adaptive", func(c clock.Clock, opts ...Option) Strategy {
		return NewAdaptive(AdaptiveConfig{}, append(opts, WithClock(c))...)
	}},
	{"token-bucket", func(c clock.Clock, opts ...Option) Strategy {
		return NewTokenBucket(TokenBucketConfig{RPM: 2400}, append(opts, WithClock(c))...)
	}},
	{"token-first", func(c clock.Clock, opts ...Option) Strategy {
		return NewTokenFirst(TokenFirstConfig{TPM: 60000, MaxConcurrent: 20}, append(opts, WithClock(c))...)
	}},
}

// TestSimClockSemaphore20 is the guide's Semaphore(20) row under clock.Sim:
// 200 calls of exactly 0.5 s against a limit of 20 take 10 waves, 5 s, with
// no refusal: the figures synctest gives, order-independent, so exact.
func TestSimClockSemaphore20(t *testing.T) {
	sim := clock.NewSim(simT0)
	r := runSim(t, simConfig{model: simFixed, seed: 1, calls: 200, maxRetries: 10, sim: sim,
		new: func(opts ...Option) Strategy {
			return NewSemaphore(SemaphoreConfig{Max: 20}, append(opts, WithClock(sim))...)
		}})
	if r.wall != 5*time.Second || r.attempts != 200 || len(r.refusals) != 0 || r.failed != 0 {
		t.Errorf("wall %v, attempts %d, refusals %d, failed %d; want 5s, 200, 0, 0", r.wall, r.attempts, len(r.refusals), r.failed)
	}
	if got := sim.Now().Sub(simT0); got != 5*time.Second {
		t.Errorf("the simulated clock ended at %v, want 5s", got)
	}
}

// TestSimClockAgrees runs every strategy through the convergence
// experiment's server in a synctest bubble and under clock.Sim. Under Sim a
// run is deterministic: twice the same seed, the same events. Against
// synctest, whose order of events at one instant is random, the figures
// agree: the same completions, walls within 1 %, attempts within 3 %.
// Semaphore(50) against a limit of 20 is the racy case the design names:
// whether a retry lands before or after a slot frees decides its fate.
func TestSimClockAgrees(t *testing.T) {
	for _, st := range clockStrategies {
		for _, model := range []simModel{simFixed, simRandom} {
			t.Run(st.name+"/"+model.name, func(t *testing.T) {
				c := simConfig{model: model, seed: 1, calls: 200, maxRetries: 10}
				c.new = func(opts ...Option) Strategy { return st.new(nil, opts...) }
				want := runSim(t, c)
				var runs [2]simRun
				for i := range runs {
					sim := clock.NewSim(simT0)
					c.sim = sim
					c.new = func(opts ...Option) Strategy { return st.new(sim, opts...) }
					runs[i] = runSim(t, c)
				}
				a, b := runs[0], runs[1]
				if a.wall != b.wall || a.attempts != b.attempts || !slices.Equal(a.refusals, b.refusals) || !slices.Equal(a.finished, b.finished) {
					t.Errorf("two Sim runs differ: wall %v / %v, attempts %d / %d", a.wall, b.wall, a.attempts, b.attempts)
				}
				if a.failed != want.failed || a.calls-a.failed != 200 {
					t.Errorf("Sim: %d of %d failed, synctest %d", a.failed, a.calls, want.failed)
				}
				if d := math.Abs(float64(a.wall-want.wall)) / float64(want.wall); d > 0.01 {
					t.Errorf("Sim wall %v, synctest %v: %.1f %% apart", a.wall, want.wall, 100*d)
				}
				if d := math.Abs(float64(a.attempts-want.attempts)) / float64(want.attempts); d > 0.03 {
					t.Errorf("Sim attempts %d, synctest %d", a.attempts, want.attempts)
				}
				if st.name == "semaphore-50" && (a.attempts < 200+30 || a.wall < 5*time.Second) {
					t.Errorf("Semaphore(50) against a limit of 20: %d attempts in %v; want refusals and a wall above 5 s", a.attempts, a.wall)
				}
			})
		}
	}
}
