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
)

// The convergence experiment: an in-process model of a provider with an
// undocumented concurrency limit, driven through Do by one caller per item,
// in virtual time.
const (
	simLimit      = 20                     // C, the limit the strategies must find
	simRetryAfter = time.Second            // the server's delay on a 429
	simMinLatency = 500 * time.Millisecond // calls take [simMinLatency, simMaxLatency)
	simMaxLatency = time.Second
	simRefusal    = 20 * time.Millisecond // how long a 429 takes to come back
	// simRTT is the round trip the figures count in: the mean call latency.
	simRTT = (simMinLatency + simMaxLatency) / 2
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
// up to calls admitted at the same instant, which are interchangeable).
type simServer struct {
	mu       sync.Mutex
	start    time.Time
	steps    []simStep
	rng      *rand.Rand
	held     int // calls being served
	sent     int // attempts in flight, refused or not
	attempts int
	heldLog  []simPoint // held after each change
	sentLog  []simPoint // sent after each change
	refusals []time.Duration
	finished []time.Duration // successes, in order
}

type simPoint struct {
	t time.Duration
	n int
}

func newSimServer(seed uint64, steps []simStep) *simServer {
	return &simServer{start: time.Now(), steps: steps, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func (s *simServer) limitAt(t time.Duration) int {
	limit := simLimit
	for _, st := range s.steps {
		if t >= st.at {
			limit = st.limit
		}
	}
	return limit
}

// call is one attempt, the attempt function given to Do.
func (s *simServer) call(ctx context.Context, _ int) Outcome {
	s.mu.Lock()
	t := time.Since(s.start)
	s.attempts++
	s.sent++
	s.sentLog = append(s.sentLog, simPoint{t, s.sent})
	if s.held >= s.limitAt(t) {
		s.refusals = append(s.refusals, t)
		s.mu.Unlock()
		time.Sleep(simRefusal)
		s.mu.Lock()
		s.sent--
		s.sentLog = append(s.sentLog, simPoint{time.Since(s.start), s.sent})
		s.mu.Unlock()
		return Outcome{Kind: Throttled, Status: 429, Latency: simRefusal, RetryAfter: simRetryAfter, HasRetryAfter: true}
	}
	s.held++
	s.heldLog = append(s.heldLog, simPoint{t, s.held})
	latency := simMinLatency + time.Duration(s.rng.Int64N(int64(simMaxLatency-simMinLatency)))
	s.mu.Unlock()

	time.Sleep(latency)

	s.mu.Lock()
	defer s.mu.Unlock()
	t = time.Since(s.start)
	s.held--
	s.sent--
	s.heldLog = append(s.heldLog, simPoint{t, s.held})
	s.sentLog = append(s.sentLog, simPoint{t, s.sent})
	s.finished = append(s.finished, t)
	return Outcome{Kind: Success, Status: 200, Latency: latency}
}

// simRun is what one run measured.
type simRun struct {
	stats    Stats
	calls    int
	attempts int
	wall     time.Duration // virtual time until the last call finished
	heldLog  []simPoint
	sentLog  []simPoint
	refusals []time.Duration
	finished []time.Duration
}

// runSim runs calls items through Do under the strategy newStrategy returns,
// each re-queued until it succeeds, against a simServer with the given seed
// and limit steps, in virtual time.
func runSim(t *testing.T, newStrategy func() Strategy, seed uint64, calls int, steps []simStep) simRun {
	t.Helper()
	var run simRun
	synctest.Test(t, func(t *testing.T) {
		srv := newSimServer(seed, steps)
		s := newStrategy()
		policy := &RetryPolicy{MaxRetries: -1, Requeue: true, Seed: int64(seed)}
		cost := Cost{Provider: "sim", Key: Fingerprint("sim-key")}
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() {
				call, err := Do(t.Context(), s, policy, cost, srv.call)
				if err != nil || call.Outcome.Kind != Success {
					t.Errorf("call %d: %v, %v", i, call.Outcome.Kind, err)
				}
			})
		}
		wg.Wait()
		run = simRun{
			stats: s.Stats(), calls: calls, attempts: srv.attempts, wall: time.Since(srv.start),
			heldLog: srv.heldLog, sentLog: srv.sentLog, refusals: srv.refusals, finished: srv.finished,
		}
	})
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

func rtts(d time.Duration) float64 { return float64(d) / float64(simRTT) }

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

func simMeasure(t *testing.T, newStrategy func() Strategy, seed uint64) simFigures {
	t.Helper()
	var f simFigures
	a := runSim(t, newStrategy, seed, 2000, nil)
	f.stats = a.stats
	f.perCall = float64(a.attempts) / float64(a.calls)
	f.wall = a.wall
	f.refusals = len(a.refusals)
	f.reach90 = math.Inf(1)
	if at := reach(a.heldLog, 0, int(math.Ceil(0.9*simLimit))); at >= 0 {
		f.reach90 = rtts(at)
		f.meanHeld = meanOver(a.heldLog, at, a.steady())
	}

	b := runSim(t, newStrategy, seed, 2500, simSteps)
	// Attempts in flight after the drop, refused or not, averaged per round
	// trip: the last round trip before the rise whose mean rounds above the
	// new limit ends the settling. (Rounding forgives a probe: one attempt
	// above the limit for the 20 ms of its refusal adds 0.03 to a round trip.)
	f.dropAbove = meanOver(b.sentLog, simDrop-simRTT, simDrop) > simLimit/2
	f.dropSettle = 0
	for k := 0; simDrop+time.Duration(k+1)*simRTT <= simRise; k++ {
		from := simDrop + time.Duration(k)*simRTT
		if math.Round(meanOver(b.sentLog, from, from+simRTT)) > simLimit/2 {
			f.dropSettle = float64(k + 1)
		}
	}
	window := 10 * simRTT
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
	new  func() Strategy
}{
	{"adaptive", func() Strategy { return NewAdaptive(AdaptiveConfig{}) }},
	{"aimd", func() Strategy { return NewAIMD(AIMDConfig{}) }},
	{"aimd-delay", func() Strategy { return NewAIMDDelay(AIMDDelayConfig{}) }},
}

// TestConvergence runs the experiment for every strategy over simSeeds and
// logs the worst seed's figures as a table; it asserts adaptive's targets.
func TestConvergence(t *testing.T) {
	if testing.Short() {
		t.Skip("the convergence experiment takes seconds of real time")
	}
	results := make(map[string]simFigures)
	for _, st := range simStrategies {
		var fs []simFigures
		for _, seed := range simSeeds {
			f := simMeasure(t, st.new, seed)
			t.Logf("%s seed %d: reach90 %.1f RTT, %.3f attempts/call, mean in flight %.1f, wall %v; drop: settle %.0f RTT, +%d 429s; rise90 %.1f RTT",
				st.name, seed, f.reach90, f.perCall, f.meanHeld, f.wall.Round(time.Second), f.dropSettle, f.dropExtra, f.rise90)
			fs = append(fs, f)
		}
		results[st.name] = worst(fs)
	}

	t.Logf("worst of %d seeds; C = %d, 429 retry-after %v, calls %v–%v, RTT = %v:", len(simSeeds), simLimit, simRetryAfter, simMinLatency, simMaxLatency, simRTT)
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
			t.Errorf("adaptive, worst seed: %s = %s, want %s", c.name, c.got, c.want)
		}
	}
}

