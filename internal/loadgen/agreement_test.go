package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/measure"
)

// counts is what a row's agreement is judged on: its counts, exact.
type counts struct {
	completed, failed, canceled                              int
	attempts, throttled, overloaded, serverErrs, errs, quota int64
	inputTokens, outputTokens                                int64
}

func countsOf(m measure.Summary) counts {
	return counts{m.Completed, m.Failed, m.Canceled, m.Attempts, m.Throttled, m.Overloaded, m.ServerErrors, m.Errors, m.Quota, m.InputTokens, m.OutputTokens}
}

func (c counts) String() string {
	return fmt.Sprintf("completed %d, failed %d, canceled %d, attempts %d, 429s %d, overloaded %d, 5xx %d, errors %d, quota %d, tokens %d in / %d out",
		c.completed, c.failed, c.canceled, c.attempts, c.throttled, c.overloaded, c.serverErrs, c.errs, c.quota, c.inputTokens, c.outputTokens)
}

// agreementRuns is how many times the in-test virtual run (synctest over
// HTTP) runs each scenario: a row whose counts differ between them is racy.
const agreementRuns = 2

// orderDependent are the rows whose outcome depends on the order of events
// at one simulated instant, which Go's runtime (the in-test run) draws by
// chance and --virtual from the scenario's seed (clock.Sim.Shuffle: every
// timer of an instant fires, then the goroutines they woke run in a seeded
// order). Each run lands within the ranges the scenario's expect: allows,
// which both are held to, and virtualPinned holds two of them to where the
// in-test run lands; docs/time-and-tests.md (Simulated time) gives where each lands. Found
// by running the in-test run ten times,
// and five under -race (all but limit-change's semaphore(20) vary: brownout's
// only under -race, where its semaphore(20) once completed 486, not 487: the
// mock draws its faults from one seeded source in the order requests
// arrive, so requests at one instant can take each other's draws), and by
// comparing it with --virtual (limit-change's semaphore(20) gives 4,050
// attempts in 22.5 s in every in-test run, 4,150 in 23 s in a Sim).
var orderDependent = map[string][]string{
	"20-concurrent":      {"semaphore(50)"},
	"brownout":           {"semaphore(20)", "adaptive"},
	"four-providers":     {"semaphore(33), shared", "adaptive"},
	"limit-change":       {"semaphore(20)", "aimd", "adaptive"},
	"multi-provider":     {"semaphore(20), shared"},
	"seeds-per-provider": {"semaphore(40), shared"},
	"undocumented-limit": {"semaphore(50), too high"},
}

// virtualPinned are order-dependent rows held to where every in-test run
// lands: 20-concurrent's semaphore(50) completes 178–192 of 200 in the
// in-test run (35 runs), limit-change's semaphore(20) makes 4,050 attempts
// in every one and multi-provider's shared semaphore 3,128–9,010 (five
// runs). Without the seeded order (one timer's goroutines run before the
// next timer fires) --virtual gave 160 and 4,150; with goroutines just
// started drawn at random rather than in start order, 719 attempts for the
// third.
var virtualPinned = map[string]map[string]func(counts) bool{
	"20-concurrent":  {"semaphore(50)": func(c counts) bool { return c.completed >= 178 && c.completed <= 192 }},
	"limit-change":   {"semaphore(20)": func(c counts) bool { return c.attempts == 4050 }},
	"multi-provider": {"semaphore(20), shared": func(c counts) bool { return c.attempts >= 3128 && c.attempts <= 9010 }},
}

// TestVirtualAgreement holds loadgen run --virtual (Options.Virtual: each
// row on a clock.Sim, the mock in process) to the in-test virtual run over
// HTTP (runVirtual) for every shipped scenario but large.yaml, every row but
// command rows: a row whose outcome does not depend on the order of events
// at one instant has exactly the counts of the in-test run, which are the
// same in each of agreementRuns runs, and a wall within 1 % of its; an
// order-dependent row (orderDependent) meets the scenario's expectations,
// the ranges the in-test run is held to (TestScenariosVirtual).
func TestVirtualAgreement(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every shipped scenario several times")
	}
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "large.yaml" {
			continue // about real memory; its speed is measured in docs/performance.md
		}
		if filepath.Base(f) == "batch-vs-fanout.yaml" {
			continue // 150,000 calls a run; TestBatchVsFanout holds it
		}
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			s, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			var rows []string
			for _, st := range s.Strategies {
				if st.Kind != KindCommand && st.Shared == nil {
					rows = append(rows, st.Name)
				}
			}
			if len(rows) == 0 {
				t.Skip("command rows only: a real program runs in real time")
			}
			seen := make(map[string][]counts)
			walls := make(map[string][]float64)
			for range agreementRuns {
				for _, r := range runVirtual(t, f, rows...).Results {
					seen[r.Name] = append(seen[r.Name], countsOf(r.Summary))
					walls[r.Name] = append(walls[r.Name], r.WallSeconds)
				}
			}
			rep, err := Run(t.Context(), s, Options{Virtual: true, Only: rows})
			if err != nil {
				t.Fatalf("Run --virtual: %v", err)
			}
			if !rep.Simulated {
				t.Error("report not marked simulated")
			}
			for _, failure := range Failures(rep) {
				t.Errorf("--virtual: %s", failure)
			}
			for _, r := range rep.Results {
				got, runs := countsOf(r.Summary), seen[r.Name]
				lo, hi := slices.Min(walls[r.Name]), slices.Max(walls[r.Name])
				if testing.Verbose() {
					t.Logf("%-24s --virtual: %v, wall %.4g s; in-test: %v, wall %.4g..%.4g s", r.Name, got, r.WallSeconds, runs, lo, hi)
				}
				if ok := virtualPinned[name][r.Name]; ok != nil && !ok(got) {
					t.Errorf("%s: --virtual: %v, not where the in-test run lands (see virtualPinned)", r.Name, got)
				}
				if slices.Contains(orderDependent[name], r.Name) {
					continue // held to the file's expectations above
				}
				if slices.ContainsFunc(runs, func(c counts) bool { return c != runs[0] }) {
					t.Errorf("%s: the in-test run varies (%v): an order-dependent row, not listed in orderDependent", r.Name, runs)
					continue
				}
				if got != runs[0] {
					t.Errorf("%s: --virtual: %v\nin-test virtual run (the same in %d runs): %v", r.Name, got, agreementRuns, runs[0])
				}
				if r.WallSeconds < lo*0.99 || r.WallSeconds > hi*1.01 {
					t.Errorf("%s: --virtual wall %.4g s, in-test %.4g..%.4g s: more than 1 %% apart", r.Name, r.WallSeconds, lo, hi)
				}
			}
		})
	}
}

