package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/sharedlimit"
)

const runUsage = `Usage: loadgen run FILE [flags]

Runs every strategy of the scenario FILE in turn, each against a fresh server,
and prints one row per strategy. Without a target in the file the server is
the embedded mock, configured by the file's server key; with target: {url,
provider, api_key_env} it is that URL, with the key read from the named
environment variable only (it is never printed).

Flags (they may come before or after FILE):
  --format NAME     output format: table (default), json, csv or markdown
  --out DIR         also write DIR/report.json (with timelines and histograms),
                    DIR/results.jsonl (one line per item, written as items
                    finish), DIR/report.md and DIR/report.html; command rows
                    keep their items file, stdout and stderr there too
  --only NAMES      run only these strategies: comma-separated names, or one
                    name that itself contains commas; repeatable
  --timeline DUR    timeline resolution (default: the file's timeline, else
                    100ms); at least 1ms, and coarser for a run that would
                    need more than 2000 points (a note on stderr says so)
  --cpuprofile FILE write a CPU profile of the run (go tool pprof reads it)
  --memprofile FILE write a heap profile, taken when the live heap was largest
  --virtual         run in simulated time: the same strategies, retry policy
                    and embedded mock on a simulated clock, served in process,
                    so minutes of traffic take a moment; every output is
                    marked simulated. Not for a target, command rows or
                    shared limits (an error names the file, line and key)
  --record FILE     write one JSON line per HTTP attempt to FILE (the
                    format of docs/calibrate.md, which loadgen calibrate reads)
  --profile FILE    run against the embedded mock configured by FILE (a
                    profile loadgen calibrate wrote, or any mockllm
                    --config file) instead of the file's server or target:
                    with --virtual, a prediction of the provider FILE fits;
                    auto: the profile loadgen calibrate --save kept for the
                    file's provider and key
  --loopback        serve the embedded mock on a loopback TCP port, so that
                    the kernel and both sides of net/http are in what is
                    measured; by default rows reach it in memory, the same
                    requests and responses with no socket (command rows
                    always use a port)

While running, progress goes to stderr: on a terminal a live line (strategy
3 of 8, done/total, in flight, 429s, elapsed, ETA); otherwise, as in a CI
log, the same as a plain line every 10 s. Ctrl-C stops the run: what
finished is printed, marked incomplete, and the interrupted strategy's
expectations are not checked against its partial figures.

Exit status: 0 every expectation held; 1 an expectation failed (each failure
is listed on stderr with expected and actual); 2 a usage or input error;
130 interrupted.
`

