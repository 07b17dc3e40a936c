package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBatchDiskFull runs loadgen batch with its output on a 16 KiB tmpfs
// that fills part-way: it exits 1 naming the output and the cause, and the
// same command rerun once there is room finishes the batch with every id
// once. Mounting the tmpfs needs root.
func TestBatchDiskFull(t *testing.T) {
	const n = 300
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16k"); err != nil {
		t.Skipf("mounting a 16 KiB tmpfs to fill up needs root (CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	out := filepath.Join(dir, "results.jsonl")
	config := writeFile(t, "batch.yaml", "server:\n  latency: {per_token: 0s, ttft: 0s}\nstrategies:\n  - {name: sem8, kind: semaphore, n: 8}\n")
	args := []string{"batch", "--input", batchItems(t, n, 3), "--output", out, "--target", "mock", "--config", config, "--state-file", ""}

	stdout, stderr, code := runCLI(t, t.Context(), args...)
	if code != exitFailed || !strings.Contains(stderr, out) || !strings.Contains(stderr, "no space left on device") {
		t.Fatalf("batch on a full disk: exit %d, want 1 naming %s and no space left on device:\n%s%s", code, out, stdout, stderr)
	}
	t.Logf("full disk: %s", strings.TrimSpace(stderr))
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	whole := strings.Count(string(data), "\n") // a torn tail is not a result
	if whole == 0 || whole >= n {
		t.Fatalf("%d whole results on the full disk, want part of the batch", whole)
	}

	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=1m"); err != nil {
		t.Fatalf("remount larger: %v", err)
	}
	stdout, stderr, code = runCLI(t, t.Context(), args...)
	if code != 0 {
		t.Fatalf("rerun with room: exit %d:\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{fmt.Sprintf("already done %d (0 with errors)", whole), fmt.Sprintf("completed    %d\n", n-whole)} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("rerun does not say %q:\n%s%s", want, stdout, stderr)
		}
	}
	for id, r := range exactlyOnce(t, out, n) {
		if !r.OK() {
			t.Errorf("%s: %v", id, r.Err)
		}
	}
}
