//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/reports"
)

// TestBinaryAttacks keeps the process-level attacks of issue 10 that held
// holding, against the real binary (built once): ten SIGKILLs of a batch in
// a row, a second batch on the same output, SIGTERM in the middle of a run.
func TestBinaryAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildLoadgen(t, t.TempDir())
	t.Run("ten SIGKILLs in a row", func(t *testing.T) { tenKills(t, bin) })
	t.Run("second writer refused", func(t *testing.T) { secondWriter(t, bin) })
	t.Run("SIGTERM mid-run", func(t *testing.T) { sigtermRun(t, bin) })
}

// slowBatch is a batch configuration of 10 ms a call, 4 at once: about
// 400 results a second, slow enough for a test to see it part-way.
const slowBatch = `server:
  latency: {per_token: 1ms}
  limits: {max_concurrent: 4}
strategies:
  - {name: sem4, kind: semaphore, n: 4}
`

// slowBatchArgs returns the arguments of a slowBatch run of n items
// against the embedded mock, its output file, and a context that ends the
// test's processes after two minutes at most.
func slowBatchArgs(t *testing.T, n int) (ctx context.Context, out string, args []string) {
	t.Helper()
	out = filepath.Join(t.TempDir(), "results.jsonl")
	args = []string{"batch", "--input", batchItems(t, n, 10), "--output", out, "--target", "mock",
		"--config", writeFile(t, "batch.yaml", slowBatch), "--state-file", ""}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx, out, args
}

// startBatch starts bin with args and waits until out holds at least lines
// complete lines or the process ended. Receive from the returned channel
// instead of calling cmd.Wait.
func startBatch(t *testing.T, ctx context.Context, bin string, args []string, out string, lines int) (*exec.Cmd, <-chan error, *bytes.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	for countLines(out) < lines && ctx.Err() == nil {
		select {
		case err := <-ended:
			ended <- err
			return cmd, ended, &output
		case <-time.After(time.Millisecond):
		}
	}
	return cmd, ended, &output
}

// completeLines returns the bytes of path up to its last newline, and the
// results on those lines; it fails the test if a complete line is not a
// result or an id is on two lines.
func completeLines(t *testing.T, path string) ([]byte, map[string]engine.Result) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	ids := make(map[string]engine.Result)
	if _, err := engine.ReadJSONL(bytes.NewReader(data), func(r engine.Result) error {
		if _, dup := ids[r.ID]; dup {
			return fmt.Errorf("id %s twice", r.ID)
		}
		ids[r.ID] = r
		return nil
	}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data, ids
}

// tenKills SIGKILLs the same batch ten times in a row, each once it has
// written a few more lines: after every kill the output's complete lines
// are the previous ones plus new ones (nothing lost, nothing rewritten),
// with no id twice; the eleventh run finishes exactly the items still
// missing, and every id is in the output once.
func tenKills(t *testing.T, bin string) {
	const n = 1000
	ctx, out, args := slowBatchArgs(t, n)

	var prev []byte
	var prevIDs map[string]engine.Result
	var counts []int
	for kill := 1; kill <= 10; kill++ {
		cmd, ended, stderr := startBatch(t, ctx, bin, args, out, len(prevIDs)+10)
		cmd.Process.Signal(syscall.SIGKILL)
		<-ended
		if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: the batch ended by itself (%v) before it was killed; output:\n%s", kill, cmd.ProcessState, stderr)
		}
		data, ids := completeLines(t, out)
		if !bytes.HasPrefix(data, prev) {
			t.Fatalf("kill %d: the output's first %d bytes changed since the previous kill", kill, len(prev))
		}
		if len(ids) <= len(prevIDs) {
			t.Fatalf("kill %d: %d results, %d before: the run made no progress", kill, len(ids), len(prevIDs))
		}
		for id, r := range prevIDs {
			if !equalResult(ids[id], r) {
				t.Errorf("kill %d: %s changed", kill, id)
			}
		}
		prev, prevIDs = data, ids
		counts = append(counts, len(ids))
	}
	t.Logf("results after each SIGKILL: %v", counts)

	final, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("run after ten kills: %v\n%s", err, final)
	}
	done := len(prevIDs)
	for _, want := range []string{fmt.Sprintf("already done %d (0 with errors)", done), fmt.Sprintf("completed    %d\n", n-done)} {
		if !strings.Contains(string(final), want) {
			t.Errorf("final run does not say %q:\n%s", want, final)
		}
	}
	if data, _ := os.ReadFile(out); !bytes.HasPrefix(data, prev) {
		t.Errorf("the final run changed the results written before it")
	}
	for id, r := range exactlyOnce(t, out, n) {
		if !r.OK() {
			t.Errorf("%s: %v", id, r.Err)
		}
	}
}

