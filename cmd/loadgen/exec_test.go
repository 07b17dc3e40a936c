package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExec runs the shipped Python client through loadgen exec: its row,
// measured by the server, comes out as JSON with the mock flags applied.
func TestExec(t *testing.T) {
	client, err := filepath.Abs("../../examples/clients/python/fanout.py")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var stdout, stderr strings.Builder
	err = run(t.Context(), []string{"exec", "--items", "20", "--max-concurrent", "5", "--retry-after", "1s",
		"--per-token-latency", "1ms", "--format", "json", "--out", out, "--", "python3", client, "--concurrency", "5"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("exec: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Results []struct {
			Completed, Attempts, Throttled, PeakConcurrency int64
			Command                                         struct{ ExitCode int }
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, stdout.String())
	}
	r := rep.Results[0]
	if r.Completed != 20 || r.Attempts != 20 || r.Throttled != 0 {
		t.Errorf("row %+v, want 20 completed in 20 attempts, no 429", r)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Errorf("--out lacks report.json: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(out, "*.stdout")); len(m) != 1 {
		t.Errorf("--out has stdout files %q, want one", m)
	} else if b, _ := os.ReadFile(m[0]); string(b) != "completed 20 of 20\n" {
		t.Errorf("%s = %q", m[0], b)
	}
}

// TestExecErrors: exit statuses of loadgen exec.
func TestExecErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"exec"}, exitUsage, "no command"},
		{[]string{"exec", "--", "no-such-program-ratelab"}, exitUsage, "not found in PATH"},
		{[]string{"exec", "--items", "1", "--", "sh", "-c", "echo bye >&2; exit 4"}, exitFailed, "exited 4; made no request\n  last lines of stderr:\n    bye"},
	} {
		var stdout, stderr strings.Builder
		err := run(t.Context(), tc.args, &stdout, &stderr)
		code := report(err, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

// TestExecInterrupted: Ctrl-C (here, the context ending once the program
// has started: it creates a file) stops the program and prints the row
// measured until then; the exit status is 130.
func TestExecInterrupted(t *testing.T) {
	started := filepath.Join(t.TempDir(), "started")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // in case the program never starts
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(started); err == nil {
				cancel()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var stdout, stderr strings.Builder
	err := run(ctx, []string{"exec", "--items", "1", "--", "sh", "-c", `touch "$0"; exec sleep 300`, started}, &stdout, &stderr)
	if code := report(err, &stderr); code != exitInterrupted {
		t.Errorf("exit %d, want %d; stderr %q", code, exitInterrupted, stderr.String())
	}
	if !strings.Contains(stdout.String(), "sleep 300") {
		t.Errorf("stdout lacks the row:\n%s", stdout.String())
	}
}
