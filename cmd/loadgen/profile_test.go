package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunProfiles writes both profiles of a run: gzipped pprof protobufs,
// what go tool pprof reads.
func TestRunProfiles(t *testing.T) {
	file := writeFile(t, "quick.yaml", quick)
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	_, stderr, code := runCLI(t, t.Context(), "run", file, "--only", "sem", "--cpuprofile", cpu, "--memprofile", mem)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, f := range []string{cpu, mem} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: %d bytes, not a gzipped profile", filepath.Base(f), len(b))
		}
	}
}

// TestRunProfileUnwritable refuses a profile it cannot write before the run,
// naming the flag.
func TestRunProfileUnwritable(t *testing.T) {
	file := writeFile(t, "quick.yaml", quick)
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "p.prof")
	for _, flag := range []string{"--cpuprofile", "--memprofile"} {
		out, stderr, code := runCLI(t, t.Context(), "run", file, flag, bad)
		if code != exitUsage || !strings.Contains(stderr, flag) || out != "" {
			t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 2 naming the flag, before any row", flag, bad, code, out, stderr)
		}
	}
}