// TestVirtualAgreementArrival: an open-loop row (arrival:) agrees too, its
// arrivals and queueing delays included.
func TestVirtualAgreementArrival(t *testing.T) {
	path := filepath.Join(t.TempDir(), "open.yaml")
	const open = `name: open
seed: 1
arrival: {rate: 10/s, process: poisson, duration: 60s}
request: {max_tokens: 100}
server:
  latency: {per_token: 5ms}
  limits: {max_concurrent: 5, retry_after: 1s}
strategies:
  - {name: semaphore(5), kind: semaphore, n: 5}
`
	if err := os.WriteFile(path, []byte(open), 0o644); err != nil {
		t.Fatal(err)
	}
	want := runVirtual(t, path).Results[0]
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), s, Options{Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Results[0]
	if countsOf(got.Summary) != countsOf(want.Summary) {
		t.Errorf("--virtual: %v\nin-test: %v", countsOf(got.Summary), countsOf(want.Summary))
	}
	near := func(what string, g, w float64) {
		if math.Abs(g-w) > 0.01*math.Abs(w) {
			t.Errorf("%s: --virtual %.6g, in-test %.6g: more than 1 %% apart", what, g, w)
		}
	}
	near("wall", got.WallSeconds, want.WallSeconds)
	if got.Arrivals == nil || want.Arrivals == nil {
		t.Fatalf("arrivals: --virtual %v, in-test %v", got.Arrivals, want.Arrivals)
	}
	near("last arrival", got.Arrivals.ArrivalSeconds, want.Arrivals.ArrivalSeconds)
	near("queueing delay p50", got.Arrivals.QueueingDelay.P50, want.Arrivals.QueueingDelay.P50)
	near("queueing delay p99", got.Arrivals.QueueingDelay.P99, want.Arrivals.QueueingDelay.P99)
}

// cancelAfter is a results writer that ends a run after n lines.
type cancelAfter struct {
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	if c.n -= bytes.Count(p, []byte("\n")); c.n <= 0 {
		c.cancel()
	}
	return len(p), nil
}

// TestVirtualInterrupted: a simulated run ends when its context does (a
// Ctrl-C), at the next idle moment of the simulation, and reports what
// finished, marked incomplete, as a real run does.
func TestVirtualInterrupted(t *testing.T) {
	s, err := Load("testdata/million.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rep, err := Run(ctx, s, Options{Virtual: true, Results: &cancelAfter{n: 1000, cancel: cancel}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if !rep.Incomplete || !rep.Simulated || len(rep.Results) != 1 {
		t.Fatalf("report: incomplete %v, simulated %v, %d rows; want an incomplete simulated row", rep.Incomplete, rep.Simulated, len(rep.Results))
	}
	if r := rep.Results[0]; !r.Incomplete || r.Completed < 1000 || r.Completed > 2000 || len(r.Expectations) != 0 {
		t.Errorf("row: incomplete %v, %d completed, %d expectations; want incomplete, about 1,000 completed, none checked", r.Incomplete, r.Completed, len(r.Expectations))
	}
}

// TestVirtualDeterministic: a simulated run of a scenario with racy rows
// prints the same report, byte for byte, every time.
func TestVirtualDeterministic(t *testing.T) {
	s, err := Load("../../scenarios/20-concurrent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	for i := range 3 {
		rep, err := Run(t.Context(), s, Options{Virtual: true})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := reports.JSON(&b, rep); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.Bytes()
		} else if !bytes.Equal(b.Bytes(), first) {
			t.Fatalf("run %d's report differs from the first's", i+1)
		}
	}
}
