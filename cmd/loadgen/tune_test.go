package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/reports"
)

// tuneScenario sweeps a semaphore over a limit of 10: n=20 loses items
// (no retries), so the choice is between 5 and 10, whose waves of 0.1 s
// calls make 10 the faster by half.
const tuneScenario = `name: tune
items: 20
request: {max_tokens: 20}
server:
  latency: {per_token: 5ms}
  limits: {max_concurrent: 10, retry_after: 1s}
strategies:
  - {name: "sem({n})", kind: semaphore, max_retries: 0, n: {sweep: [5, 10, 20]}}
`

func TestTune(t *testing.T) {
	path := writeFile(t, "tune.yaml", tuneScenario)
	// In simulated time: sem(10) beats sem(5) by a wave of calls, exactly,
	// where a real-time run's 0.1 s margin can go either way on a loaded
	// machine.
	stdout, stderr, code := runCLI(t, t.Context(), "tune", path, "--max-429s", "0", "--virtual")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"sem(5)", "sem(10)", "sem(20)",
		"best by wall time (wall_seconds), every item completed, at most 0 429s:\n  sem(10): 0.2 s, 0 429s, 20 attempts\n",
		"margin: 0.2 s (100 %) ahead of sem(5) (0.4 s)", "left out: sem(20) (", "simulated:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}

	stdout, _, code = runCLI(t, t.Context(), "tune", "--format", "json", "--objective", "attempts", path, "--only", "sem(5),sem(20)")
	if code != 0 {
		t.Fatalf("--format json: exit %d", code)
	}
	var rep reports.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	if rep.Tune == nil || rep.Tune.Best != "sem(5)" || rep.Tune.Objective != "attempts" || rep.Tune.Next != "" {
		t.Errorf("tune = %+v, want best sem(5) by attempts, no runner-up", rep.Tune)
	}
	if len(rep.Results) != 2 || len(rep.Results[0].Sweep) != 1 || rep.Results[0].Sweep[0].Number != 5 {
		t.Errorf("results = %+v, want two rows, the first with sweep n=5", rep.Results)
	}
}

func TestTuneErrors(t *testing.T) {
	path := writeFile(t, "tune.yaml", tuneScenario)
	none := strings.Replace(tuneScenario, "[5, 10, 20]", "[20]", 1)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"tune", writeFile(t, "target.yaml", strings.Replace(tuneScenario, "server:\n  latency: {per_token: 5ms}\n  limits: {max_concurrent: 10, retry_after: 1s}\n", "target: {url: \"http://127.0.0.1:1\"}\n", 1)), "--virtual"}, 2,
			"target.yaml:4: target: a simulated run (--virtual) runs against the embedded mock"},
		{[]string{"tune", path, "--objective", "speed"}, 2, `tune: --objective: want one of attempts, cost, wall, got "speed"`},
		{[]string{"tune", path, "--max-429s", "-2"}, 2, "tune: --max-429s: want -1 (no limit) or more, got -2"},
		{[]string{"tune"}, 2, "tune: want exactly one scenario file, got 0"},
		{[]string{"tune", writeFile(t, "bad.yaml", strings.Replace(tuneScenario, `"sem({n})"`, "s", 1)+"  - {name: x, kind: semaphore, n: {sweep: \"9..1\"}}\n")}, 2,
			"bad.yaml:9: strategies[1].n: sweep: empty range 9..1"},
		{[]string{"tune", writeFile(t, "none.yaml", none)}, 1, "tune: no row completed every item within the constraint"},
	}
	for _, tt := range tests {
		_, stderr, code := runCLI(t, t.Context(), tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}
