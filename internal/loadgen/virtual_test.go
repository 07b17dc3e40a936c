package loadgen

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ratelab/ratelab/internal/reports"
)

// runVirtual runs a scenario file in virtual time: the embedded mock on an
// in-memory listener (ListenMemory) inside a synctest bubble, so minutes of
// rate-limited traffic take milliseconds and timings are exact.
func runVirtual(t *testing.T, path string, only ...string) reports.Report {
	t.Helper()
	s, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(only) == 0 {
		// Command rows run real programs, outside virtual time; see
		// command_test.go.
		for _, st := range s.Strategies {
			if st.Kind != KindCommand {
				only = append(only, st.Name)
			}
		}
	}
	return runScenario(t, s, only...)
}

// runInline parses a scenario written in the test, under the file name
// name, and runs all its rows in virtual time as runVirtual does.
func runInline(t *testing.T, name, text string) reports.Report {
	t.Helper()
	s, err := Parse(name, []byte(text))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return runScenario(t, s)
}

// runScenario runs s's rows named in only (all of them when none is) in
// virtual time: the embedded mock on an in-memory listener inside a
// synctest bubble.
func runScenario(t *testing.T, s *Scenario, only ...string) reports.Report {
	t.Helper()
	var rep reports.Report
	var err error
	synctest.Test(t, func(t *testing.T) {
		rep, err = Run(t.Context(), s, Options{Listen: ListenMemory, Only: only})
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// TestScenariosVirtual runs every shipped scenario except large.yaml and
// batch-vs-fanout.yaml in virtual time and asserts the expectations
// written in the file.
func TestScenariosVirtual(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "large.yaml" {
			continue // about real memory, not timing; see TestLargeScenarioShape
		}
		if filepath.Base(f) == "batch-vs-fanout.yaml" {
			// 150,000 calls, 20 s here and more than a minute on a loaded
			// machine, twice with TestBatchVsFanout, which runs the file
			// (Options.Virtual) and asserts its expect: keys and figures;
			// TestBatchAPIRowInBubble runs a batch-api row in a bubble.
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			rep := runVirtual(t, f)
			for _, res := range rep.Results {
				if len(res.Expectations) == 0 {
					t.Errorf("%s: no expectations checked", res.Name)
				}
			}
			for _, failure := range Failures(rep) {
				t.Errorf("%s", failure)
			}
			if t.Failed() || testing.Verbose() {
				// go test -v -run TestScenariosVirtual prints every
				// scenario's table, in virtual time.
				var b strings.Builder
				_ = reports.Table(&b, rep)
				t.Logf("report:\n%s", b.String())
			}
		})
	}
}

// row is what a strategy's run must show exactly.
type row struct {
	name                          string
	completed, attempts, throttle int64
	wallMS                        int64 // wall time to the millisecond; -1 when order-dependent
}

// checkRows asserts exact counts and timings of the rows whose outcome does
// not depend on the order of events at the same virtual instant.
func checkRows(t *testing.T, rep reports.Report, want []row) {
	t.Helper()
	byName := make(map[string]reports.Result)
	for _, r := range rep.Results {
		byName[r.Name] = r
	}
	for _, w := range want {
		r, ok := byName[w.name]
		if !ok {
			t.Errorf("no result for %q", w.name)
			continue
		}
		if int64(r.Completed) != w.completed || r.Attempts != w.attempts || r.Throttled != w.throttle {
			t.Errorf("%s: completed, attempts, 429s = %d, %d, %d; want %d, %d, %d",
				w.name, r.Completed, r.Attempts, r.Throttled, w.completed, w.attempts, w.throttle)
		}
		if got := int64(math.Round(r.WallSeconds * 1000)); w.wallMS >= 0 && got != w.wallMS {
			t.Errorf("%s: wall = %d ms, want %d ms", w.name, got, w.wallMS)
		}
	}
}

// TestSeedTableVirtual is the guide's table, exact: 200 calls against a limit
// of 20, 0.5 s per call, 429 with retry-after 1.
func TestSeedTableVirtual(t *testing.T) {
	rep := runVirtual(t, "../../scenarios/20-concurrent.yaml")
	checkRows(t, rep, []row{
		{"unbounded, retries=2", 60, 540, 480, 2500},
		{"unbounded, retries=10", 200, 1100, 900, 9500},
		{"semaphore(20)", 200, 200, 0, 5000},
		{"semaphore(10)", 200, 200, 0, 10000},
		{"token-first", 200, 200, 0, 5000},
	})
	for _, r := range rep.Results {
		if r.Name == "semaphore(20)" && r.WallOverOracle != 1 {
			t.Errorf("semaphore(20): wall/oracle = %v, want 1", r.WallOverOracle)
		}
		if r.Name == "semaphore(50)" && (r.Completed < 150 || r.Completed >= 200) {
			t.Errorf("semaphore(50): completed = %d, want some lost (150..199)", r.Completed)
		}
	}
}

// TestExactRowsVirtual pins the order-independent rows of the other scenarios.
func TestExactRowsVirtual(t *testing.T) {
	tests := []struct {
		file string
		rows []row
	}{
		{"limit-change", []row{{"semaphore(10)", 600, 600, 0, 30000}}},
		{"multi-provider", []row{{"per-provider", 600, 600, 0, 15000}}},
		{"tpm-bound", []row{{"token-first", 90, 90, 0, -1}}},
		{"undocumented-limit", []row{{"semaphore(5), too low", 2000, 2000, 0, -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			names := make([]string, len(tt.rows))
			for i, r := range tt.rows {
				names[i] = r.name
			}
			checkRows(t, runVirtual(t, "../../scenarios/"+tt.file+".yaml", names...), tt.rows)
		})
	}
}

// TestLargeScenarioShape checks large.yaml without running it: it must stay
// a batch whose memory is bounded by its workers.
func TestLargeScenarioShape(t *testing.T) {
	s, err := Load("../../scenarios/large.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Items.Count() != 100000 || s.Workers > 1000 {
		t.Errorf("large.yaml: %d items on %d workers, want 100000 on at most 1000", s.Items.Count(), s.Workers)
	}
}
