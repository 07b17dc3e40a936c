package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ratelab/ratelab/internal/reports"
)

const compareUsage = `Usage: loadgen compare OLD.json NEW.json [--threshold 0.1] [--format table|json]

Compares two reports of the same scenario (report.json from --out, or the
output of run --format json), strategy by strategy, matched by name, and
prints each metric's old and new value and change: completed, attempts, 429s,
attempts per call, wall time and p99 end-to-end time.

A metric regressed when it got worse by more than the threshold, a fraction
of its old value; a metric that was zero regresses on any worsening, and a
strategy missing from the new report is a regression.

Flags (they may come before or after the files):
  --threshold F   relative change tolerated, e.g. 0.1 for 10 % (default 0.1)
  --format NAME   table (default) or json

Exit status: 0 no regression; 1 a regression; 2 a usage or input error.
`

// compareCmd implements loadgen compare.
func compareCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), compareUsage) }
	threshold := fs.Float64("threshold", 0.1, "relative change tolerated")
	format := fs.String("format", "table", "table or json")
	files, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	if len(files) != 2 {
		fmt.Fprint(stderr, compareUsage)
		return usageError("compare: want OLD.json and NEW.json, got %d files", len(files))
	}
	if *format != "table" && *format != "json" {
		return usageError("compare: --format: unknown format %q (want table or json)", *format)
	}
	old, err := readReport(files[0])
	if err != nil {
		return err
	}
	cur, err := readReport(files[1])
	if err != nil {
		return err
	}
	c, err := reports.Compare(old, cur, *threshold)
	if err != nil {
		return usageError("compare: %s", strings.TrimPrefix(err.Error(), "reports: compare: "))
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return err
		}
	} else if err := c.WriteTable(stdout); err != nil {
		return err
	}
	if c.Regressed() {
		return &exitError{code: exitFailed, err: fmt.Errorf("compare: %s regressed beyond the threshold of %g", files[1], *threshold)}
	}
	return nil
}

// readReport reads a report written by loadgen run.
func readReport(path string) (reports.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return reports.Report{}, &exitError{code: exitUsage, err: fmt.Errorf("compare: %w", err)}
	}
	defer f.Close()
	r, err := reports.ReadJSON(f)
	if err != nil {
		return reports.Report{}, &exitError{code: exitUsage, err: fmt.Errorf("compare: %s: %s", path, strings.TrimPrefix(err.Error(), "reports: "))}
	}
	return r, nil
}
