//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Run runs spec to its end and returns how it ended. Its error is for a
// program that could not start (not found, not executable, a bad Dir);
// a program that exits non-zero, times out or is interrupted is a Result,
// not an error. When ctx ends, the process group is stopped and Run returns
// once it has exited. After Run returns, no process of the group is left:
// whatever the program left running is killed.
func Run(ctx context.Context, spec Spec) (Result, error) {
	var res Result
	if len(spec.Argv) == 0 {
		return res, errors.New("proc: empty command")
	}
	path, err := Resolve(spec.Argv[0], spec.Dir)
	if err != nil {
		return res, err
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	grace := spec.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	outTail, errTail := newTail(TailLines), newTail(TailLines)
	cmd := &exec.Cmd{
		Path:        path,
		Args:        spec.Argv,
		Dir:         spec.Dir,
		Env:         append(os.Environ(), spec.Env...),
		Stdout:      tee(outTail, spec.Stdout),
		Stderr:      tee(errTail, spec.Stderr),
		SysProcAttr: sysProcAttr(),
		// Output pipes held open by a grandchild must not keep Wait
		// waiting once the program itself has exited.
		WaitDelay: grace,
	}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("%s: %w", spec.Argv[0], err)
	}
	res.Start = time.Now()
	pgid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var werr error
	select {
	case werr = <-waited:
	case <-timer.C:
		res.TimedOut = true
		werr = stopGroup(pgid, grace, waited)
	case <-ctx.Done():
		res.Interrupted = true
		werr = stopGroup(pgid, grace, waited)
	}
	res.End = time.Now()
	// Whatever the program left behind in its group goes with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	res.ExitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal().String()
	}
	res.StdoutTail, res.StderrTail = outTail.lines(), errTail.lines()
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("%s: %w", spec.Argv[0], werr)
	}
	return res, nil
}

// stopGroup sends SIGTERM to the process group, then SIGKILL after grace if
// the program has not exited, and returns Wait's error.
func stopGroup(pgid int, grace time.Duration, waited <-chan error) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-waited:
		return err
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return <-waited
	}
}
