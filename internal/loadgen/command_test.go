package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// guideServer is the guide's mock: 0.5 s calls, 20 at once, retry-after 1.
const guideServer = `
items: 200
request: {max_tokens: 100, prompt: "Classify ticket {i}."}
server:
  latency: {per_token: 5ms}
  limits: {max_concurrent: 20, retry_after: 1s}
`

// commandScenario writes a scenario of command rows beside the test's
// scripts and parses it.
func commandScenario(t testing.TB, dir, head, rows string) *Scenario {
	t.Helper()
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(head+"strategies:\n"+rows), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

func byName(rep reports.Report) map[string]reports.Result {
	m := make(map[string]reports.Result)
	for _, r := range rep.Results {
		m[r.Name] = r
	}
	return m
}

// TestCommandPythonGuide runs the shipped standard-library Python client as
// real processes against the guide's mock. Unbounded with two retries is
// the guide's row, counted by the server alone: 60 of 200, 540 attempts,
// 480 429s when all 200 first attempts arrive before the first calls end
// (0.5 s), as they do on a quiet machine; a loaded one starts them over a
// longer time, and more complete (86 once, under load). So the test holds
// the row to what no timing changes: at least 60 complete, every call that
// failed was refused three times, the server's counts add up. Semaphore(20)
// completes everything at one attempt per call without a 429 and never has
// more than 20 requests in flight.
func TestCommandPythonGuide(t *testing.T) {
	dir, err := filepath.Abs("../../examples/clients/python")
	if err != nil {
		t.Fatal(err)
	}
	s := commandScenario(t, t.TempDir(), guideServer, fmt.Sprintf(`
  - name: unbounded
    kind: command
    command: [python3, fanout.py, --concurrency, "0", --max-retries, "2"]
    dir: %[1]s
    expect: {exit_code: 1}
  - name: semaphore(20)
    kind: command
    command: [python3, fanout.py, --concurrency, "20"]
    dir: %[1]s
`, dir))
	out := t.TempDir()
	rep, err := Run(t.Context(), s, Options{CommandOut: out})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, f := range Failures(rep) {
		t.Errorf("%s", f)
	}
	rows := byName(rep)
	u := rows["unbounded"]
	if uv, ok := u.Server(); u.Completed < 60 || u.Failed == 0 || u.Completed+u.Failed != 200 || u.Attempts != int64(u.Completed)+u.Throttled ||
		u.Throttled < 3*int64(u.Failed) || !ok || uv.EarlyRetries != 0 {
		t.Errorf("unbounded: completed %d failed %d attempts %d 429s %d early %d (measured %v); want at least 60 of 200 completed (60 when every call starts at once), some failed, attempts = completed + 429s, three 429s a failed call, no early retry",
			u.Completed, u.Failed, u.Attempts, u.Throttled, uv.EarlyRetries, ok)
	}
	if by := u.ThrottledByAttempt; len(by) != 3 || by[0]+by[1]+by[2] != u.Throttled || by[2] != int64(u.Failed) || by[0] < by[1] || by[1] < by[2] {
		t.Errorf("unbounded: 429s by attempt %v; want three counts, falling, adding up to the 429s (%d), the third the failed calls (%d) (quiet machine: [180 160 140])", by, u.Throttled, u.Failed)
	}
	if c := u.Command; c == nil || c.ExitCode != 1 || c.Status != "exited 1" {
		t.Errorf("unbounded: command %+v, want exited 1", c)
	}
	sem := rows["semaphore(20)"]
	if sv, ok := sem.Server(); sem.Completed != 200 || sem.Attempts != 200 || sem.Throttled != 0 || !ok || sv.PeakConcurrency > 20 {
		t.Errorf("semaphore(20): completed %d attempts %d 429s %d peak %d (measured %v); want 200, 200, 0, at most 20",
			sem.Completed, sem.Attempts, sem.Throttled, sv.PeakConcurrency, ok)
	}
	// The time is real, so its ratio to the oracle is a benchmark
	// (BenchmarkCommandPythonSemaphore); here only what no load can break:
	// ten waves of 0.5 s cannot take less than the oracle.
	if sem.WallOverOracle < 1 {
		t.Errorf("semaphore(20): wall/oracle %.3f, below the oracle", sem.WallOverOracle)
	}
	b, err := os.ReadFile(filepath.Join(out, "semaphore_20_.stdout"))
	if err != nil || string(b) != "completed 200 of 200\n" {
		t.Errorf("semaphore(20) stdout = %q, %v; want completed 200 of 200", b, err)
	}
}

// TestCommandEnv: the program gets the base URLs, keys and items, and the
// items file is loadgen batch's input format (its own validator reads it).
func TestCommandEnv(t *testing.T) {
	dir := t.TempDir()
	s := commandScenario(t, dir, `
items: [{count: 2, prompt: "p {i}"}, {count: 1, provider: openai, prompt_tokens: 5}]
request: {max_tokens: 7, system: "Be brief."}
`, `
  - name: env
    kind: command
    command: [sh, -c, 'env > env.txt; cp "$RATELAB_ITEMS_FILE" items.jsonl; echo hi > /dev/null']
    env: {MY_FLAG: "1", RATELAB_MODEL: overridden}
    expect: {completed: 0}
`)
	rep, err := Run(t.Context(), s, Options{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	env := readEnv(t, filepath.Join(dir, "env.txt"))
	base := env["ANTHROPIC_BASE_URL"]
	if !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, "/v1") {
		t.Errorf("ANTHROPIC_BASE_URL = %q, want http://127.0.0.1:PORT", base)
	}
	for k, want := range map[string]string{
		"OPENAI_BASE_URL": base + "/v1", "ANTHROPIC_API_KEY": DefaultAPIKey, "OPENAI_API_KEY": DefaultAPIKey,
		"RATELAB_ITEMS": "3", "RATELAB_PROVIDER": "anthropic", "RATELAB_MODEL": "overridden",
		"RATELAB_MAX_TOKENS": "7", "MY_FLAG": "1",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	var started batch.Summary
	ctx, cancel := context.WithCancel(t.Context())
	b := batch.Batch{Input: filepath.Join(dir, "items.jsonl"), Output: filepath.Join(dir, "out.jsonl"),
		OnStart: func(sum batch.Summary) { started = sum; cancel() },
		Config:  engine.Config{Client: noClient{}, Strategy: strategies.NewUnbounded()}}
	if _, err := b.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("loadgen batch's reading of the items file: %v", err)
	}
	if started.Items != 3 {
		t.Errorf("the items file holds %d valid items, want 3", started.Items)
	}
	items, _ := os.ReadFile(filepath.Join(dir, "items.jsonl"))
	if !strings.Contains(string(items), `{"id":"1","prompt":"p 1","system":"Be brief.","max_tokens":7,"metadata":{"model":"claude-haiku-4-5","provider":"anthropic"}}`) ||
		!strings.Contains(string(items), `"metadata":{"model":"gpt-5.4-mini","provider":"openai"}`) {
		t.Errorf("items file:\n%s", items)
	}
	// No request: the row fails its implicit attempts > 0.
	if f := Failures(rep); len(f) != 1 || !strings.Contains(f[0], "attempts: expected > 0, got 0") {
		t.Errorf("failures = %q, want the implicit attempts > 0", f)
	}
	if c := rep.Results[0].Command; c.Status != "exited 0; made no request" {
		t.Errorf("status = %q", c.Status)
	}
}

// noClient is an engine.Client for a batch that is stopped before its
// first call.
type noClient struct{}

func (noClient) Do(context.Context, provider.Request, int) (provider.Response, strategies.Outcome) {
	panic("no call expected")
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := make(map[string]string)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[k] = v
		}
	}
	return m
}