// equalResult compares two results by their JSON lines.
func equalResult(a, b engine.Result) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// secondWriter starts a second batch on an output a running batch is
// writing: it is refused at once, naming the output and why, with exit
// status 2 and nothing on stdout; the first batch, interrupted then, has
// written each id at most once and asks for a rerun.
func secondWriter(t *testing.T, bin string) {
	const n = 1000
	ctx, out, args := slowBatchArgs(t, n)

	first, ended, firstOut := startBatch(t, ctx, bin, args, out, 1)
	second := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	second.Stdout, second.Stderr = &stdout, &stderr
	err := second.Run()
	if code := second.ProcessState.ExitCode(); err == nil || code != exitUsage {
		t.Errorf("second batch: exit %d (%v), want %d", code, err, exitUsage)
	}
	if want := "loadgen: output " + out + ": another batch is writing to it\n"; stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("second batch said:\n%s%s\nwant only %q", stdout.String(), stderr.String(), want)
	}
	first.Process.Signal(syscall.SIGTERM)
	<-ended
	code := first.ProcessState.ExitCode()
	if finished := code == 0 && countLines(out) == n; !finished && (code != exitInterrupted || !strings.Contains(firstOut.String(), "rerun the same command to resume")) {
		t.Errorf("first batch after SIGTERM: exit %d, want 130 asking for a rerun:\n%s", code, firstOut)
	}
	if _, ids := completeLines(t, out); len(ids) == 0 {
		t.Errorf("first batch wrote no results")
	}
}

// sigtermRun sends SIGTERM to loadgen run once results are being written:
// it exits 130 and prints the report of what finished, marked incomplete,
// on stdout and in --out's report.json.
func sigtermRun(t *testing.T, bin string) {
	const items = 40
	// 5 at once, 400 ms a call: about 3.2 s for the whole row.
	scenario := strings.NewReplacer("items: 20", fmt.Sprintf("items: %d", items), "per_token: 1ms", "per_token: 200ms").Replace(quick)
	file := writeFile(t, "slow.yaml", scenario)
	outDir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", file, "--format", "json", "--only", "sem", "--out", outDir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(outDir, "results.jsonl")
	for countLines(results) < 1 && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	seen := countLines(results)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d after SIGTERM, want %d; stderr:\n%s", code, exitInterrupted, stderr.String())
	}
	check := func(where string, data []byte) {
		var rep reports.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatalf("%s: no JSON report after SIGTERM: %v\n%s", where, err, data)
		}
		if !rep.Incomplete || len(rep.Results) != 1 || !rep.Results[0].Incomplete {
			t.Fatalf("%s: incomplete=%v, %d results, want one result marked incomplete", where, rep.Incomplete, len(rep.Results))
		}
		r := rep.Results[0]
		if r.Name != "sem" || r.Completed < seen || r.Completed >= items || r.Failed != 0 {
			t.Errorf("%s: %s completed %d, failed %d; want sem with at least the %d seen and fewer than %d, none failed", where, r.Name, r.Completed, r.Failed, seen, items)
		}
		if got := countLines(results); r.Completed != got {
			t.Errorf("%s: completed %d, but results.jsonl has %d lines", where, r.Completed, got)
		}
	}
	check("stdout", stdout.Bytes())
	data, err := os.ReadFile(filepath.Join(outDir, "report.json"))
	if err != nil {
		t.Fatalf("report.json after SIGTERM: %v", err)
	}
	check("report.json", data)
}
