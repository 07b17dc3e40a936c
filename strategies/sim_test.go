package strategies

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/clock"
)

// The convergence experiment: an in-process model of a provider with an
// undocumented concurrency limit, driven through Do by one caller per item,
// in virtual time.
const (
	simLimit      = 20          // C, the limit the strategies must find
	simRetryAfter = time.Second // the server's delay on a 429
)

// simModel is how the model server's calls take their time.
type simModel struct {
	name string
	// Calls take [minLatency, maxLatency), drawn from the run's seeded
	// source; exactly minLatency when the two are equal.
	minLatency, maxLatency time.Duration
	refusal                time.Duration // how long a 429 takes to come back
}

// rtt is the round trip the figures count in: the mean call latency.
func (m simModel) rtt() time.Duration { return (m.minLatency + m.maxLatency) / 2 }

var (
	// simRandom is the model: calls of 0.5–1 s, and a 429 that takes
	// 20 ms, so that no two events fall at the same instant.
	simRandom = simModel{name: "calls 0.5–1 s", minLatency: 500 * time.Millisecond, maxLatency: time.Second, refusal: 20 * time.Millisecond}
	// simFixed is the mock of scenarios/20-concurrent.yaml: every call takes
	// exactly 0.5 s (100 tokens at 5 ms) and a 429 comes back at once. Calls
	// sent together end together, so completions come in synchronized waves.
	simFixed = simModel{name: "calls 0.5 s", minLatency: 500 * time.Millisecond, maxLatency: 500 * time.Millisecond}
)

// simStep sets the server's limit from a time after the start of a run.
type simStep struct {
	at    time.Duration
	limit int
}

// simServer models a provider that holds at most limit calls at once and
// refuses the others with a 429 and retry-after 1 s. Latencies are drawn
// from a seeded source in the order the server admits calls, so that a run
// depends only on its seed (and on admission order, which the strategies fix
// up to calls admitted at the same instant, which are interchangeable). A
// call's slot is free from the instant the call ends, before its caller
// hears of it, as the mock frees it before writing the last byte: a call
// arriving at the instant another ends is held, whichever goroutine runs
// first.
type simServer struct {
	clk      clock.Clock
	mu       sync.Mutex
	model    simModel
	start    time.Time
	steps    []simStep
	rng      *rand.Rand
	ends     []time.Duration // when each held call ends
	sent     int             // attempts in flight, refused or not
	attempts int
	heldLog  []simPoint // calls held after each change
	sentLog  []simPoint // sent after each change
	refusals []time.Duration
	finished []time.Duration // successes, in order
}

type simPoint struct {
	t time.Duration
	n int
}

