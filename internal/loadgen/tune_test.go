package loadgen

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/measure"
)

// res is a constructed row: items completed of 100, wall, 429s, attempts,
// billed tokens.
func res(name string, completed int, wall float64, throttled, attempts, tokens int64) reports.Result {
	return reports.Result{Name: name, Summary: measure.Summary{
		Items: 100, Completed: completed, Failed: 100 - completed, WallSeconds: wall,
		Throttled: throttled, Attempts: attempts, InputTokens: tokens / 2, OutputTokens: tokens - tokens/2,
	}}
}

func TestTuneChoice(t *testing.T) {
	rows := []reports.Result{
		res("n=5", 100, 20, 0, 100, 1000),
		res("n=10", 100, 10, 0, 100, 1000),
		res("n=20", 100, 5, 0, 100, 1000),
		res("n=25", 100, 5.5, 40, 140, 1000),
		res("n=30", 100, 4.8, 90, 190, 1200), // fastest, but throttled a lot
		res("n=50", 80, 4, 200, 300, 900),    // fastest of all, but lost items
	}
	interrupted := res("stopped", 100, 1, 0, 100, 1000)
	interrupted.Incomplete = true
	tests := []struct {
		name      string
		rows      []reports.Result
		objective string
		max429s   int64
		best      string
		next      string
		margin    float64
		excluded  []string
	}{
		{"wall, no constraint", rows, "wall", -1, "n=30", "n=20", 0.2, []string{"n=50"}},
		{"wall, no 429s", rows, "wall", 0, "n=20", "n=10", 5, []string{"n=25", "n=30", "n=50"}},
		{"wall, at most 40 429s", rows, "wall", 40, "n=20", "n=25", 0.5, []string{"n=30", "n=50"}},
		{"attempts: a tie goes to the shorter wall", rows, "attempts", -1, "n=20", "n=10", 0, []string{"n=50"}},
		{"cost", rows, "cost", -1, "n=20", "n=10", 0, []string{"n=50"}},
		{"interrupted rows are left out", append([]reports.Result{interrupted}, rows[:2]...), "wall", -1, "n=10", "n=5", 10, []string{"stopped"}},
		{"tie on objective goes to fewer 429s",
			[]reports.Result{res("a", 100, 5, 3, 103, 1000), res("b", 100, 5, 0, 100, 1000)}, "wall", -1, "b", "a", 0, nil},
		{"a tie everywhere goes to the earlier row",
			[]reports.Result{res("a", 100, 5, 0, 100, 1000), res("b", 100, 5, 0, 100, 1000)}, "wall", -1, "a", "b", 0, nil},
		{"one row qualifies: no runner-up", rows, "wall", 0, "n=20", "n=10", 5, []string{"n=25", "n=30", "n=50"}},
		{"none qualifies", rows[5:], "wall", -1, "", "", 0, []string{"n=50"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Tune(reports.Report{Results: tt.rows}, tt.objective, tt.max429s)
			if err != nil {
				t.Fatal(err)
			}
			if got.Best != tt.best || got.Next != tt.next {
				t.Errorf("best, next = %q, %q; want %q, %q", got.Best, got.Next, tt.best, tt.next)
			}
			if d := got.Margin - tt.margin; d > 1e-9 || d < -1e-9 {
				t.Errorf("margin = %v, want %v", got.Margin, tt.margin)
			}
			var excluded []string
			for _, r := range tt.rows {
				if _, ok := got.Excluded[r.Name]; ok {
					excluded = append(excluded, r.Name)
				}
			}
			if !reflect.DeepEqual(excluded, tt.excluded) {
				t.Errorf("excluded = %v, want %v", excluded, tt.excluded)
			}
		})
	}
	if _, err := Tune(reports.Report{Results: rows}, "speed", -1); err == nil || !strings.Contains(err.Error(), "want one of attempts, cost, wall") {
		t.Errorf("Tune(objective speed): err = %v, want the objectives listed", err)
	}
}

func TestWriteTune(t *testing.T) {
	rep := reports.Report{Results: []reports.Result{
		res("n=10", 100, 10, 0, 100, 1000), res("n=20", 100, 5, 0, 100, 1000), res("n=50", 80, 4, 200, 300, 900),
	}}
	tune, err := Tune(rep, "wall", 0)
	if err != nil {
		t.Fatal(err)
	}
	rep.Tune = &tune
	var b strings.Builder
	if err := WriteTune(&b, rep); err != nil {
		t.Fatal(err)
	}
	want := `best by wall time (wall_seconds), every item completed, at most 0 429s:
  n=20: 5 s, 0 429s, 100 attempts
  margin: 5 s (100 %) ahead of n=10 (10 s)
left out: n=50 (20 of 100 items did not complete)
`
	if b.String() != want {
		t.Errorf("WriteTune:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestTuneSemaphoreSweepVirtual is the example, in virtual time:
// on 20-concurrent.yaml (200 calls of 0.5 s against a limit of 20, 429s
// with retry-after 1 s), sweeping semaphore n over 5..50 recommends 20,
// by wall time, with no constraint on 429s as well as with none allowed.
func TestTuneSemaphoreSweepVirtual(t *testing.T) {
	data, err := os.ReadFile("../../scenarios/20-concurrent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(data), "\nstrategies:\n")
	if !ok {
		t.Fatal("20-concurrent.yaml has no strategies")
	}
	path := filepath.Join(t.TempDir(), "sweep.yaml")
	sweep := head + "\nstrategies:\n  - {name: semaphore, kind: semaphore, n: {sweep: \"5..50 step 5\"}}\n"
	if err := os.WriteFile(path, []byte(sweep), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := runVirtual(t, path)
	if len(rep.Results) != 10 {
		t.Fatalf("%d rows, want 10 (n = 5, 10, …, 50)", len(rep.Results))
	}
	for _, max429s := range []int64{-1, 0} {
		tune, err := Tune(rep, "wall", max429s)
		if err != nil {
			t.Fatal(err)
		}
		if tune.Best != "semaphore n=20" || tune.Value != 5 {
			var b strings.Builder
			_ = reports.Table(&b, rep)
			t.Errorf("max 429s %d: best = %q (wall %v), want semaphore n=20 (5 s)\n%s", max429s, tune.Best, tune.Value, b.String())
		}
		if tune.Margin <= 0 {
			t.Errorf("max 429s %d: margin to %s = %v, want positive", max429s, tune.Next, tune.Margin)
		}
	}
	if testing.Verbose() {
		tune, _ := Tune(rep, "wall", -1)
		rep.Tune = &tune
		var b strings.Builder
		_ = reports.Table(&b, rep)
		_ = WriteTune(&b, rep)
		t.Logf("tune:\n%s", b.String())
	}
}
