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
	"github.com/ratelab/ratelab/mock"
)

const execUsage = `Usage: loadgen exec [flags] -- CMD [ARGS...]

Runs your own program against a fresh embedded mock and prints its row, as
measured by the server: completed calls, attempts, 429s, retries that came
before their retry-after, peak concurrency, time from the first request to
the last response. CMD runs in the current directory (never through a shell)
with ANTHROPIC_BASE_URL, OPENAI_BASE_URL, ANTHROPIC_API_KEY, OPENAI_API_KEY,
RATELAB_ITEMS_FILE (the items, in loadgen batch's input format),
RATELAB_ITEMS, RATELAB_PROVIDER, RATELAB_MODEL and RATELAB_MAX_TOKENS set.

  loadgen exec --max-concurrent 20 --retry-after 1s -- python3 my_batch.py

Flags:
  --config FILE     a scenario file: its items, request and server; its first
                    kind: command row gives the name, env, timeout and expect
  --items N         the number of items (default: the file's, else 200)
  --format NAME     table (default), json, csv or markdown
  --out DIR         keep the items file, stdout and stderr there, with
                    report.json, report.md and report.html
  mock flags, as mockllm's, over the file's server block:
  --max-concurrent N  --rpm N  --itpm N  --otpm N  --tpm N
  --per-token-latency DUR  --ttft DUR  --retry-after DUR  --api-key K
  --admin-token T  --metrics-token T  --seed N  --max-header-bytes N
  --decode-budget BYTES

Unless the row expects otherwise, CMD must exit 0 and make a request.
Ctrl-C stops CMD's process group and prints what was measured.

Exit status: 0 every expectation held; 1 one failed; 2 a usage or input
error (CMD not found or not executable); 130 interrupted.
`

// execCmd implements loadgen exec.
func execCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	config := fs.String("config", "", "scenario file")
	items := fs.Int("items", 0, "number of items")
	format := fs.String("format", "table", "output format")
	out := fs.String("out", "", "output directory")
	mockFlags := mock.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, execUsage)
			return nil
		}
		fmt.Fprint(stderr, execUsage)
		return &exitError{code: exitUsage}
	}
	argv := fs.Args()
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		fmt.Fprint(stderr, execUsage)
		return usageError("exec: no command: give it after --, e.g. loadgen exec -- python3 my_batch.py")
	}
	if *items < 0 {
		return usageError("exec: --items must be positive, got %d", *items)
	}
	render, err := reports.Format(*format)
	if err != nil {
		return usageError("exec: --format: %v", strings.TrimPrefix(err.Error(), "reports: "))
	}
	var base *loadgen.Scenario
	if *config != "" {
		if base, err = loadgen.LoadBatchConfig(*config); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	s, err := loadgen.ExecScenario(base, argv, wd, *items, mockFlags.Apply)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("exec: --out: %w", err)}
		}
	}
	rep, runErr := loadgen.Run(ctx, s, loadgen.Options{CommandOut: *out, CommandLog: stderr})
	if runErr != nil && len(rep.Results) == 0 {
		return runErr
	}
	if err := render(stdout, tableReport(rep)); err != nil {
		return err
	}
	if *out != "" {
		if err := writeReports(*out, rep); err != nil {
			return err
		}
	}
	return outcome(rep, runErr, *format, stderr, "interrupted: the row is what was measured until then")
}
