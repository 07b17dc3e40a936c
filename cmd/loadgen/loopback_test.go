package main

import (
	"strings"
	"testing"
)

// TestLoopback: run and tune --loopback serve the embedded mock on a
// loopback port (loadgen's TestEmbeddedMockTransport counts the sockets)
// and give the same rows; with --virtual it is a usage error, since a
// simulated run has no port.
func TestLoopback(t *testing.T) {
	path := writeFile(t, "quick.yaml", quick)
	for _, cmd := range []string{"run", "tune"} {
		stdout, stderr, code := runCLI(t, t.Context(), cmd, path, "--loopback")
		if code != 0 || !strings.Contains(stdout, "20 of 20") {
			t.Errorf("%s --loopback: exit %d\nstdout:\n%s\nstderr:\n%s", cmd, code, stdout, stderr)
		}
		_, stderr, code = runCLI(t, t.Context(), cmd, path, "--loopback", "--virtual")
		if want := cmd + ": --loopback and --virtual: choose one"; code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("%s --loopback --virtual: exit %d, stderr:\n%s\nwant exit 2 and %q", cmd, code, stderr, want)
		}
	}
}
