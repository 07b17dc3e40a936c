package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ratelab/ratelab/calibrate"
	"github.com/ratelab/ratelab/internal/record"
)

const calibrateUsage = `Usage: loadgen calibrate FILE... [-o profile.yaml]

Fits a mock configuration (the server: schema of mockllm --config and of a
scenario's server: block) to recordings written by loadgen run --record:
the concurrency cap, requests and tokens per minute and the bucket's burst,
the retry-after policy, time to first token, per-token latency and jitter,
the output-length distribution and the 5xx rates. Prints each value with its
evidence and uncertainty, and what the recordings could not determine.

Flags:
  -o FILE   write the profile to FILE (loadgen run --profile FILE reads
            it); without it the profile goes to stdout and the report to
            stderr

See docs/calibrate.md.
`

// calibrateCmd implements loadgen calibrate.
func calibrateCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), calibrateUsage) }
	out := fs.String("o", "", "write the profile to FILE")
	files, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	if len(files) == 0 {
		fmt.Fprint(stderr, calibrateUsage)
		return usageError("calibrate: want at least one recording")
	}
	var recs []*record.File
	for _, path := range files {
		f, err := record.Read(path)
		if err != nil {
			return usageError("calibrate: %v", err)
		}
		for _, w := range f.Warnings {
			fmt.Fprintln(stderr, "warning:", w)
		}
		recs = append(recs, f)
	}
	fit, err := calibrate.Run(recs)
	if err != nil {
		return usageError("%v", err)
	}
	report := stdout
	if *out == "" {
		report = stderr
	}
	for _, l := range fit.Lines {
		fmt.Fprintln(report, l)
	}
	if *out == "" {
		_, err := io.WriteString(stdout, fit.YAML())
		return err
	}
	if err := os.WriteFile(*out, []byte(fit.YAML()), 0o644); err != nil {
		return usageError("calibrate: -o: %v", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}