func newSimServer(clk clock.Clock, model simModel, seed uint64, steps []simStep) *simServer {
	return &simServer{clk: clk, model: model, start: clk.Now(), steps: steps, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func (s *simServer) since() time.Duration { return clock.Since(s.clk, s.start) }

func (s *simServer) limitAt(t time.Duration) int {
	limit := simLimit
	for _, st := range s.steps {
		if t >= st.at {
			limit = st.limit
		}
	}
	return limit
}

// heldLocked returns the calls held at t: those ending after t.
func (s *simServer) heldLocked(t time.Duration) int {
	n := 0
	for _, e := range s.ends {
		if e > t {
			n++
		}
	}
	return n
}

// call is one attempt, the attempt function given to Do.
func (s *simServer) call(ctx context.Context, _ int) Outcome {
	s.mu.Lock()
	t := s.since()
	s.attempts++
	s.sent++
	s.sentLog = append(s.sentLog, simPoint{t, s.sent})
	if s.heldLocked(t) >= s.limitAt(t) {
		s.refusals = append(s.refusals, t)
		s.mu.Unlock()
		s.clk.Sleep(context.Background(), s.model.refusal) //nolint:errcheck // Background never ends
		s.mu.Lock()
		s.sent--
		s.sentLog = append(s.sentLog, simPoint{s.since(), s.sent})
		s.mu.Unlock()
		return Outcome{Kind: Throttled, Status: 429, Latency: s.model.refusal, RetryAfter: simRetryAfter, HasRetryAfter: true}
	}
	latency := s.model.minLatency
	if d := s.model.maxLatency - s.model.minLatency; d > 0 {
		latency += time.Duration(s.rng.Int64N(int64(d)))
	}
	end := t + latency
	s.ends = append(s.ends, end)
	s.heldLog = append(s.heldLog, simPoint{t, s.heldLocked(t)})
	s.mu.Unlock()

	s.clk.Sleep(context.Background(), latency) //nolint:errcheck // Background never ends

	s.mu.Lock()
	defer s.mu.Unlock()
	t = s.since()
	s.ends = slices.Delete(s.ends, slices.Index(s.ends, end), slices.Index(s.ends, end)+1)
	s.sent--
	s.heldLog = append(s.heldLog, simPoint{t, s.heldLocked(t)})
	s.sentLog = append(s.sentLog, simPoint{t, s.sent})
	s.finished = append(s.finished, t)
	return Outcome{Kind: Success, Status: 200, Latency: latency}
}

// simRun is what one run measured.
type simRun struct {
	stats    Stats
	calls    int
	attempts int
	failed   int           // calls that ended without success (retries ran out)
	wall     time.Duration // virtual time until the last call finished
	heldLog  []simPoint
	sentLog  []simPoint
	refusals []time.Duration
	finished []time.Duration
	limits   []simPoint // the strategy's EventLimit values, in order
}

// simConfig is one run: calls items through Do under the strategy new
// returns, against a simServer with the given model, seed and limit steps.
type simConfig struct {
	model simModel
	new   func(...Option) Strategy
	seed  uint64
	calls int
	steps []simStep
	// maxRetries is the retry policy's MaxRetries (re-queued); 0 means
	// unlimited, each call retried until it succeeds.
	maxRetries int
	// sim, when set, runs the experiment under this simulated clock
	// instead of in a synctest bubble; new must then give the strategy
	// that clock.
	sim *clock.Sim
}

// runSim makes the run c describes, in virtual time: synctest's, or c.sim's.
func runSim(t *testing.T, c simConfig) simRun {
	t.Helper()
	var run simRun
	if c.sim != nil {
		if err := c.sim.Run(t.Context(), func() { run = simBody(t, c, c.sim) }); err != nil {
			t.Fatal(err)
		}
		return run
	}
	synctest.Test(t, func(t *testing.T) { run = simBody(t, c, clock.Real) })
	return run
}

// simBody is the run c describes, on clk.
func simBody(t *testing.T, c simConfig, clk clock.Clock) simRun {
	var run simRun
	{
		srv := newSimServer(clk, c.model, c.seed, c.steps)
		var limits []simPoint // the observer is called one event at a time
		s := c.new(WithObserver(func(e Event) {
			if e.Type == EventLimit {
				limits = append(limits, simPoint{e.Time.Sub(srv.start), int(e.Value)})
			}
		}))
		maxRetries := c.maxRetries
		if maxRetries == 0 {
			maxRetries = -1
		}
		policy := &RetryPolicy{MaxRetries: maxRetries, Requeue: true, Seed: int64(c.seed)}
		cost := Cost{Provider: "sim", Key: Fingerprint("sim-key")}
		var (
			wg     = clock.NewWaitGroup(clk)
			mu     sync.Mutex
			failed int
		)
		for i := range c.calls {
			wg.Add(1)
			clk.Go(func() {
				defer wg.Done()
				call, err := Do(t.Context(), s, policy.ForCall(int64(i)), cost, srv.call)
				if err != nil {
					t.Errorf("call %d: %v", i, err)
				}
				if call.Outcome.Kind != Success {
					mu.Lock()
					failed++
					mu.Unlock()
					if c.maxRetries == 0 {
						t.Errorf("call %d: %v", i, call.Outcome.Kind)
					}
				}
			})
		}
		wg.Wait()
		run = simRun{
			stats: s.Stats(), calls: c.calls, attempts: srv.attempts, failed: failed, wall: srv.since(),
			heldLog: srv.heldLog, sentLog: srv.sentLog, refusals: srv.refusals, finished: srv.finished,
			limits: limits,
		}
	}
	return run
}

// reach returns the first time at or after from when the log is at least n,
// or -1 if never.
func reach(log []simPoint, from time.Duration, n int) time.Duration {
	for _, p := range log {
		if p.t >= from && p.n >= n {
			return p.t
		}
	}
	return -1
}

// meanOver returns the time-weighted mean of the log's step function over
// [from, to).
func meanOver(log []simPoint, from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	var area float64
	cur := 0
	at := from
	for _, p := range log {
		if p.t > at {
			if p.t >= to {
				break
			}
			area += float64(cur) * float64(p.t-at)
			at = p.t
		}
		cur = p.n
	}
	area += float64(cur) * float64(to-at)
	return area / float64(to-from)
}

// steady returns when the run stopped being limited by the server: the
// (calls−C)-th success, after which fewer than C calls are left.
func (r simRun) steady() time.Duration {
	return r.finished[r.calls-simLimit-1]
}

// count returns how many of times fall in [from, to).
func count(times []time.Duration, from, to time.Duration) int {
	n := 0
	for _, t := range times {
		if t >= from && t < to {
			n++
		}
	}
	return n
}

// The limit's moves in the second run of each seed.
const (
	simDrop = 40 * time.Second // the limit drops from 20 to 10
	simRise = 80 * time.Second // and rises back to 20
)

var simSteps = []simStep{{simDrop, simLimit / 2}, {simRise, simLimit}}

// simFigures are a strategy's convergence figures for one seed, from two
// runs: a 2,000-call batch against C = 20, and a 2,500-call batch whose limit
// drops to 10 at 40 s and rises back to 20 at 80 s.
type simFigures struct {
	reach90  float64 // round trips until 90 % of C is in flight; +Inf if never
	perCall  float64 // attempts per completed call
	meanHeld float64 // mean in flight (held by the server) from reach90 to the batch's tail
	wall     time.Duration

	refusals   int     // 429s in the 2,000-call batch
	dropAbove  bool    // more than 10 attempts in flight in the round trip before the drop
	dropSettle float64 // round trips after the drop until every later round trip averages ≤ 10 attempts in flight (rounded)
	dropExtra  int     // 429s in the 10 round trips after the drop, less those in the 10 before
	rise90     float64 // round trips after the rise until 90 % of the new limit is in flight; +Inf if never
	stats      Stats   // of the first run
}

func simMeasure(t *testing.T, model simModel, newStrategy func(...Option) Strategy, seed uint64) simFigures {
	t.Helper()
	rtt := model.rtt()
	rtts := func(d time.Duration) float64 { return float64(d) / float64(rtt) }
	var f simFigures
	a := runSim(t, simConfig{model: model, new: newStrategy, seed: seed, calls: 2000})
	f.stats = a.stats
	f.perCall = float64(a.attempts) / float64(a.calls)
	f.wall = a.wall
	f.refusals = len(a.refusals)
	f.reach90 = math.Inf(1)
	if at := reach(a.heldLog, 0, int(math.Ceil(0.9*simLimit))); at >= 0 {
		f.reach90 = rtts(at)
		f.meanHeld = meanOver(a.heldLog, at, a.steady())
	}

	b := runSim(t, simConfig{model: model, new: newStrategy, seed: seed, calls: 2500, steps: simSteps})
	// Attempts in flight after the drop, refused or not, averaged per round
	// trip: the last round trip before the rise whose mean rounds above the
	// new limit ends the settling. (Rounding forgives a probe: one attempt
	// above the limit for the 20 ms of its refusal adds 0.03 to a round trip.)
	f.dropAbove = meanOver(b.sentLog, simDrop-rtt, simDrop) > simLimit/2
	f.dropSettle = 0
	for k := 0; simDrop+time.Duration(k+1)*rtt <= simRise; k++ {
		from := simDrop + time.Duration(k)*rtt
		if math.Round(meanOver(b.sentLog, from, from+rtt)) > simLimit/2 {
			f.dropSettle = float64(k + 1)
		}
	}
	window := 10 * rtt
	f.dropExtra = count(b.refusals, simDrop, simDrop+window) - count(b.refusals, simDrop-window, simDrop)
	f.rise90 = math.Inf(1)
	if at := reach(b.heldLog, simRise, int(math.Ceil(0.9*simLimit))); at >= 0 {
		f.rise90 = rtts(at - simRise)
	}
	return f
}

// worst returns, figure by figure, the worst of fs.
func worst(fs []simFigures) simFigures {
	w := fs[0]
	for _, f := range fs[1:] {
		w.reach90 = max(w.reach90, f.reach90)
		w.perCall = max(w.perCall, f.perCall)
		w.meanHeld = min(w.meanHeld, f.meanHeld)
		w.wall = max(w.wall, f.wall)
		w.refusals = max(w.refusals, f.refusals)
		w.dropAbove = w.dropAbove || f.dropAbove
		w.dropSettle = max(w.dropSettle, f.dropSettle)
		w.dropExtra = max(w.dropExtra, f.dropExtra)
		w.rise90 = max(w.rise90, f.rise90)
	}
	return w
}

var simSeeds = []uint64{1, 2, 3, 4, 5}

// simStrategies are the strategies the experiment compares, by name.
var simStrategies = []struct {
	name string
	new  func(...Option) Strategy
}{
	{"adaptive", func(opts ...Option) Strategy { return NewAdaptive(AdaptiveConfig{}, opts...) }},
	{"aimd", func(opts ...Option) Strategy { return NewAIMD(AIMDConfig{}, opts...) }},
	{"aimd-delay", func(opts ...Option) Strategy { return NewAIMDDelay(AIMDDelayConfig{}, opts...) }},
}

// TestConvergence runs the experiment for every strategy over simSeeds, with
// calls of random and of fixed length, and logs the worst seed's figures as
// a table; it asserts adaptive's targets.
func TestConvergence(t *testing.T) {
	if testing.Short() {
		t.Skip("the convergence experiment takes seconds of real time")
	}
	for _, model := range []simModel{simRandom, simFixed} {
		t.Run(model.name, func(t *testing.T) {
			t.Parallel()
			testConvergence(t, model)
		})
	}
}

func testConvergence(t *testing.T, model simModel) {
	results := make(map[string]simFigures)
	for _, st := range simStrategies {
		var fs []simFigures
		for _, seed := range simSeeds {
			f := simMeasure(t, model, st.new, seed)
			t.Logf("%s seed %d: reach90 %.1f RTT, %.3f attempts/call, mean in flight %.1f, wall %v; drop: settle %.0f RTT, +%d 429s; rise90 %.1f RTT",
				st.name, seed, f.reach90, f.perCall, f.meanHeld, f.wall.Round(time.Second), f.dropSettle, f.dropExtra, f.rise90)
			fs = append(fs, f)
		}
		results[st.name] = worst(fs)
	}

	t.Logf("worst of %d seeds; C = %d, 429 retry-after %v, %s, 429 after %v, RTT = %v:",
		len(simSeeds), simLimit, simRetryAfter, model.name, model.refusal, model.rtt())
	t.Logf("| figure | target | adaptive | aimd | aimd-delay |")
	t.Logf("|---|---|---|---|---|")
	row := func(name, target string, f func(simFigures) string) {
		t.Logf("| %s | %s | %s | %s | %s |", name, target, f(results["adaptive"]), f(results["aimd"]), f(results["aimd-delay"]))
	}
	row("round trips to 90 % of C (start window 4)", "≤ 8", func(f simFigures) string { return fmtRTT(f.reach90) })
	row("attempts per completed call (2,000 calls)", "≤ 1.05", func(f simFigures) string { return ftoa(f.perCall, 3) })
	row("mean in flight after convergence", "≥ 17.6", func(f simFigures) string { return ftoa(f.meanHeld, 1) })
	row("429s in the 2,000-call batch", "≤ 100", func(f simFigures) string { return strconv.Itoa(f.refusals) })
	row("virtual time for 2,000 calls", "", func(f simFigures) string { return f.wall.Round(100 * time.Millisecond).String() })
	row("limit 20→10: round trips until in flight ≤ 10", "≤ 2", func(f simFigures) string {
		if !f.dropAbove {
			return "n/a (under 10 before the drop)"
		}
		return fmtRTT(f.dropSettle)
	})
	row("limit 20→10: extra 429s", "≤ 30", func(f simFigures) string { return ftoa(float64(f.dropExtra), 0) })
	row("limit 10→20: round trips to 90 % of 20", "≤ 8", func(f simFigures) string { return fmtRTT(f.rise90) })

	a := results["adaptive"]
	checks := []struct {
		name string
		ok   bool
		got  string
		want string
	}{
		{"round trips to 90 % of C", a.reach90 <= 8, fmtRTT(a.reach90), "≤ 8"},
		{"attempts per call", a.perCall <= 1.05, ftoa(a.perCall, 3), "≤ 1.05"},
		{"mean in flight after convergence", a.meanHeld >= 0.88*simLimit, ftoa(a.meanHeld, 2), "≥ 17.6"},
		{"round trips until in flight ≤ 10 after the drop", a.dropSettle <= 2, fmtRTT(a.dropSettle), "≤ 2"},
		{"extra 429s after the drop", float64(a.dropExtra) <= 1.5*simLimit, ftoa(float64(a.dropExtra), 0), "≤ 30"},
		{"round trips to 90 % after the rise", a.rise90 <= 8, fmtRTT(a.rise90), "≤ 8"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("adaptive, %s, worst seed: %s = %s, want %s", model.name, c.name, c.got, c.want)
		}
	}
}

// TestConvergenceDeterministic checks that a run depends only on its seed,
// with calls of random length and with calls that end in synchronized waves.
func TestConvergenceDeterministic(t *testing.T) {
	for _, model := range []simModel{simRandom, simFixed} {
		for _, st := range simStrategies {
			t.Run(model.name+"/"+st.name, func(t *testing.T) {
				t.Parallel()
				c := simConfig{model: model, new: st.new, seed: 7, calls: 1000, steps: simSteps}
				a := runSim(t, c)
				b := runSim(t, c)
				if a.stats != b.stats || a.wall != b.wall || !slices.Equal(a.refusals, b.refusals) ||
					!slices.Equal(a.finished, b.finished) || !slices.Equal(a.limits, b.limits) {
					t.Errorf("two runs with seed 7 differ:\n%+v, wall %v, %d refusals, %d limit events\n%+v, wall %v, %d refusals, %d limit events",
						a.stats, a.wall, len(a.refusals), len(a.limits), b.stats, b.wall, len(b.refusals), len(b.limits))
				}
			})
		}
	}
}

func fmtRTT(x float64) string {
	if math.IsInf(x, 1) {
		return "never"
	}
	return ftoa(x, 1)
}

func ftoa(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }

// TestConvergenceFromSavedState checks that a run started from the state a
// previous run saved is at the limit from its first round trip.
func TestConvergenceFromSavedState(t *testing.T) {
	var a *Adaptive
	first := runSim(t, simConfig{model: simRandom, seed: 1, calls: 500, new: func(opts ...Option) Strategy {
		a = NewAdaptive(AdaptiveConfig{}, opts...)
		return a
	}})
	saved := a.State("sim", Fingerprint("sim-key"))
	if saved.Limit != simLimit {
		t.Fatalf("learned limit %d after %d calls, want %d", saved.Limit, first.calls, simLimit)
	}

	second := runSim(t, simConfig{model: simRandom, seed: 2, calls: 2000, new: func(opts ...Option) Strategy {
		a := NewAdaptive(AdaptiveConfig{}, opts...)
		a.SetState("sim", Fingerprint("sim-key"), saved)
		return a
	}})
	at := reach(second.heldLog, 0, int(math.Ceil(0.9*simLimit)))
	rtts := float64(at) / float64(simRandom.rtt())
	perCall := float64(second.attempts) / float64(second.calls)
	t.Logf("from saved state %+v: 90 %% of C after %.1f round trips, %.3f attempts per call, %d 429s, %v",
		saved, rtts, perCall, len(second.refusals), second.wall.Round(100*time.Millisecond))
	if at < 0 || rtts > 1 {
		t.Errorf("from saved state: 90 %% of C after %.1f round trips, want ≤ 1", rtts)
	}
	if perCall > 1.05 {
		t.Errorf("from saved state: %.3f attempts per call, want ≤ 1.05", perCall)
	}
}
