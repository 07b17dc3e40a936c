package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// runCLI calls run with args as main does and returns stdout, stderr (with
// the error main would print) and the exit status.
func runCLI(t *testing.T, ctx context.Context, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(ctx, args, &out, &errb)
	code = report(err, &errb)
	return out.String(), errb.String(), code
}

// writeFile writes a scenario into a temporary directory and returns its path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// quick is a scenario that runs in well under a second of real time.
const quick = `# quick: a tiny scenario for CLI tests.
name: quick
items: 20
request: {max_tokens: 2}
server:
  latency: {per_token: 1ms}
  limits: {max_concurrent: 5, retry_after: 1s}
strategies:
  - name: sem
    kind: semaphore
    n: 5
    expect:
      completed: 20
      throttled: 0
  - name: sem2
    kind: semaphore
    n: 2
    expect:
      attempts: 20
`

func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"loadgen run FILE", "loadgen validate FILE...", "loadgen compare OLD.json NEW.json", "130 interrupted"}},
		{[]string{"help"}, []string{"Usage:"}},
		{[]string{"help", "run"}, []string{"--format", "--out", "--only", "--timeline", "results.jsonl", "Exit status"}},
		{[]string{"run", "--help"}, []string{"--format NAME"}},
		{[]string{"validate", "-h"}, []string{"Usage: loadgen validate FILE..."}},
		{[]string{"compare", "--help"}, []string{"--threshold"}},
		{[]string{"help", "scenario"}, []string{"api_key_env", "max_retries", "aimd-delay", "wall_over_oracle", "state_file",
			"failed_tokens      tokens reserved by attempts that did not succeed (loadgen's client: not on command rows)", "exit_code          the command's exit status, -1 when killed by a signal (command rows only)"}},
	}
	for _, tt := range tests {
		out, stderr, code := runCLI(t, t.Context(), tt.args...)
		if code != 0 {
			t.Errorf("%v: exit %d, want 0", tt.args, code)
		}
		if stderr != "" {
			t.Errorf("%v: help wrote to stderr too:\n%s", tt.args, stderr)
		}
		if strings.Count(out, "Usage:") > 1 {
			t.Errorf("%v: usage printed %d times, want once", tt.args, strings.Count(out, "Usage:"))
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tt.args, w, out)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	good := writeFile(t, "quick.yaml", quick)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no args", nil, "Usage:"},
		{"unknown command", []string{"launch"}, `unknown command "launch"`},
		{"run without file", []string{"run"}, "want exactly one scenario file"},
		{"run two files", []string{"run", good, good}, "want exactly one scenario file"},
		{"bad format", []string{"run", good, "--format", "yaml"}, `unknown format "yaml"`},
		{"bad flag", []string{"run", good, "--fromat", "json"}, "flag provided but not defined"},
		{"bad only", []string{"run", good, "--only", "nope"}, `no strategy named "nope"`},
		{"missing file", []string{"run", "/nonexistent/x.yaml"}, "no such file"},
		{"invalid scenario", []string{"run", writeFile(t, "bad.yaml", "items: ten\n")}, `bad.yaml:1: items: want an integer, got "ten"`},
		{"validate nothing", []string{"validate"}, "no files given"},
		{"compare one file", []string{"compare", good}, "want OLD.json and NEW.json"},
		{"compare not json", []string{"compare", good, good}, "read json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, t.Context(), tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := writeFile(t, "good.yaml", quick)
	bad := writeFile(t, "bad.yaml", "items: 3\nstrategies:\n  - name: a\n    kind: semaphore\n    n: -1\n    max_retries: ten\n  - {name: a, kind: magic}\n")
	out, _, code := runCLI(t, t.Context(), "validate", good)
	if code != 0 || !strings.Contains(out, good+": ok (20 items, 2 strategies)") {
		t.Errorf("validate good: exit %d, output %q", code, out)
	}
	out, stderr, code := runCLI(t, t.Context(), "validate", good, bad)
	if code != exitFailed {
		t.Errorf("validate good bad: exit %d, want 1", code)
	}
	for _, w := range []string{good + ": ok (20 items, 2 strategies)\n" +
		bad + ":5: strategies[0].n: must not be negative, got -1\n" +
		bad + `:6: strategies[0].max_retries: want an integer, got "ten"` + "\n" +
		bad + `:7: strategies[1].name: duplicate strategy name "a" (also strategies[0])` + "\n" +
		bad + `:7: strategies[1].kind: unknown kind "magic"`} {
		if !strings.Contains(out, w) {
			t.Errorf("validate output lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(stderr, "1 of 2 files invalid") {
		t.Errorf("stderr = %q", stderr)
	}
}

func TestValidateShippedScenarios(t *testing.T) {
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	out, _, code := runCLI(t, t.Context(), append([]string{"validate"}, files...)...)
	if code != 0 {
		t.Errorf("validate scenarios: exit %d:\n%s", code, out)
	}
}

func TestRunJSONAndOut(t *testing.T) {
	file := writeFile(t, "quick.yaml", quick)
	dir := filepath.Join(t.TempDir(), "out")
	out, stderr, code := runCLI(t, t.Context(), "run", file, "--format", "json", "--out", dir, "--timeline", "50ms")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var rep struct {
		Scenario string           `json:"scenario"`
		Results  []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if rep.Scenario != "quick" || len(rep.Results) != 2 {
		t.Fatalf("scenario %q with %d results, want quick with 2", rep.Scenario, len(rep.Results))
	}
	for _, key := range []string{"name", "kind", "items", "completed", "failed", "attempts", "throttled",
		"overloaded", "errors", "wall_seconds", "oracle_seconds"} {
		if _, ok := rep.Results[0][key]; !ok {
			t.Errorf("result lacks %q (the JSON contract)", key)
		}
	}
	if got := rep.Results[0]["name"]; got != "sem" {
		t.Errorf("results[0].name = %v, want sem (file order)", got)
	}
	for _, f := range []string{"report.json", "results.jsonl", "report.md", "report.html"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("--out: %s missing or empty: %v", f, err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if lines := strings.Count(string(data), "\n"); lines != 40 {
		t.Errorf("results.jsonl has %d lines, want 40 (20 items × 2 strategies)", lines)
	}
	if !strings.Contains(string(data), `"strategy":"sem2"`) {
		t.Errorf("results.jsonl lines do not name their strategy")
	}
	f, err := os.Open(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	full, err := reports.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if tl := full.Results[0].Timeline; tl == nil || len(tl.Points) == 0 || tl.ResolutionSeconds != 0.05 {
		t.Errorf("report.json timeline = %+v, want points at --timeline 50ms", tl)
	}
}

func TestRunExpectationFails(t *testing.T) {
	file := writeFile(t, "fail.yaml", strings.Replace(quick, "attempts: 20", "attempts: 21", 1))
	_, stderr, code := runCLI(t, t.Context(), "run", file, "--format", "json", "--only", "sem2")
	if code != exitFailed {
		t.Errorf("exit %d, want 1", code)
	}
	if want := "sem2: attempts: expected = 21, got 20"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}

func TestRunTable(t *testing.T) {
	file := writeFile(t, "quick.yaml", quick)
	out, _, code := runCLI(t, t.Context(), "run", file, "--only", "sem")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{"quick", "sem", "20 of 20"} {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "sem2") {
		t.Errorf("--only sem ran sem2 too:\n%s", out)
	}
}

func TestRunInterrupted(t *testing.T) {
	slow := strings.Replace(quick, "per_token: 1ms", "per_token: 200ms", 1)
	file := writeFile(t, "slow.yaml", slow)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	out, stderr, code := runCLI(t, ctx, "run", file, "--format", "json")
	if code != exitInterrupted {
		t.Errorf("exit %d, want 130", code)
	}
	var rep reports.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("interrupted run printed no JSON report: %v\n%s", err, out)
	}
	if !rep.Incomplete || len(rep.Results) != 1 || !rep.Results[0].Incomplete {
		t.Fatalf("report incomplete=%v results=%d, want the interrupted strategy marked incomplete", rep.Incomplete, len(rep.Results))
	}
	// Its figures are partial: expect: (completed: 20) is not held to them.
	if ex := rep.Results[0].Expectations; len(ex) != 0 {
		t.Errorf("an interrupted strategy's expectations were checked: %+v", ex)
	}
	if strings.Contains(stderr, "FAIL") || strings.Contains(stderr, "expectation") {
		t.Errorf("stderr reports expectations of an interrupted run:\n%s", stderr)
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r reports.Report) string {
		var b bytes.Buffer
		if err := reports.JSON(&b, r); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := reports.Report{Scenario: "s", Results: []reports.Result{{Name: "a", Summary: measure.Summary{Items: 10, Completed: 10, Attempts: 10, WallSeconds: 5}}}}
	worse := base
	worse.Results = []reports.Result{{Name: "a", Summary: measure.Summary{Items: 10, Completed: 10, Attempts: 15, Throttled: 5, WallSeconds: 5}}}
	oldPath, newPath := write("old.json", base), write("new.json", worse)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"same", []string{"compare", oldPath, oldPath}, 0},
		{"regressed", []string{"compare", oldPath, newPath}, exitFailed},
		{"within a generous threshold", []string{"compare", oldPath, newPath, "--threshold", "10"}, exitFailed}, // 0 → 5 429s regresses at any threshold
		{"improved", []string{"compare", newPath, oldPath}, 0},
		{"json", []string{"compare", "--format", "json", oldPath, oldPath}, 0},
		{"negative threshold", []string{"compare", oldPath, newPath, "--threshold", "-1"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, t.Context(), tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, stderr)
			}
		})
	}
}

// TestKeyNeverPrinted runs a scenario against a live target whose key comes
// from the environment and checks the key appears nowhere: not in stdout,
// stderr, the report files or results.jsonl — including when every call
// fails and errors are printed.
func TestKeyNeverPrinted(t *testing.T) {
	const secret = "sk-ant-SECRET-0123456789abcdef"
	for _, tc := range []struct {
		name    string
		accepts string // the key the server accepts
	}{{"accepted", secret}, {"rejected", "another-key"}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mock.DefaultConfig()
			cfg.APIKeys = []string{tc.accepts}
			cfg.Latency.PerToken = 0
			srv := mocktest.Start(t, cfg)
			t.Setenv("RATELAB_TEST_KEY", secret)
			scenario := "items: 5\nrequest: {max_tokens: 3, prompt: \"key is " + secret[:6] + "\"}\n" +
				"target: {url: \"" + srv.URL + "\", provider: anthropic, api_key_env: RATELAB_TEST_KEY}\n" +
				"strategies:\n  - name: s\n    kind: semaphore\n    n: 2\n    max_retries: 0\n    expect: {completed: 5}\n"
			file := writeFile(t, "target.yaml", scenario)
			dir := t.TempDir()
			out, stderr, code := runCLI(t, t.Context(), "run", file, "--format", "json", "--out", dir, "--timeline", "50ms")
			if tc.name == "accepted" && code != 0 || tc.name == "rejected" && code != exitFailed {
				t.Errorf("exit %d\n%s\n%s", code, out, stderr)
			}
			texts := map[string]string{"stdout": out, "stderr": stderr}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				texts[e.Name()] = string(b)
			}
			for where, text := range texts {
				if strings.Contains(text, secret) {
					t.Errorf("the key appears in %s", where)
				}
			}
		})
	}
}

