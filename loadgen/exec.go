package loadgen

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/strategies"
)

// runStrategy runs one row: a fresh server (or the target), the strategy and
// its retry policy, every item through the engine, and the engine's summary
// as a report row.
//
// The row's expectations are checked, and so is that not every call was
// refused (Expect.allRefusedCheck).
func runStrategy(ctx context.Context, s *Scenario, st *Row, opt Options, key string) (res reports.Result, err error) {
	tally := new(errorTally)
	// Wall expectations allow for the timer lateness the probe measures in
	// real time. A simulated row (opt.Virtual) has none: the machine's
	// lateness says nothing of its wall, so it has no probe and its
	// TimerLateness stays nil.
	var probe *latenessProbe
	if !opt.Virtual {
		probe = startLatenessProbe()
	}
	defer func() {
		if probe != nil {
			res.TimerLateness = probe.finish(res.WallSeconds)
		}
		if res.CostUSD == 0 && s.Target == nil {
			res.CostUSD = s.syncCostUSD(&res) // batchapi_row.go
		}
		res.Expectations = append(st.Expect.Check(&res), st.Expect.allRefusedCheck(&res, tally)...)
	}()
	if run := kinds[st.Kind].run; run != nil {
		return run(ctx, s, st, opt)
	}
	if !opt.Virtual {
		return runRow(ctx, s, st, opt, key, tally, nil)
	}
	sim := clock.NewSim(SimEpoch)
	// Events at one instant in an order drawn from the seed, as a real run
	// orders them by chance (see clock.Sim.Shuffle): racy rows then land
	// where real and in-test runs do, and the same seed gives the same run.
	sim.Shuffle(uint64(s.Seed))
	simErr := sim.Run(ctx, func() { res, err = runRow(ctx, s, st, opt, key, tally, sim) })
	if err == nil && simErr != nil {
		err = fmt.Errorf("simulated run: %w", simErr)
	}
	return res, err
}

// SimEpoch is when every simulated row starts: midnight UTC on 1 January
// 2000, where testing/synctest's bubbles start too, so a simulated row and
// the in-test virtual run date everything alike.
var SimEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// runRow is runStrategy's run of a client strategy through the engine, in
// real time (sim nil) or on the simulated clock sim, inside its run.
func runRow(ctx context.Context, s *Scenario, st *Row, opt Options, key string, tally *errorTally, sim clock.Clock) (res reports.Result, err error) {
	clk := clock.Or(sim)
	res = reports.Result{Name: st.Name, Kind: st.Kind, Params: st.Params(), Sweep: st.Sweep}
	res.Items = s.Items.Count()
	events := &eventLog{start: clk.Now()}
	strategy, closeStrategy, err := openStrategy(ctx, st, events.observe, sim)
	if err != nil {
		return res, err
	}
	defer closeStrategy()
	tg, err := startTarget(s, opt, s.Workers, sim)
	if err != nil {
		return res, err
	}
	defer tg.close()
	opt.recordInto(tg, st.Name)
	groups := s.Groups()
	client, err := newRouter(groups, tg.baseURL, key, tg)
	if err != nil {
		return res, err
	}
	resolution := s.Timeline
	if opt.Timeline > 0 {
		resolution = opt.Timeline
	}
	cfg := engine.Config{
		Client:     client.engineClient(),
		Strategy:   strategy,
		Retry:      newPolicy(st, s.Seed),
		Workers:    s.Workers,
		Resolution: resolution,
		Items:      res.Items,
	}
	if opt.Results != nil {
		cfg.Sinks = append(cfg.Sinks, engine.NewJSONL(opt.Results))
	}
	cfg.Sinks = append(cfg.Sinks, tally)
	var prog *progress
	if opt.Progress != nil && sim == nil {
		// A simulated row's progress would be that of its simulated
		// time, which passes in a blink of real time.
		prog = startProgress(opt.Progress, opt.position.label(st.Name), res.Items, strategy)
		cfg.OnAttempt = prog.attempt
		cfg.OnResult = prog.result
	}
	keys := client.stateKeys(s.Target == nil)
	if err := loadState(strategy, st, keys); err != nil {
		return res, err
	}
	src, loop := s.pace(ctx, clk, source(groups, strategyMeta(st.Name)), &cfg, res.Items)
	sum, err := engine.Run(ctx, cfg, src)
	if prog != nil {
		prog.stop()
	}
	// The row is what the engine measured, whole; an early error leaves
	// the row's own item count.
	sum.Items = max(sum.Items, res.Items)
	res.Summary = sum
	res.SetOracle(s.OracleSeconds())
	loop.finish(s, &res)
	if tg.srv != nil {
		// The server's view, as command rows have it, so that
		// max_concurrency and max_early_retries mean the same on every row.
		res.ServerView = serverView(tg.srv.Calls())
	}
	if res.Timeline != nil {
		res.Timeline.Events, res.Timeline.EventsDropped = events.list()
	}
	// A simulated row learned the mock's model, not a provider: it starts
	// from what real runs saved but leaves the file to them.
	if err == nil && sim == nil {
		err = saveState(strategy, st, keys)
	}
	return res, err
}

// eventLog keeps a strategy's state changes for the report's timeline, at
// most measure.MaxEvents of them.
type eventLog struct {
	start   time.Time
	mu      sync.Mutex
	events  []measure.StrategyEvent
	dropped int
}

// observe is the strategy's Observer.
func (l *eventLog) observe(e strategies.Event) {
	since := func(t time.Time) float64 { return max(0, t.Sub(l.start).Seconds()) }
	ev := measure.StrategyEvent{T: since(e.Time), Type: string(e.Type), Value: e.Value, Reason: e.Reason}
	if !e.Until.IsZero() {
		ev.Until = since(e.Until)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) >= measure.MaxEvents {
		l.dropped++
		return
	}
	l.events = append(l.events, ev)
}

func (l *eventLog) list() ([]measure.StrategyEvent, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.events, l.dropped
}