// TestCommandTimeout: a hanging program is stopped with its whole process
// group at its timeout, and the row says so and fails.
func TestCommandTimeout(t *testing.T) {
	dir := t.TempDir()
	s := commandScenario(t, dir, "items: 1\n", `
  - name: hangs
    kind: command
    command: [sh, -c, 'trap "" TERM; sleep 300 & echo $! > child.pid; echo started; wait']
    timeout: 300ms
`)
	var log strings.Builder
	rep, err := Run(t.Context(), s, Options{CommandLog: &log})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	c := rep.Results[0].Command
	if !c.TimedOut || c.ExitCode != -1 || !strings.HasPrefix(c.Status, "timed out after 300ms") {
		t.Errorf("command %+v, want timed out and killed", c)
	}
	if f := Failures(rep); len(f) != 2 {
		t.Errorf("failures = %q, want exit_code and attempts", f)
	}
	if !strings.Contains(log.String(), "hangs: sh -c") || !strings.Contains(log.String(), "    started") {
		t.Errorf("log = %q, want the status and the last lines of stdout", log.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for i := 0; ; i++ {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Fields(string(st))[2] == "Z" {
			break
		}
		if i == 200 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the program's child %d outlived it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCommandInterrupted: ending the context stops the program and returns
// the rows that finished, the interrupted one marked incomplete. The
// context ends once the slow program has started (it creates a file), not
// after a guessed delay that a loaded machine could outlast.
func TestCommandInterrupted(t *testing.T) {
	dir := t.TempDir()
	s := commandScenario(t, dir, "items: 1\n", `
  - {name: quick, kind: command, command: ["true"], expect: {attempts: 0}}
  - {name: slow, kind: command, command: [sh, -c, "touch started; exec sleep 300"]}
`)
	// A bound in case the program never starts: the run then ends with
	// DeadlineExceeded, which fails the test rather than hanging it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
				cancel()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	rep, err := Run(ctx, s, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want the context's", err)
	}
	if len(rep.Results) != 2 || rep.Results[0].Incomplete || !rep.Results[1].Incomplete || !rep.Incomplete {
		t.Errorf("results %+v, want quick complete and slow incomplete", rep.Results)
	}
}

// TestCommandValidate: a program that cannot run is an error when the
// scenario is read, naming the row and the key, before anything runs.
func TestCommandValidate(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plain.py"), []byte("print(1)\n"), 0o644)
	for _, tc := range []struct{ rows, want string }{
		{`  - {name: a, kind: command, command: [no-such-program-ratelab]}`,
			"strategies[0].command: no-such-program-ratelab: not found in PATH"},
		{`  - {name: a, kind: command, command: [./plain.py]}`,
			"strategies[0].command: " + filepath.Join(dir, "plain.py") + ": not executable"},
		{`  - {name: a, kind: command, command: [./missing.sh]}`,
			"strategies[0].command: " + filepath.Join(dir, "missing.sh") + ": not found"},
		{`  - {name: a, kind: command, command: [sh], dir: nowhere}`,
			"strategies[0].dir: " + filepath.Join(dir, "nowhere") + " is not a directory"},
		{`  - {name: a, kind: command}`, "strategies[0].command: required"},
		{`  - {name: a, kind: command, command: [sh], max_retries: 3}`, "strategies[0].max_retries: not a parameter of kind command"},
		{`  - {name: a, kind: command, command: [sh], timeout: -1s}`, "strategies[0].timeout: must not be negative"},
		{`  - {name: a, kind: semaphore, n: 2, command: [sh]}`, "strategies[0].command: not a parameter of kind semaphore"},
		// What only loadgen's client measures cannot be expected of a
		// command row, nor a program's exit status of a built-in row: the
		// value would read 0 whatever happened.
		{`  - {name: a, kind: command, command: [sh], expect: {failed_tokens: 0}}`,
			"strategies[0].expect.failed_tokens: not measurable on a command row"},
		{`  - {name: a, kind: command, command: [sh], expect: {max_end_to_end_p99: 5}}`,
			"strategies[0].expect.max_end_to_end_p99: not measurable on a command row"},
		{`  - {name: a, kind: command, command: [sh], expect: {final_limit: 20}}`,
			"strategies[0].expect.final_limit: not measurable on a command row"},
		{`  - {name: a, kind: semaphore, n: 2, expect: {exit_code: 0}}`,
			"strategies[0].expect.exit_code: only a command row has exit_code"},
	} {
		path := filepath.Join(dir, "s.yaml")
		os.WriteFile(path, []byte("items: 1\nstrategies:\n"+tc.rows+"\n"), 0o644)
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s\n  error = %v\n  want it to contain %q", tc.rows, err, tc.want)
		}
	}
}

// TestYourClientScenario runs the SDK rows of scenarios/your-client.yaml as
// real programs: Node with @anthropic-ai/sdk (installed by `npm ci` in
// examples/clients/node, as .ci/run does) and Go with anthropic-sdk-go. The
// file's expectations must hold: the bounded ones complete everything at one
// attempt per call without a 429 and never exceed 20 in flight; Node's
// unbounded fan-out fails some items and honours every retry-after.
func TestYourClientScenario(t *testing.T) {
	if _, err := os.Stat("../../examples/clients/node/node_modules/@anthropic-ai/sdk"); err != nil {
		t.Fatalf("the Node example's dependencies are missing: run npm ci in examples/clients/node (%v)", err)
	}
	s, err := Load("../../scenarios/your-client.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), s, Options{Only: []string{"node unbounded (SDK)", "node pool(20) (SDK)", "go semaphore(20) (SDK)"}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rep.Results) != 3 {
		t.Fatalf("%d results, want 3", len(rep.Results))
	}
	for _, f := range Failures(rep) {
		t.Errorf("%s", f)
	}
	for _, r := range rep.Results {
		t.Logf("%s: %d of %d, %d attempts, %d 429s by attempt %v, %.2f s, peak %d, %s",
			r.Name, r.Completed, r.Items, r.Attempts, r.Throttled, r.ThrottledByAttempt, r.WallSeconds, peak(r), r.Command.Status)
	}
}

// peak is a row's peak concurrency as the server saw it, 0 when unknown.
func peak(r reports.Result) int {
	v, _ := r.Server()
	return v.PeakConcurrency
}
