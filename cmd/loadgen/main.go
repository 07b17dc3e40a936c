// Command loadgen runs ratelab scenarios: client strategies side by side
// against the embedded mock (or a live target), with their expectations.
//
//	loadgen run scenarios/20-concurrent.yaml
//	loadgen validate scenarios/*.yaml
//	loadgen compare old/report.json new/report.json
//	loadgen batch --input items.jsonl --output results.jsonl
//	loadgen exec --max-concurrent 20 -- python3 my_batch.py
//
// Exit codes: 0 success; 1 an expectation failed or compare found a
// regression; 2 a usage or input error; 130 interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ratelab/ratelab/internal/buildinfo"
	"github.com/ratelab/ratelab/internal/redislog"
	"github.com/ratelab/ratelab/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(report(err, os.Stderr))
}

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1 // an expectation failed, or compare found a regression
	exitUsage       = 2 // bad flags, arguments or input files
	exitQuota       = 3 // batch: the key's quota or spend cap is spent
	exitInterrupted = 130
)

// exitError carries the process's exit status with the error that caused it.
type exitError struct {
	code int
	err  error // nil when the message was already printed
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad command line: exit 2.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// report prints err (unless already printed) and returns the exit status.
func report(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	code := exitUsage
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	if errors.Is(err, context.Canceled) {
		code = exitInterrupted
	}
	// The loadgen package's errors carry its name already, at the start or
	// where one wraps another; say it once.
	msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "loadgen: "), ": loadgen: ", ": ")
	fmt.Fprintln(stderr, "loadgen:", msg)
	return code
}

const usage = `loadgen runs ratelab scenarios: client strategies for fanning out LLM calls,
side by side against a mock provider that enforces rate limits.

Usage:
  loadgen run FILE [flags]           run every strategy of a scenario and print a table
  loadgen validate FILE...           check scenario files without running them
  loadgen compare OLD.json NEW.json  compare two reports; fail on a regression
  loadgen tune FILE [flags]          run a scenario's rows (and sweeps) and
                                     recommend the best by wall, attempts or cost
  loadgen batch --input ITEMS.jsonl --output RESULTS.jsonl [flags]
                                     run a resumable batch of real calls
  loadgen calibrate FILE... [-o profile.yaml]
                                     fit a mock configuration to recordings
                                     (run --record); run --profile uses it
  loadgen exec [flags] -- CMD [ARGS]
                                     run your own program against the mock
                                     and print its row, measured server-side
  loadgen --version                  print the version and VCS revision
  loadgen help [COMMAND]             show a command's help
  loadgen help scenario              the scenario file reference: every key,
                                     its type and default; strategy kinds and
                                     their parameters; the metrics of expect:

Every command takes --log-format text|json: the format of the log records
on stderr (a shared limit's Redis lost or back), text (key=value) by default.

Exit status: 0 ok; 1 an expectation failed or compare found a regression;
2 a usage or input error; 130 interrupted.

Run 'loadgen help COMMAND' or 'loadgen COMMAND --help' for a command's flags.
`

// run is loadgen's main: it parses args and runs one subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	args, logFormat, err := cutLogFormat(args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: exitUsage}
	}
	defer logTo(logFormat, stderr)()
	// Shared limits talk to Redis: go-redis's own lines (a failed dial, dozens
	// a second while Redis is down) become one slog record per outage.
	redislog.Install(nil)
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runCmd(ctx, rest, stdout, stderr)
	case "validate":
		return validateCmd(rest, stdout, stderr)
	case "compare":
		return compareCmd(rest, stdout, stderr)
	case "batch":
		return batchCmd(ctx, rest, stdout, stderr)
	case "exec":
		return execCmd(ctx, rest, stdout, stderr)
	case "tune":
		return tuneCmd(ctx, rest, stdout, stderr)
	case "calibrate":
		return calibrateCmd(rest, stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, buildinfo.String("loadgen"))
		return nil
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && cmd == "help" {
			switch rest[0] {
			case "run":
				return runCmd(ctx, []string{"--help"}, stdout, stderr)
			case "validate":
				return validateCmd([]string{"--help"}, stdout, stderr)
			case "compare":
				return compareCmd([]string{"--help"}, stdout, stderr)
			case "batch":
				return batchCmd(ctx, []string{"--help"}, stdout, stderr)
			case "exec":
				return execCmd(ctx, []string{"--help"}, stdout, stderr)
			case "tune":
				return tuneCmd(ctx, []string{"--help"}, stdout, stderr)
			case "calibrate":
				return calibrateCmd([]string{"--help"}, stdout, stderr)
			case "scenario", "scenarios", "schema":
				return loadgen.WriteSchema(stdout)
			}
			return usageError("help: unknown topic %q (want run, validate, compare, batch, tune or scenario)", rest[0])
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError("unknown command %q (want run, validate, compare, batch, tune or help)", cmd)
}
