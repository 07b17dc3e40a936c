package batchrun

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestCommandKey(t *testing.T) {
	const secret = "sk-SECRET-0123456789"
	tests := []struct {
		command, want, err string
	}{
		{command: "printf '  " + secret + "\\n'", want: secret},
		{command: "echo " + secret + "; echo 'vault: token expired' >&2; exit 2", err: "--api-key-command: exit status 2: vault: token expired"},
		{command: "echo " + secret + "; echo 'oops " + secret + "' >&2; exit 1", err: "exit status 1: oops [REDACTED]"},
		{command: "true", err: "printed nothing"},
		{command: "echo a; echo b", err: "more than one line"},
	}
	for _, tt := range tests {
		got, err := CommandKey(t.Context(), tt.command)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("CommandKey(%q) error = %v, want %q", tt.command, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("CommandKey(%q) error holds the key: %v", tt.command, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CommandKey(%q) = %q, %v; want %q", tt.command, got, err, tt.want)
		}
	}
}

// TestCommandKeyTimeout: a key command that never finishes is stopped at
// the timeout (here the caller's deadline, shorter than
// KeyCommandTimeout), and the error names the timeout, not "signal: killed";
// a child that keeps its stdout open does not hold it longer.
func TestCommandKeyTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := CommandKey(ctx, "sleep 30 & sleep 30")
	if err == nil || !strings.Contains(err.Error(), "--api-key-command did not finish within 300ms") {
		t.Errorf("CommandKey(sleep) error = %v, want it to name the 300ms timeout", err)
	}
	if err != nil && strings.Contains(err.Error(), "killed") {
		t.Errorf("CommandKey(sleep) error = %v, want no 'killed'", err)
	}
	// Bounded by the timeout plus exec's WaitDelay (1 s), far below the
	// 30 s the children would hold stdout.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("CommandKey(sleep) returned after %v, want soon after the timeout", d)
	}
}
