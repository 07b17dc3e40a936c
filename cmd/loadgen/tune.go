package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/internal/reports"
)

const tuneUsage = `Usage: loadgen tune FILE [flags]

Runs every row of the scenario FILE, as loadgen run does (a row with a sweep,
n: {sweep: "5..50 step 5"}, is one row per value), prints the table and then
the best row by the objective among the rows that completed every item with
at most --max-429s 429s, with its margin to the runner-up. Ties go to fewer
429s, then fewer attempts, then the shorter wall time, then the earlier row.
Expectations are not checked: tune explores.

Flags (they may come before or after FILE):
  --objective NAME  what to minimise: wall (wall_seconds, default), attempts
                    (HTTP attempts) or cost (input + output tokens billed)
  --max-429s N      leave out rows with more than N 429s (default -1: no limit)
  --format NAME     table (default) or json (the report, with "tune": {best,
                    value, next, next_value, margin, excluded, ...})
  --out DIR         also write DIR/report.json, results.jsonl, report.md and
                    report.html, as loadgen run does
  --only NAMES      run only these rows (as loadgen run's --only)
  --virtual         run in simulated time, as loadgen run --virtual does: a
                    sweep of many rows takes seconds
  --loopback        serve the embedded mock on a loopback TCP port, as
                    loadgen run --loopback does

Exit status: 0 a row was recommended; 1 no row qualified; 2 a usage or input
error; 130 interrupted.
`

// tuneCmd implements loadgen tune.
func tuneCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), tuneUsage) }
	objective := fs.String("objective", "wall", "what to minimise: wall, attempts or cost")
	max429s := fs.Int64("max-429s", -1, "leave out rows with more 429s (-1: no limit)")
	format := fs.String("format", "table", "table or json")
	out := fs.String("out", "", "directory for report.json, results.jsonl, report.md and report.html")
	var only stringsFlag
	fs.Var(&only, "only", "row names to run (comma-separated; repeatable)")
	virtual := fs.Bool("virtual", false, "run in simulated time")
	loopback := fs.Bool("loopback", false, "serve the embedded mock on a loopback TCP port")
	files, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	switch {
	case len(files) != 1:
		fmt.Fprint(stderr, tuneUsage)
		return usageError("tune: want exactly one scenario file, got %d", len(files))
	case loadgen.Objectives[*objective].Of == nil:
		return usageError("tune: --objective: want one of %s, got %q", strings.Join(loadgen.ObjectiveNames(), ", "), *objective)
	case *max429s < -1:
		return usageError("tune: --max-429s: want -1 (no limit) or more, got %d", *max429s)
	case *format != "table" && *format != "json":
		return usageError("tune: --format: want table or json, got %q", *format)
	}
	s, err := loadgen.Load(files[0])
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	opts := loadgen.Options{Getenv: os.Getenv, CommandOut: *out, CommandLog: stderr, Virtual: *virtual}
	if err := setLoopback(&opts, *loopback, "tune"); err != nil {
		return err
	}
	if opts.Only, err = s.ResolveOnly(only); err != nil {
		return usageError("tune: --only: %v", err)
	}
	if *virtual {
		if err := s.CheckVirtual(opts.Only); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("tune: --virtual:\n%w", err)}
		}
		defer simulatedGC()()
	}
	opts.Progress = progressTo(stderr)
	if *out != "" {
		results, err := createResults(*out)
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("tune: --out: %w", err)}
		}
		defer results.Close()
		opts.Results = results
	}
	rep, runErr := loadgen.Run(ctx, s, opts)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	tune, err := loadgen.Tune(rep, *objective, *max429s)
	if err != nil {
		return err
	}
	rep.Tune = &tune
	if *format == "json" {
		err = reports.JSON(stdout, tableReport(rep))
	} else if err = reports.Table(stdout, tableReport(rep)); err == nil {
		err = loadgen.WriteTune(stdout, rep)
	}
	if err != nil {
		return err
	}
	if *out != "" {
		if err := writeReports(*out, rep); err != nil {
			return err
		}
	}
	switch {
	case runErr != nil:
		return &exitError{code: exitInterrupted, err: errors.New("interrupted: the rows that finished were compared")}
	case tune.Best == "":
		return &exitError{code: exitFailed, err: errors.New("tune: no row completed every item within the constraint")}
	}
	return nil
}

// createResults creates DIR/results.jsonl, and DIR if need be.
func createResults(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.Create(dir + string(os.PathSeparator) + "results.jsonl")
}
