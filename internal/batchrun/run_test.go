package batchrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/strategies"
)

// TestRunBatchAdaptiveState runs two batches against the embedded mock
// with the adaptive strategy: the first learns the mock's limit and saves
// it, keyed by provider, the embedded mock and the key's fingerprint; the
// second starts from it.
func TestRunBatchAdaptiveState(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "batch.yaml")
	os.WriteFile(cfgPath, []byte("server:\n  latency: {per_token: 1ms}\n  limits: {max_concurrent: 4}\n"), 0o644)
	cfg, err := loadgen.LoadBatchConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "items.jsonl")
	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf(`{"id": "%d", "prompt": "p", "max_tokens": 4}`, i))
	}
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	state := filepath.Join(dir, "adaptive.json")
	run := func(out string) Report {
		t.Helper()
		rep, err := Run(t.Context(), Options{Input: in, Output: filepath.Join(dir, out), Config: cfg, Mock: true, StateFile: state, Workers: 50})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.AllOK() || rep.Completed != 200 || rep.Kind != loadgen.KindAdaptive {
			t.Fatalf("%s: %+v, want 200 completed by adaptive", out, rep.Summary)
		}
		return rep
	}
	first := run("first.jsonl")
	if first.StateLoaded {
		t.Errorf("first batch: started from a state file that did not exist")
	}
	var f struct {
		Limits []strategies.LearnedState `json:"limits"`
	}
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &f); err != nil || len(f.Limits) != 1 {
		t.Fatalf("state file: %v\n%s", err, data)
	}
	e := f.Limits[0]
	if e.Provider != "anthropic" || e.BaseURL != "embedded-mock" || e.KeyFingerprint != strategies.Fingerprint(loadgen.DefaultAPIKey) || e.Window <= 0 {
		t.Errorf("state entry = %+v, want the embedded mock, a key fingerprint and a window", e)
	}
	t.Logf("learned: limit %d, window %g; first batch: %d attempts, %d 429s", e.Limit, e.Window, first.Run.Attempts, first.Run.Throttled)
	if second := run("second.jsonl"); !second.StateLoaded {
		t.Errorf("second batch did not start from the state file")
	}
}

func TestRunBatchNoKey(t *testing.T) {
	_, err := Run(context.Background(), Options{Input: "x", Output: "y", Getenv: func(string) string { return "" }})
	if !errors.Is(err, loadgen.ErrNoKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("RunBatch without a key: %v, want loadgen.ErrNoKey naming ANTHROPIC_API_KEY", err)
	}
	_, err = Run(context.Background(), Options{Input: "x", Output: "y", Provider: "openai", Getenv: func(string) string { return "" }})
	if !errors.Is(err, loadgen.ErrNoKey) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("RunBatch without a key: %v, want loadgen.ErrNoKey naming OPENAI_API_KEY", err)
	}
}

// TestBatchProgressPlain: a batch writes the same plain lines, without a
// position (it runs one strategy).
func TestBatchProgressPlain(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "batch.yaml")
	if err := os.WriteFile(cfgPath, []byte("server:\n  output: {length: max_tokens}\n  latency: {per_token: 3ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadgen.LoadBatchConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "items.jsonl")
	var lines []string
	for i := range 400 {
		lines = append(lines, fmt.Sprintf(`{"id": "%d", "prompt": "p", "max_tokens": 100}`, i))
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		_, err = Run(t.Context(), Options{Input: in, Output: filepath.Join(dir, "out.jsonl"), Config: cfg,
			Mock: true, Listen: loadgen.ListenMemory, Strategy: "semaphore:n=5", Progress: &loadgen.Progress{W: &buf}})
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "semaphore:n=5: 165/400 done, 5 in flight, 0 429s, 10s elapsed, ETA 14s\n" +
		"semaphore:n=5: 330/400 done, 5 in flight, 0 429s, 20s elapsed, ETA 4s\n"
	if got := buf.String(); got != want {
		t.Errorf("progress:\n%s\nwant:\n%s", got, want)
	}
}
