// Package proc runs a user's program as a child process the way loadgen's
// command rows need it.
//
// The program's argv is executed directly (never through a shell), in its own
// process group, with variables added to the environment, bounded by a
// timeout, and stopped together with everything it started when the timeout
// passes, the caller's context ends, or it exits. Its stdout and stderr go to
// files and their last lines are kept for error messages.
//
// Only Unix is supported: process groups are what let a timeout stop a
// Python script together with the workers it forked.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout is a Spec's timeout when it sets none.
const DefaultTimeout = 10 * time.Minute

// DefaultGrace is how long a stopped process group has between SIGTERM and
// SIGKILL.
const DefaultGrace = 2 * time.Second

// TailLines is how many of the last lines of stdout and stderr a Result
// keeps.
const TailLines = 20

// Spec is one program to run.
type Spec struct {
	// Argv is the program and its arguments. Argv[0] is looked up in PATH
	// unless it contains a slash; a relative path is relative to Dir.
	Argv []string
	// Dir is the working directory; empty is the current one.
	Dir string
	// Env is added to the environment, KEY=VALUE each; a later entry
	// replaces an earlier one and the inherited value.
	Env []string
	// Timeout bounds the run; zero is DefaultTimeout. When it passes, the
	// process group gets SIGTERM, then SIGKILL after Grace.
	Timeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL; zero is DefaultGrace.
	Grace time.Duration
	// Stdout and Stderr, when set, receive the program's output as it comes.
	Stdout, Stderr io.Writer
}

// Result is how a run ended.
type Result struct {
	Start, End time.Time
	// ExitCode is the program's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended it, if one did.
	Signal string
	// TimedOut is set when the Timeout stopped it; Interrupted when the
	// caller's context did.
	TimedOut    bool
	Interrupted bool
	// StdoutTail and StderrTail are the last TailLines lines of each.
	StdoutTail, StderrTail []string
}

// OK reports whether the program ran to the end and exited 0.
func (r Result) OK() bool { return r.ExitCode == 0 && !r.TimedOut && !r.Interrupted }

// Describe says how the run ended: "exited 0", "exited 3", "killed by
// signal: killed", "timed out after 5m0s (process group killed)".
func (r Result) Describe(timeout time.Duration) string {
	switch {
	case r.TimedOut:
		return fmt.Sprintf("timed out after %s (process group stopped)", timeout)
	case r.Interrupted:
		return "interrupted (process group stopped)"
	case r.Signal != "":
		return "killed by signal: " + r.Signal
	}
	return fmt.Sprintf("exited %d", r.ExitCode)
}

// ErrNotFound and ErrNotExecutable are the errors of Resolve.
var (
	ErrNotFound      = errors.New("not found")
	ErrNotExecutable = errors.New("not executable")
)

// Resolve returns the path Argv[0] runs as from dir, or an error wrapping
// ErrNotFound or ErrNotExecutable. It is what a run checks first, exported
// so that a scenario can be checked without running anything.
func Resolve(argv0, dir string) (string, error) {
	if argv0 == "" {
		return "", fmt.Errorf("proc: empty command: %w", ErrNotFound)
	}
	if !strings.Contains(argv0, "/") {
		p, err := exec.LookPath(argv0)
		if err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				return "", fmt.Errorf("%s: %w in PATH", argv0, ErrNotFound)
			}
			return "", fmt.Errorf("%s: %w", argv0, err)
		}
		return p, nil
	}
	p := argv0
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: %w", p, ErrNotFound)
	case err != nil:
		return "", fmt.Errorf("%s: %w", p, err)
	case fi.IsDir():
		return "", fmt.Errorf("%s: is a directory: %w", p, ErrNotExecutable)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s: %w (no execute permission; chmod +x it, or name its interpreter first)", p, ErrNotExecutable)
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p, nil
}

func tee(t *tail, w io.Writer) io.Writer {
	if w == nil {
		return t
	}
	return io.MultiWriter(t, w)
}

// tail keeps the last n lines written to it, each cut to maxLine bytes.
type tail struct {
	mu      sync.Mutex
	n       int
	ring    []string
	partial []byte
}

const maxLine = 512

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			t.partial = appendCapped(t.partial, rest)
			break
		}
		t.partial = appendCapped(t.partial, rest[:i])
		t.push(string(t.partial))
		t.partial = t.partial[:0]
		rest = rest[i+1:]
	}
	return len(p), nil
}

func appendCapped(b, p []byte) []byte {
	if room := maxLine - len(b); room < len(p) {
		p = p[:max(0, room)]
	}
	return append(b, p...)
}

func (t *tail) push(line string) {
	if len(t.ring) == t.n {
		copy(t.ring, t.ring[1:])
		t.ring = t.ring[:t.n-1]
	}
	t.ring = append(t.ring, strings.TrimRight(line, "\r"))
}

func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.ring...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
		if len(out) > t.n {
			out = out[1:]
		}
	}
	return out
}
