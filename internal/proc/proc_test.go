//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "run.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755)
	plain := filepath.Join(dir, "plain.sh")
	os.WriteFile(plain, []byte("echo hi\n"), 0o644)
	for _, tc := range []struct {
		argv0, dir string
		want       error
	}{
		{"sh", "", nil},
		{"./run.sh", dir, nil},
		{script, "", nil},
		{"no-such-program-ratelab", "", ErrNotFound},
		{"./missing.sh", dir, ErrNotFound},
		{"./plain.sh", dir, ErrNotExecutable},
		{".", dir, nil}, // no slash: looked up in PATH, not found there
		{"./", dir, ErrNotExecutable},
	} {
		_, err := Resolve(tc.argv0, tc.dir)
		if tc.argv0 == "." {
			if err == nil {
				t.Errorf("Resolve(%q) = nil error, want one", tc.argv0)
			}
			continue
		}
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Resolve(%q, %q) error = %v, want %v", tc.argv0, tc.dir, err, tc.want)
		}
	}
}

func TestRunExitEnvDir(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	res, err := Run(t.Context(), Spec{
		Argv:   []string{"sh", "-c", `echo "$RATELAB_X $(pwd)"; echo oops >&2; exit 3`},
		Dir:    dir,
		Env:    []string{"RATELAB_X=1", "RATELAB_X=2"},
		Stdout: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got, want := out.String(), "2 "+real+"\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if res.ExitCode != 3 || res.OK() || res.Describe(0) != "exited 3" {
		t.Errorf("exit code %d, ok %v, %q; want 3, false, exited 3", res.ExitCode, res.OK(), res.Describe(0))
	}
	if fmt.Sprint(res.StderrTail) != "[oops]" {
		t.Errorf("stderr tail = %q, want [oops]", res.StderrTail)
	}
}

func TestRunNotFound(t *testing.T) {
	_, err := Run(t.Context(), Spec{Argv: []string{"./nope"}, Dir: t.TempDir()})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Run(./nope) error = %v, want ErrNotFound", err)
	}
}

// alive reports whether pid is a live process (a zombie is dead).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// grandchildSpec runs a shell that runs extra, forks a sleeping child,
// writes the child's pid to pidFile and waits for it.
func grandchildSpec(pidFile string, timeout time.Duration, extra string) Spec {
	return Spec{
		Argv:    []string{"sh", "-c", extra + `sleep 300 & echo $! > "$1"; wait`, "sh", pidFile},
		Timeout: timeout,
		Grace:   200 * time.Millisecond,
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitDead polls until pid is gone: the kill is asynchronous.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	for range 200 {
		if !alive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("process %d still alive", pid)
	syscall.Kill(pid, syscall.SIGKILL)
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The shell and its child ignore SIGTERM, so the grace period ends in
	// SIGKILL.
	res, err := Run(t.Context(), grandchildSpec(pidFile, 300*time.Millisecond, "trap '' TERM; "))
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.OK() || res.Signal == "" {
		t.Errorf("result %+v, want timed out by a signal", res)
	}
	if !strings.HasPrefix(res.Describe(300*time.Millisecond), "timed out after 300ms") {
		t.Errorf("Describe = %q", res.Describe(300*time.Millisecond))
	}
	waitDead(t, readPid(t, pidFile))
}

func TestRunInterruptStopsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for range 500 {
			if _, err := os.Stat(pidFile); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	res, err := Run(ctx, grandchildSpec(pidFile, time.Minute, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.TimedOut {
		t.Errorf("result %+v, want interrupted", res)
	}
	waitDead(t, readPid(t, pidFile))
}

// TestRunLeavesNothing: a program that exits leaving a background process
// in its group does not leave it running.
func TestRunLeavesNothing(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	res, err := Run(t.Context(), Spec{
		Argv:  []string{"sh", "-c", `sleep 300 >/dev/null 2>&1 & echo $! > "$1"`, "sh", pidFile},
		Grace: 100 * time.Millisecond,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	waitDead(t, readPid(t, pidFile))
}

func TestTail(t *testing.T) {
	tl := newTail(3)
	fmt.Fprint(tl, "a\nb\r\nc\nd")
	fmt.Fprint(tl, "e\n"+strings.Repeat("x", 2*maxLine))
	got := tl.lines()
	if len(got) != 3 || got[0] != "c" || got[1] != "de" || len(got[2]) != maxLine {
		t.Errorf("lines = %q", got)
	}
}
