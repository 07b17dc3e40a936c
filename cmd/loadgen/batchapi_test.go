package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// TestBatchAPIKillResume runs `loadgen batch --via batch-api` (the real
// binary) over 10,000 items against a mock on loopback whose queue expires
// part of them (a 1 s expiry, in real time, and a drain of 2,000 a second:
// a batch of 2,500 cannot finish in time even alone, so a loaded machine
// that spaces the batches out still expires some), SIGKILLs it three times at
// different moments, and reruns it to the end: every id once, all
// succeeded (the expired ones resubmitted), and every batch the mock
// created recorded in the state file, none created twice.
func TestBatchAPIKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cfg, err := mock.ParseConfig([]byte(`
api_keys: [sk-batch]
batches: {drain_rate: 2000, startup: 200ms, expiry: 1s, cancel_delay: 10ms}
`), "kill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// On loopback: the loadgen binary it runs dials it.
	srv := mocktest.Start(t, cfg)

	bin := buildLoadgen(t, t.TempDir())
	const n = 10_000
	out := t.TempDir() + "/results.jsonl"
	state := out + ".batches.json"
	args := []string{"batch", "--via", "batch-api", "--input", batchItems(t, n, 5), "--output", out,
		"--base-url", srv.URL, "--batch-size", "2500", "--poll", "50ms,200ms",
		"--resubmit", "expired", "--max-rounds", "20"}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	env := append(os.Environ(), "ANTHROPIC_API_KEY=sk-batch")

	// Kill after the first batch is recorded, mid-way through the
	// submissions, and once this run has written results. The last is a
	// condition on the output, not on a batch count: how many batches
	// expire, and so how many the run creates, depends on the machine's
	// speed (a kill at a sixth recorded batch once found a run that
	// finished with five).
	kills := []struct {
		what string
		now  func(lines0 int) bool
	}{
		{"1 batch recorded", func(int) bool { return recorded(state) >= 1 }},
		{"3 batches recorded", func(int) bool { return recorded(state) >= 3 }},
		{"results written", func(lines0 int) bool { return countLines(out) > lines0 }},
	}
	for _, k := range kills {
		lines0 := countLines(out)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
	wait:
		for {
			select {
			case err := <-done:
				t.Fatalf("the run ended before the kill at %s (%d batches recorded, %d result lines): %v", k.what, recorded(state), countLines(out), err)
			case <-time.After(5 * time.Millisecond):
				if k.now(lines0) {
					break wait
				}
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() {
			t.Fatalf("kill at %s: %v, want killed", k.what, cmd.ProcessState)
		}
		t.Logf("killed at %s: %d batches recorded, %d result lines", k.what, recorded(state), countLines(out))
	}
	final := exec.CommandContext(ctx, bin, args...)
	final.Env = env
	report, err := final.CombinedOutput()
	t.Logf("final run:\n%s", report)
	if err != nil {
		t.Fatalf("final run: %v", err)
	}
	res := results(t, out)
	if len(res) != n {
		t.Errorf("%d ids in the output, want %d", len(res), n)
	}
	for id, rs := range res {
		if len(rs) != 1 || !rs[0].OK() {
			t.Fatalf("id %s: %d lines, first %+v", id, len(rs), rs[0])
		}
	}
	st := srv.Mock.BatchStats()
	if rec := recorded(state); st.Batches != rec {
		t.Errorf("the mock created %d batches, the state file records %d: a batch was created and lost", st.Batches, rec)
	}
	if st.Expired == 0 || !strings.Contains(string(report), "adopted") {
		t.Logf("expired %d (the queue's expiry should have expired some)", st.Expired)
	}
	if st.Expired == 0 {
		t.Error("no request expired: the test does not exercise resubmission")
	}
}

// recorded counts the batch ids a state file records.
func recorded(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var s struct {
		Chunks []struct {
			BatchID string `json:"batch_id"`
		} `json:"chunks"`
	}
	if json.Unmarshal(data, &s) != nil {
		return 0
	}
	n := 0
	for _, c := range s.Chunks {
		if c.BatchID != "" {
			n++
		}
	}
	return n
}

// TestBatchWorkRefusesVia: loadgen batch work takes the batch flags, but a
// queue worker makes its items one call each, so --via batch-api is
// refused by name before the queue is opened (no Redis is reached).
func TestBatchWorkRefusesVia(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	_, stderr, code := runCLI(t, t.Context(), "batch", "work", "--queue", "redis://127.0.0.1:1", "--name", "job", "--output", out, "--target", "mock", "--via", "batch-api")
	if code == 0 || !strings.Contains(stderr, "batch work: --via does not apply") {
		t.Errorf("exit %d, stderr %q; want a refusal naming --via", code, stderr)
	}
}