// TestConvergenceDeterministic checks that a run depends only on its seed.
func TestConvergenceDeterministic(t *testing.T) {
	for _, st := range simStrategies {
		t.Run(st.name, func(t *testing.T) {
			a := runSim(t, st.new, 7, 1000, simSteps)
			b := runSim(t, st.new, 7, 1000, simSteps)
			if a.stats != b.stats || a.wall != b.wall || !slices.Equal(a.refusals, b.refusals) || !slices.Equal(a.finished, b.finished) {
				t.Errorf("two runs with seed 7 differ:\n%+v, wall %v, %d refusals\n%+v, wall %v, %d refusals",
					a.stats, a.wall, len(a.refusals), b.stats, b.wall, len(b.refusals))
			}
		})
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
	first := runSim(t, func() Strategy {
		a = NewAdaptive(AdaptiveConfig{})
		return a
	}, 1, 500, nil)
	saved := a.State("sim", Fingerprint("sim-key"))
	if saved.Limit != simLimit {
		t.Fatalf("learned limit %d after %d calls, want %d", saved.Limit, first.calls, simLimit)
	}

	second := runSim(t, func() Strategy {
		a := NewAdaptive(AdaptiveConfig{})
		a.SetState("sim", Fingerprint("sim-key"), saved)
		return a
	}, 2, 2000, nil)
	at := reach(second.heldLog, 0, int(math.Ceil(0.9*simLimit)))
	perCall := float64(second.attempts) / float64(second.calls)
	t.Logf("from saved state %+v: 90 %% of C after %.1f round trips, %.3f attempts per call, %d 429s, %v",
		saved, rtts(at), perCall, len(second.refusals), second.wall.Round(100*time.Millisecond))
	if at < 0 || rtts(at) > 1 {
		t.Errorf("from saved state: 90 %% of C after %.1f round trips, want ≤ 1", rtts(at))
	}
	if perCall > 1.05 {
		t.Errorf("from saved state: %.3f attempts per call, want ≤ 1.05", perCall)
	}
}