func TestMissingKeyVariable(t *testing.T) {
	file := writeFile(t, "target.yaml", "items: 1\ntarget: {url: \"http://127.0.0.1:1\", api_key_env: RATELAB_UNSET_VARIABLE}\n"+
		"strategies: [{name: s, kind: unbounded, expect: {completed: 1}}]\n")
	_, stderr, code := runCLI(t, t.Context(), "run", file)
	if strings.Contains(stderr, "loadgen: loadgen:") {
		t.Errorf("stderr repeats the program's name: %q", stderr)
	}
	if code != exitUsage || !strings.Contains(stderr, "RATELAB_UNSET_VARIABLE") || !strings.Contains(stderr, "target.api_key_env") {
		t.Errorf("exit %d, stderr %q; want 2 naming the variable", code, stderr)
	}
}

// TestMainJobRealTime builds the binary and runs the main job in real time:
// scenarios/20-concurrent.yaml against the embedded mock, as a newcomer
// would. Counts must match the guide's; timings are checked only as
// expectations of the file, and a miss of a wall-time expectation alone is
// logged, not failed, since a shared machine's load stretches real time.
func TestMainJobRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 45 s of real time")
	}
	bin := filepath.Join(t.TempDir(), "loadgen")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "run", "scenarios/20-concurrent.yaml", "--format", "json")
	cmd.Dir = "../.."
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code != exitFailed {
		t.Fatalf("loadgen run: %v\n%s", err, stderr.String())
	}
	rep, rerr := reports.ReadJSON(&stdout)
	if rerr != nil {
		t.Fatalf("stdout is not a report: %v", rerr)
	}
	timingOnly := true
	for _, r := range rep.Results {
		for _, c := range r.Expectations {
			if c.OK {
				continue
			}
			if strings.Contains(c.Metric, "wall") {
				t.Logf("timing expectation missed (machine load?): %s: %s expected %s, got %s", r.Name, c.Metric, c.Expected, c.Actual)
				continue
			}
			timingOnly = false
			t.Errorf("%s: %s: expected %s, got %s", r.Name, c.Metric, c.Expected, c.Actual)
		}
		// Ratios, not absolute times: a semaphore at the limit makes one
		// attempt per call and is never slower than the one at half of it.
		if r.Name == "semaphore(20)" && r.AttemptsPerCall != 1 {
			t.Errorf("semaphore(20): attempts per call = %v, want 1", r.AttemptsPerCall)
		}
	}
	if code != 0 && !timingOnly {
		t.Errorf("exit %d, want 0", code)
	}
	var sem10, sem20 float64
	for _, r := range rep.Results {
		switch r.Name {
		case "semaphore(10)":
			sem10 = r.WallSeconds
		case "semaphore(20)":
			sem20 = r.WallSeconds
		}
	}
	if sem20 <= 0 || sem10/sem20 < 1.5 {
		t.Errorf("semaphore(10) / semaphore(20) wall = %.2f, want about 2", sem10/sem20)
	}
}
