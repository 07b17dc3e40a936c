package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
)

// TestTableNotesTimerLateness: a wall expectation that held only with its
// allowance for the run's timer lateness gets a line under the table
// saying so, with how late the timers were; one that held as written, or
// in simulated time, gets none.
func TestTableNotesTimerLateness(t *testing.T) {
	r := Report{Scenario: "20-concurrent", Results: []Result{
		{Name: "unbounded, retries=2", Summary: measure.Summary{Items: 200, Completed: 60, WallSeconds: 2.82},
			TimerLateness: &TimerLateness{PeriodSeconds: 0.01, Wakes: 230, P50: 0.0036, P99: 0.051, Max: 0.098, FloorSeconds: 0.001, LostSeconds: 1.0005},
			Expectations: []Check{{Metric: "wall_seconds", Expected: "2.5..2.625 (2.5..3.626 with 1.001 s of timer lateness measured in this run)",
				Actual: "2.820632", OK: true, Allowance: 1.001, NeededAllowance: true}}},
		{Name: "semaphore(20)", Summary: measure.Summary{Items: 200, Completed: 200, WallSeconds: 5.03},
			TimerLateness: &TimerLateness{LostSeconds: 0.2},
			Expectations: []Check{{Metric: "wall_seconds", Expected: "5..5.25 (5..5.45 with 0.2 s of timer lateness measured in this run)",
				Actual: "5.03", OK: true, Allowance: 0.2}}},
	}}
	var buf bytes.Buffer
	if err := Table(&buf, r); err != nil {
		t.Fatal(err)
	}
	want := "unbounded, retries=2: wall_seconds 2.820632 held only with its allowance for a busy machine (timers woke up to 98ms late, p99 51ms):\n" +
		"  expected 2.5..2.625 (2.5..3.626 with 1.001 s of timer lateness measured in this run)\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("table lacks the note %q:\n%s", want, buf.String())
	}
	if strings.Contains(buf.String(), "semaphore(20): wall") {
		t.Errorf("a wall that held as written got a note:\n%s", buf.String())
	}
}
