package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/reports"
)

// virtualScenario takes 5 s of simulated time: 100 calls of 0.5 s on 10
// slots.
const virtualScenario = `name: virtual
items: 100
request: {max_tokens: 100}
server:
  latency: {per_token: 5ms}
  limits: {max_concurrent: 10, retry_after: 1s}
strategies:
  - name: sem(10)
    kind: semaphore
    n: 10
    expect: {completed: 100, throttled: 0}
`

// TestRunVirtual: loadgen run --virtual prints the same table, exact in
// simulated time, marked simulated in the table, JSON and every --out file.
func TestRunVirtual(t *testing.T) {
	path := writeFile(t, "virtual.yaml", virtualScenario)
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, t.Context(), "run", path, "--virtual", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, reports.SimulatedNote) || !strings.Contains(stdout, "expectations: all 2 met") {
		t.Errorf("table lacks the simulated note or the expectations:\n%s", stdout)
	}
	stdout, _, code = runCLI(t, t.Context(), "run", path, "--virtual", "--format", "json")
	var rep reports.Report
	if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil {
		t.Fatalf("--format json: exit %d, %v\n%s", code, err, stdout)
	}
	if !rep.Simulated || len(rep.Results) != 1 || rep.Results[0].WallSeconds != 5 || rep.Results[0].Attempts != 100 {
		t.Errorf("report = simulated %v, %+v; want simulated, one row of 100 attempts in 5 s", rep.Simulated, rep.Results)
	}
	for file, mark := range map[string]string{
		"report.json": `"simulated": true`,
		"report.md":   "**Simulated:**",
		"report.html": `class="tag simulated"`,
	} {
		b, err := os.ReadFile(filepath.Join(out, file))
		if err != nil || !strings.Contains(string(b), mark) {
			t.Errorf("%s: %v, lacks %q", file, err, mark)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "results.jsonl")); err != nil || strings.Count(string(b), "\n") != 100 {
		t.Errorf("results.jsonl: %v, %d lines, want 100", err, strings.Count(string(b), "\n"))
	}
}

// TestVirtualRefuses: what cannot run in simulated time is an error naming
// the file, line and key, before anything runs.
func TestVirtualRefuses(t *testing.T) {
	command := virtualScenario + "  - name: mine\n    kind: command\n    command: [\"true\"]\n"
	shared := virtualScenario + "  - name: fleet\n    kind: semaphore\n    n: 5\n    shared: {redis: \"redis://127.0.0.1:1\", key: k}\n"
	target := strings.Replace(virtualScenario, "server:\n  latency: {per_token: 5ms}\n  limits: {max_concurrent: 10, retry_after: 1s}\n", "target: {url: \"http://127.0.0.1:1\"}\n", 1)
	tests := []struct {
		name, content string
		args          []string
		want          string
	}{
		{"command.yaml", command, nil, "command.yaml:13: strategies[1].kind: a command row runs a real program"},
		{"shared.yaml", shared, nil, "shared.yaml:15: strategies[1].shared: a shared limit is kept in Redis"},
		{"target.yaml", target, nil, "target.yaml:4: target: a simulated run (--virtual) runs against the embedded mock"},
	}
	for _, tt := range tests {
		path := writeFile(t, tt.name, tt.content)
		_, stderr, code := runCLI(t, t.Context(), "run", path, "--virtual")
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 2 and %q", tt.name, code, stderr, tt.want)
		}
	}
	// --only leaves the command row out.
	stdout, stderr, code := runCLI(t, t.Context(), "run", writeFile(t, "command.yaml", command), "--virtual", "--only", "sem(10)")
	if code != 0 || !strings.Contains(stdout, "sem(10)") {
		t.Errorf("--only sem(10): exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestTuneVirtual: tune --virtual recommends as tune does, in simulated
// time, and says the report is simulated.
func TestTuneVirtual(t *testing.T) {
	path := writeFile(t, "tune.yaml", tuneScenario)
	stdout, stderr, code := runCLI(t, t.Context(), "tune", path, "--virtual", "--max-429s", "0", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rep reports.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if !rep.Simulated || rep.Tune == nil || rep.Tune.Best != "sem(10)" || rep.Tune.Next != "sem(5)" {
		t.Errorf("simulated %v, tune %+v; want simulated, best sem(10), then sem(5)", rep.Simulated, rep.Tune)
	}
	// 20 calls of 0.1 s: two waves of 10, four of 5.
	for _, r := range rep.Results {
		if want := map[string]float64{"sem(5)": 0.4, "sem(10)": 0.2}[r.Name]; want > 0 && r.WallSeconds != want {
			t.Errorf("%s: wall %v s, want %v s exactly", r.Name, r.WallSeconds, want)
		}
	}
}
