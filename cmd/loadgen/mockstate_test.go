package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBatchMockKeepsNoState: batch --target mock runs adaptive (the default
// strategy) against the embedded mock without reading or writing the user's
// state file (~/.cache/ratelab/adaptive.json): a limit learned from a mock
// would be the starting point of the next real batch's search. An explicit
// --state-file is still honoured.
func TestBatchMockKeepsNoState(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir())
	userState := filepath.Join(cache, "ratelab", "adaptive.json")
	if got := defaultStateFile(); got != userState {
		t.Fatalf("defaultStateFile() = %q, want %q", got, userState)
	}
	config := writeFile(t, "batch.yaml", "server:\n  latency: {per_token: 1ms}\n  limits: {max_concurrent: 4}\n")
	in := batchItems(t, 20, 5)
	args := []string{"batch", "--input", in, "--target", "mock", "--config", config}

	stdout, stderr, code := runCLI(t, t.Context(), append(args, "--output", filepath.Join(t.TempDir(), "out.jsonl"))...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(userState); !os.IsNotExist(err) {
		t.Errorf("batch --target mock wrote the user's state file %s (stat: %v)", userState, err)
	}
	if strings.Contains(stdout, "(state ") {
		t.Errorf("summary names a state file:\n%s", stdout)
	}

	explicit := filepath.Join(t.TempDir(), "mine.json")
	stdout, stderr, code = runCLI(t, t.Context(), append(args, "--output", filepath.Join(t.TempDir(), "out.jsonl"), "--state-file", explicit)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(explicit); err != nil || !strings.Contains(stdout, "(state "+explicit) {
		t.Errorf("--state-file %s with --target mock: stat %v; summary:\n%s", explicit, err, stdout)
	}
}
