package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

var simT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// limitClient is a closed system's server as a Client: every call takes
// latency on the clock, and a call arriving while limit calls are held is
// refused at once with a 429 and retry-after 1 s. A held call's slot is free
// from the instant it ends.
type limitClient struct {
	clk     clock.Clock
	limit   int
	latency time.Duration

	mu   sync.Mutex
	held int
}

func (c *limitClient) Do(ctx context.Context, r provider.Request, _ int) (provider.Response, strategies.Outcome) {
	c.mu.Lock()
	if c.held >= c.limit {
		c.mu.Unlock()
		return provider.Response{}, strategies.Outcome{Kind: strategies.Throttled, Status: 429,
			Err: &provider.APIError{Status: 429, Type: "rate_limit_error", Message: "no"}, HasRetryAfter: true, RetryAfter: time.Second}
	}
	c.held++
	c.mu.Unlock()
	err := c.clk.Sleep(ctx, c.latency)
	c.mu.Lock()
	c.held--
	c.mu.Unlock()
	if err != nil {
		return provider.Response{}, strategies.Outcome{Kind: strategies.Canceled, Err: err}
	}
	return provider.Response{Text: "ok", StopReason: "end_turn", Usage: strategies.Usage{InputTokens: 1, OutputTokens: 2}},
		strategies.Outcome{Kind: strategies.Success, Status: 200, Latency: c.latency}
}

// closedRun runs n items of 500 ms under Semaphore(sem) against a limit of
// 20, retrying re-queued up to 10 times, on clk.
func closedRun(ctx context.Context, clk clock.Clock, sem, n int) (measure.Summary, error) {
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{Index: i, Request: provider.Request{Model: "m", MaxTokens: 10,
			Messages: []provider.Message{{Role: "user", Content: fmt.Sprint(i)}}}}
	}
	cfg := Config{
		Client:   &limitClient{clk: clk, limit: 20, latency: 500 * time.Millisecond},
		Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: sem}, strategies.WithClock(clk)),
		Retry:    &strategies.RetryPolicy{MaxRetries: 10, Requeue: true, Seed: 1},
	}
	return Run(ctx, cfg, Slice(items))
}

// simRun runs closedRun under a new clock.Sim.
func simRun(t *testing.T, sem, n int) measure.Summary {
	t.Helper()
	sim := clock.NewSim(simT0)
	var (
		sum measure.Summary
		err error
	)
	if rerr := sim.Run(t.Context(), func() { sum, err = closedRun(t.Context(), sim, sem, n) }); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sim.Now().Sub(simT0).Seconds(), sum.WallSeconds; got != want {
		t.Errorf("the simulated clock moved %vs, the run's wall is %vs", got, want)
	}
	return sum
}

// synctestRun runs closedRun in real time inside a synctest bubble.
func synctestRun(t *testing.T, sem, n int) measure.Summary {
	t.Helper()
	var sum measure.Summary
	synctest.Test(t, func(t *testing.T) {
		var err error
		if sum, err = closedRun(t.Context(), clock.Real, sem, n); err != nil {
			t.Fatal(err)
		}
	})
	return sum
}

// TestSimClosedSystem is the guide's Semaphore(20) row, 200 items of 500 ms
// against a limit of 20, run by the engine under clock.Sim: exactly the
// figures synctest gives for the same setup, order-independent.
func TestSimClosedSystem(t *testing.T) {
	got := simRun(t, 20, 200)
	if got.WallSeconds != 5 || got.Attempts != 200 || got.Completed != 200 || got.Throttled != 0 {
		t.Errorf("Sim: wall %vs, %d attempts, %d completed, %d throttled; want 5s, 200, 200, 0",
			got.WallSeconds, got.Attempts, got.Completed, got.Throttled)
	}
	want := synctestRun(t, 20, 200)
	if got.WallSeconds != want.WallSeconds || got.Attempts != want.Attempts || got.Completed != want.Completed {
		t.Errorf("Sim: wall %vs, %d attempts; synctest: %vs, %d attempts", got.WallSeconds, got.Attempts, want.WallSeconds, want.Attempts)
	}
	if got.Timeline == nil || want.Timeline == nil || len(got.Timeline.Points) != len(want.Timeline.Points) {
		t.Errorf("timelines: Sim %+v, synctest %+v; want as many points", got.Timeline, want.Timeline)
	} else if n := len(got.Timeline.Points); n != 51 {
		t.Errorf("timeline of %d points, want 51: one per 100 ms of the 5 s", n)
	}
}

