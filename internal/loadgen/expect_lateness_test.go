package loadgen

import (
	"testing"
	"testing/synctest"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/measure"
)

// TestWallExpectationAllowsTimerLateness: a real-time wall's upper bound is
// widened by the timer lateness the run measured, its lower bound is not,
// other metrics are checked as written, and without lateness (simulated
// time) the bound is the file's.
func TestWallExpectationAllowsTimerLateness(t *testing.T) {
	row := func(wall, lost float64) *reports.Result {
		r := &reports.Result{Summary: measure.Summary{WallSeconds: wall, Completed: 60}}
		r.SetOracle(5)
		if lost >= 0 {
			r.TimerLateness = &reports.TimerLateness{LostSeconds: lost}
		}
		return r
	}
	tests := []struct {
		key, value string
		r          *reports.Result
		ok         bool
		allowance  float64
		expected   string // Check.Expected
	}{
		// The main job's row on a busy machine: 2.72 s, and its timers
		// lost 0.2 s in all.
		{"wall_seconds", `"2.5..2.625"`, row(2.72, 0.2), true, 0.2, "2.5..2.625 (2.5..2.825 with 0.2 s of timer lateness measured in this run)"},
		{"wall_seconds", `"2.5..2.625"`, row(2.9, 0.2), false, 0.2, "2.5..2.625 (2.5..2.825 with 0.2 s of timer lateness measured in this run)"},
		// Lateness never explains a wall that is too short.
		{"wall_seconds", `"2.5..2.625"`, row(2.4, 0.2), false, 0.2, "2.5..2.625 (2.5..2.825 with 0.2 s of timer lateness measured in this run)"},
		// Simulated time: nothing measured, or nothing lost: as written.
		{"wall_seconds", `"2.5..2.625"`, row(2.72, -1), false, 0, "2.5..2.625"},
		{"wall_seconds", `"2.5..2.625"`, row(2.72, 0), false, 0, "2.5..2.625"},
		{"wall_seconds", `"2.5..2.625"`, row(2.5, 0), true, 0, "2.5..2.625"},
		{"wall_seconds", "2.5", row(2.6, 0.2), true, 0.2, "= 2.5 (2.5..2.7 with 0.2 s of timer lateness measured in this run)"},
		{"max_wall_seconds", "5.25", row(5.3, 0.1), true, 0.1, "<= 5.25 (<= 5.35 with 0.1 s of timer lateness measured in this run)"},
		{"min_wall_seconds", "5", row(4.9, 0.5), false, 0, ">= 5"},
		// A ratio to the oracle widens by the lost time over the oracle's.
		{"max_wall_over_oracle", "1.05", row(5.4, 0.25), true, 0.05, "<= 1.05 (<= 1.1 with 0.25 s of timer lateness measured in this run)"},
		{"max_wall_over_oracle", "1.05", row(5.6, 0.25), false, 0.05, "<= 1.05 (<= 1.1 with 0.25 s of timer lateness measured in this run)"},
		// Counts are behaviour, not time: never widened.
		{"completed", "61", row(2.5, 0.2), false, 0, "= 61"},
	}
	for _, tt := range tests {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tt.value), &n); err != nil {
			t.Fatal(err)
		}
		e, err := parseExpectation(tt.key, n.Content[0])
		if err != nil {
			t.Fatalf("%s: %s: %v", tt.key, tt.value, err)
		}
		c := e.Check(tt.r)
		if c.OK != tt.ok || c.Expected != tt.expected || abs(c.Allowance-tt.allowance) > 1e-12 {
			t.Errorf("%s: %s on wall %v, lateness %+v: ok %v, allowance %v, expected %q; want %v, %v, %q",
				tt.key, tt.value, tt.r.WallSeconds, tt.r.TimerLateness, c.OK, c.Allowance, c.Expected, tt.ok, tt.allowance, tt.expected)
		}
	}
}

func abs(f float64) float64 { return max(f, -f) }

// TestLatenessProbeVirtual: in a synctest bubble the probe's timers fire
// exactly on time, so it measures no lateness at all, and backs off
// (10 ms, 20 ms, 40 ms, … up to a minute apart: 7 wakes in 2.5 s, not 250, and 23 in a
// 712 s row, not 71,200); a row whose wall is longer than the real time
// the probe saw pass (a simulated run) gets no measurement.
func TestLatenessProbeVirtual(t *testing.T) {
	for _, tt := range []struct {
		d     time.Duration
		wakes int
	}{{2500 * time.Millisecond, 7}, {712 * time.Second, 23}} {
		synctest.Test(t, func(t *testing.T) {
			p := startLatenessProbe()
			time.Sleep(tt.d)
			tl := p.finish(tt.d.Seconds())
			if tl == nil {
				t.Fatalf("finish(%v) after %v = nil, want a measurement", tt.d.Seconds(), tt.d)
			}
			if tl.LostSeconds != 0 || tl.Max != 0 || tl.Wakes != tt.wakes {
				t.Errorf("probe over %v of virtual time = %+v, want %d wakes, nothing late", tt.d, *tl, tt.wakes)
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		p := startLatenessProbe()
		time.Sleep(time.Second)
		if tl := p.finish(60); tl != nil {
			t.Errorf("finish(60) after 1 s of real time = %+v, want nil: that wall was not real time", *tl)
		}
	})
}

// TestScenarioWallStrictInVirtualTime: the main job's unbounded row, its
// wall held to a range that excludes what it does (2.5 s exactly), fails
// in virtual time: no lateness is measured there, nothing is widened, and
// the failure names the bound as written.
func TestScenarioWallStrictInVirtualTime(t *testing.T) {
	s, err := Load("../../scenarios/20-concurrent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := &s.Strategies[0]
	if st.Name != "unbounded, retries=2" {
		t.Fatalf("first row = %q, want unbounded, retries=2", st.Name)
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(`"2.4..2.499"`), &n); err != nil {
		t.Fatal(err)
	}
	e, err := parseExpectation("wall_seconds", n.Content[0])
	if err != nil {
		t.Fatal(err)
	}
	st.Expect = Expect{e}
	var rep reports.Report
	synctest.Test(t, func(t *testing.T) {
		rep, err = Run(t.Context(), s, Options{Listen: ListenMemory, Only: []string{st.Name}})
	})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	if tl := res.TimerLateness; tl == nil || tl.LostSeconds != 0 {
		t.Errorf("timer lateness in virtual time = %+v, want measured and 0", tl)
	}
	failures := Failures(rep)
	if len(failures) != 1 || failures[0] != "unbounded, retries=2: wall_seconds: expected 2.4..2.499, got 2.5" {
		t.Errorf("failures = %q, want the wall as written, unwidened", failures)
	}
}