// runCmd implements loadgen run.
func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), runUsage) }
	format := fs.String("format", "table", "output format: table, json, csv or markdown")
	out := fs.String("out", "", "directory for report.json, results.jsonl, report.md and report.html")
	var only stringsFlag
	fs.Var(&only, "only", "strategy names to run (comma-separated; repeatable)")
	timeline := fs.Duration("timeline", 0, "timeline resolution")
	var prof profiles
	prof.flags(fs)
	virtual := fs.Bool("virtual", false, "run in simulated time")
	loopback := fs.Bool("loopback", false, "serve the embedded mock on a loopback TCP port")
	recordTo := fs.String("record", "", "write one JSON line per HTTP attempt to FILE")
	profile := fs.String("profile", "", "run against the embedded mock configured by FILE")
	files, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	if len(files) != 1 {
		fmt.Fprint(stderr, runUsage)
		return usageError("run: want exactly one scenario file, got %d", len(files))
	}
	render, err := reports.Format(*format)
	if err != nil {
		return usageError("run: --format: %v", strings.TrimPrefix(err.Error(), "reports: "))
	}
	if *timeline < 0 {
		return usageError("run: --timeline must not be negative, got %s", *timeline)
	}
	s, err := loadgen.Load(files[0])
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := useProfile(s, *profile, stderr); err != nil {
		return err
	}
	opts := loadgen.Options{Timeline: *timeline, Getenv: os.Getenv, CommandOut: *out, CommandLog: stderr, Virtual: *virtual}
	if err := setLoopback(&opts, *loopback, "run"); err != nil {
		return err
	}
	if opts.Only, err = s.ResolveOnly(only); err != nil {
		return usageError("run: --only: %v", err)
	}
	if *virtual {
		if err := s.CheckVirtual(opts.Only); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("run: --virtual:\n%w", err)}
		}
		defer simulatedGC()()
	}
	opts.Progress = progressTo(stderr)
	closeRecord, err := openRecord(&opts, *recordTo, "loadgen run")
	if err != nil {
		return err
	}
	defer closeRecord()
	var results *os.File
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("run: --out: %w", err)}
		}
		results, err = os.Create(filepath.Join(*out, "results.jsonl"))
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("run: --out: %w", err)}
		}
		defer results.Close()
		opts.Results = results
	}

	if err := prof.start(); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("run: %w", err)}
	}
	rep, runErr := loadgen.Run(ctx, s, opts)
	if err := prof.finish(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if runErr != nil && len(rep.Results) == 0 {
		if errors.Is(runErr, context.Canceled) {
			return &exitError{code: exitInterrupted, err: errors.New("interrupted before any strategy finished")}
		}
		if errors.Is(runErr, sharedlimit.ErrUnreachable) {
			return &exitError{code: exitUsage, err: runErr}
		}
		return runErr
	}
	if err := render(stdout, tableReport(rep)); err != nil {
		return err
	}
	for _, res := range rep.Results {
		if tl := res.Timeline; tl != nil && tl.RequestedResolutionSeconds > 0 {
			fmt.Fprintf(stderr, "note: %s: timeline resolution %s asked, %s used (the finest is %s and a timeline keeps at most %d points; this run took %.3g s)\n",
				res.Name, seconds(tl.RequestedResolutionSeconds), seconds(tl.ResolutionSeconds), engine.MinResolution, engine.MaxTimelinePoints, res.WallSeconds)
		}
	}
	if *out != "" {
		if err := results.Close(); err != nil {
			return fmt.Errorf("run: %w", err)
		}
		if err := writeReports(*out, rep); err != nil {
			return err
		}
	}
	return outcome(rep, runErr, *format, stderr, "interrupted: the report is incomplete")
}

// setLoopback applies --loopback: the embedded mock on a loopback port
// rather than in memory. A simulated run has no port to serve on.
func setLoopback(opts *loadgen.Options, loopback bool, cmd string) error {
	if !loopback {
		return nil
	}
	if opts.Virtual {
		return usageError("%s: --loopback and --virtual: choose one (a simulated run reaches the mock in memory)", cmd)
	}
	opts.Listen = loadgen.ListenTCP
	return nil
}

// outcome turns a finished run into the command's exit: 130 when it was
// interrupted (saying so with interrupted), 1 when an expectation failed,
// else runErr.
func outcome(rep reports.Report, runErr error, format string, stderr io.Writer, interrupted string) error {
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			return &exitError{code: exitInterrupted, err: errors.New(interrupted)}
		}
		return runErr
	}
	if failures := loadgen.Failures(rep); len(failures) > 0 {
		// The table and Markdown list failures under the rows; machine
		// formats keep stdout clean, so list them on stderr.
		if format != "table" && format != "markdown" {
			for _, f := range failures {
				fmt.Fprintf(stderr, "FAIL %s\n", f)
			}
		}
		return &exitError{code: exitFailed, err: fmt.Errorf("%d expectation(s) failed", len(failures))}
	}
	return nil
}

// seconds formats a number of seconds as a duration (1ns, 12.8ms, 3s).
func seconds(s float64) string { return time.Duration(math.Round(s * 1e9)).String() }

// tableReport drops what is only worth writing to files (timelines) from the
// printed report; report.json in --out keeps them.
func tableReport(r reports.Report) reports.Report {
	out := r
	out.Results = make([]reports.Result, len(r.Results))
	for i, res := range r.Results {
		res.Timeline = nil
		out.Results[i] = res
	}
	return out
}

// writeReports writes report.json, report.md and report.html into dir.
func writeReports(dir string, r reports.Report) error {
	for _, f := range reports.Files() {
		path := filepath.Join(dir, f.Name)
		file, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("run: --out: %w", err)
		}
		err = f.Render(file, r)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("run: writing %s: %w", path, err)
		}
	}
	return nil
}

// stringsFlag collects every value of a repeatable flag.
type stringsFlag []string

func (f *stringsFlag) String() string     { return strings.Join(*f, ",") }
func (f *stringsFlag) Set(v string) error { *f = append(*f, v); return nil }