// TestSimRacy: Semaphore(50) against a limit of 20 is racy in real time;
// under Sim it is deterministic (two runs, one summary) and lands in the
// range synctest's runs land in.
func TestSimRacy(t *testing.T) {
	a, b := simRun(t, 50, 200), simRun(t, 50, 200)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two Sim runs differ:\n%+v\n%+v", a, b)
	}
	if a.Completed != 200 || a.Throttled < 30 || a.Attempts != 200+a.Throttled || a.WallSeconds <= 5 || a.WallSeconds > 15 {
		t.Errorf("Sim: %d completed, %d throttled, %d attempts in %vs; want 200 completed, at least the 30 of the first wave throttled, each retried, 5 s < wall <= 15 s",
			a.Completed, a.Throttled, a.Attempts, a.WallSeconds)
	}
	want := synctestRun(t, 50, 200)
	if d := a.WallSeconds/want.WallSeconds - 1; d > 0.2 || d < -0.2 {
		t.Errorf("Sim wall %vs, synctest %vs", a.WallSeconds, want.WallSeconds)
	}
}

// TestSimCanceled: the run's ctx ends at a simulated instant, from inside
// the run: the engine stops as in real time, and the Sim run ends. Three
// waves of 20 have finished by 1.5 s when the cancellation comes at 1.7 s;
// the fourth wave, due at 2 s, is cut at once, or at the end of a grace
// period of 200 ms.
func TestSimCanceled(t *testing.T) {
	for _, tt := range []struct {
		grace time.Duration
		wall  float64
	}{{0, 1.7}, {200 * time.Millisecond, 1.9}} {
		t.Run(fmt.Sprint("grace ", tt.grace), func(t *testing.T) {
			sim := clock.NewSim(simT0)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var (
				sum measure.Summary
				err error
			)
			rerr := sim.Run(ctx, func() {
				sim.AfterFunc(1700*time.Millisecond, cancel)
				sum, err = closedRunGrace(ctx, sim, tt.grace)
			})
			if rerr != nil {
				t.Fatal(rerr)
			}
			if err != context.Canceled || !sum.Incomplete {
				t.Errorf("Run = %v, incomplete %v; want context.Canceled, incomplete", err, sum.Incomplete)
			}
			if sum.Completed != 60 || sum.WallSeconds != tt.wall {
				t.Errorf("%d completed in %vs, want 60 in %vs", sum.Completed, sum.WallSeconds, tt.wall)
			}
		})
	}
}

// closedRunGrace is closedRun of 200 items under Semaphore(20) with a grace
// period.
func closedRunGrace(ctx context.Context, clk clock.Clock, grace time.Duration) (measure.Summary, error) {
	return Run(ctx, Config{
		Client:   &limitClient{clk: clk, limit: 20, latency: 500 * time.Millisecond},
		Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 20}, strategies.WithClock(clk)),
		Grace:    grace,
	}, Generate(200, func(i int) Item {
		return Item{Request: provider.Request{Model: "m", Messages: []provider.Message{{Role: "user", Content: fmt.Sprint(i)}}}}
	}))
}

// BenchmarkSimEngine measures a simulated call end to end through the
// engine: Semaphore(20) against a limit of 20, 500 ms calls.
func BenchmarkSimEngine(b *testing.B) {
	b.ReportAllocs()
	sim := clock.NewSim(simT0)
	var err error
	if rerr := sim.Run(b.Context(), func() { _, err = closedRun(b.Context(), sim, 20, b.N) }); rerr != nil {
		b.Fatal(rerr)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// stuckClient never answers: it waits for an event nobody fires.
type stuckClient struct{ clk clock.Clock }

func (c stuckClient) Do(context.Context, provider.Request, int) (provider.Response, strategies.Outcome) {
	c.clk.Wait(context.Background(), c.clk.NewEvent(), 0) //nolint:errcheck // never returns
	return provider.Response{}, strategies.Outcome{}
}

// TestSimDeadlock: a run that can never go on is an error of Sim.Run naming
// the goroutines stuck, not a hang, though the timeline's sampler would
// tick on.
func TestSimDeadlock(t *testing.T) {
	sim := clock.NewSim(simT0)
	returned := false
	err := sim.Run(t.Context(), func() {
		Run(t.Context(), Config{Client: stuckClient{sim}, //nolint:errcheck // never returns
			Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 2}, strategies.WithClock(sim))},
			Generate(5, func(int) Item { return Item{Request: provider.Request{Model: "m"}} }))
		returned = true
	})
	// Two workers in the client, three waiting for a slot, the feeder
	// waiting for the workers, and the sampler.
	if err == nil || !strings.Contains(err.Error(), "7 goroutine(s) blocked") {
		t.Errorf("Sim.Run = %v, want a deadlock of 7 goroutines", err)
	}
	if returned {
		t.Error("engine.Run returned from a deadlocked run")
	}
}
