package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/internal/batchrun"
	"github.com/ratelab/ratelab/internal/loadgen"
)

const batchUsage = `Usage: loadgen batch --input ITEMS.jsonl --output RESULTS.jsonl [flags]
       loadgen batch enqueue|work|status|collect …   one batch over many
                      machines through Redis (loadgen batch work --help)

Runs every item of ITEMS.jsonl against a provider through a rate-limiting
strategy and appends one line per item to RESULTS.jsonl the moment it
finishes. Rerunning the same command resumes: ids already in the output are
skipped, so after any interruption (even kill -9) every input id ends up in
the output exactly once, with a success or a terminal error.

Input, one JSON object a line (blank lines are ignored):
  {"id": "t-1", "prompt": "…", "system": "…", "max_tokens": 50, "metadata": {…}}
  {"id": "t-2", "messages": [{"role": "user", "content": "…"}, …]}
  id is required and unique, and holds no control character (it is sent as
  the Idempotency-Key header); exactly one of prompt and messages; other keys
  are errors. Every line is checked before any call is made: a malformed
  line, a missing or wrong field or a duplicate id is reported with its line
  number and nothing runs (exit 2), unless --skip-invalid.

Output, one JSON object a line:
  {"index": LINE-1, "id", "text", "stop_reason", "usage": {"input_tokens",
   "output_tokens"}, "attempts", "error": {"status", "type", "message"},
   "timings": {…}, "metadata"}
  error is absent on success. A call still throttled (429, 529, 503) once
  its retries are spent is re-queued, never recorded, and taken again after
  the server's retry-after; so is a call whose connection failed before any
  response (refused, reset, unreachable), after a backoff of 0.5 s doubling
  to 8 s. A permanent failure (400, 401, 403, 413, a schema validation
  error, a TLS failure, or a server error once retries are spent) is
  recorded and not retried.

  When the endpoint stops answering (3 connection failures in a row) the
  batch pauses: a line on stderr says so, one probe call goes per backoff
  period (0.5 s doubling to 8 s), and another line says when it answers
  again and the batch resumes.
  --max-outage DUR        stop the batch (exit 1, rerun to resume) when the
                          endpoint has not answered for DUR (default 15m;
                          0 waits as long as it takes)

Where the calls go:
  --provider NAME         anthropic (default), openai, openai-responses,
                          azure-openai, bedrock, gemini, vertex or
                          vertex-anthropic
  --model NAME            the model (default claude-haiku-4-5, gpt-5.4-mini)
  A line may name its own provider and model in its metadata:
  "metadata": {"provider": "gemini", "model": "gemini-2.5-flash"}. Each
  provider's lines go to that provider's API (at --base-url or the embedded
  mock, else its production URL, with the key of its own variable:
  GEMINI_API_KEY, AZURE_OPENAI_API_KEY, …), through an instance of the
  strategy of its own, so one provider's 429s never slow another's:
  --provider-strategy NAME=SPEC  the strategy of provider NAME's lines
                          (repeatable; default: --strategy's kind, an
                          instance of its own)
  --max-tokens N          max_tokens of lines that set none (default 1024)
  --stream                stream responses (SSE)
  --system-cache TTL      anthropic: cache each line's system prompt (5m or 1h,
                          cache_control on the system block): later calls
                          read it at a tenth of the input price, and current
                          models leave cached input out of the input-tokens
                          limit
  --base-url URL          the provider's endpoint (default: its production URL)
  --record FILE           write one JSON line per HTTP attempt to FILE (the
                          format of docs/calibrate.md; loadgen calibrate reads it)
  --target mock           run against the embedded mock, to try a batch out;
                          its configuration is the --config file's server key
  --api-key-command CMD   run CMD with sh -c and use its stdout, trimmed, as
                          the API key (a secret manager's CLI)
  The key is otherwise read from ANTHROPIC_API_KEY or OPENAI_API_KEY (or the
  variable the config's target.api_key_env names). It is never taken as a
  flag value, never printed, and redacted from every message and result.
  Without a key and without --base-url, batch refuses to start.

How fast:
  --strategy SPEC         KIND or KIND:KEY=VALUE,… with a scenario strategy's
                          keys: adaptive (default), semaphore:n=20,
                          token-bucket:rpm=50,tpm=40000, aimd:max=64, …
                          (loadgen help scenario lists kinds and keys)
  --config FILE           a scenario file: request (provider, model,
                          max_tokens, stream, system_cache), target (url, provider,
                          api_key_env), server (for --target mock), workers,
                          seed and strategies; items and expect are ignored,
                          and flags override the file
  --only NAME             the config's strategy to use, when it has several
  --shared-redis URL      share the strategy's limits with every process
  --shared-key NAME       using the same NAME through the Redis at URL
                          (redis://HOST:PORT/DB): together they stay within
                          the limits (semaphore, token-first, token-bucket;
                          adaptive shares the limit it learns, one probe at
                          a time; the same as a strategy's shared: block in
                          --config, whose keys these flags override). Redis
                          unreachable at the start: exit 2; lost mid-run: a
                          warning, and this process's share of the limit
                          until it is back
  --shared-lease-ttl DUR  how long a killed process's slots stay taken
                          (default 60s; above a call's p99 latency)
  --shared-peers N        the processes sharing the limit: each takes 1/N of
                          it while Redis is lost
  --shared-op-timeout DUR bound on each Redis round trip (default 2s)
  --max-retries N         retries per call before an error is recorded
                          (default: the strategy's max_retries, 2); throttles
                          are re-queued whatever this says
  --workers N             items in progress at once (default 512)
  --state-file PATH       where adaptive saves its learned limit after a batch
                          and loads it before the next, keyed by provider,
                          base URL and a fingerprint of the key (never the
                          key); default: ratelab/adaptive.json in the user
                          cache directory (~/.cache on Linux, or
                          $XDG_CACHE_HOME), none with --target mock;
                          --state-file= keeps none

Checks and resuming:
  --schema FILE           JSON Schema the response text (parsed as JSON, a
                          ` + "```json" + ` fence allowed) must satisfy
  --max-invalid N         ask again up to N times after a response the schema
                          rejects, then record a validation_error (default 2)
  --retry-failed          make again the items whose recorded result is an
                          error (the output keeps one line per id: it is
                          rewritten without those lines first)
  --skip-invalid          skip invalid and duplicate input lines, listing them
  --grace DUR             on Ctrl-C or SIGTERM, stop taking items and let calls
                          in progress finish for up to DUR (default 30s)

Reporting:
  --format NAME           the summary printed at the end: text (default) or
                          json (every count, the run's latency percentiles
                          and the strategy's final state)
  Progress goes to stderr while it runs: a live line on a terminal (done/
  total, in flight, 429s, elapsed, ETA), else a plain line every 10 s.
  The summary gives the items completed, failed by kind, attempts, 429s,
  re-queues, tokens in and out, wall time and the strategy's final limit.

Exit status: 0 every item has a successful result; 1 some items failed (or
were skipped as invalid); 2 a usage or input error, nothing was run; 3 the
key's quota or spend cap is spent (an insufficient_quota or spend-limit
refusal, never retried): the batch stopped taking items, rerun the same
command once the quota resets to resume; 130 interrupted: the output is
incomplete, rerun the same command to resume.
`

// defaultStateFile is where adaptive's learned limits are kept between
// batches: one file per user, since its entries are keyed by provider, URL
// and key fingerprint.
func defaultStateFile() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "ratelab", "adaptive.json")
}

// batchCmd implements loadgen batch.
func batchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && queueCommands[args[0]] != nil {
		return queueCommands[args[0]](ctx, args[1:], stdout, stderr)
	}
	return batchMain(ctx, args, stdout, stderr, nil)
}

// batchMain is loadgen batch, and with q loadgen batch work (queue.go).
func batchMain(ctx context.Context, args []string, stdout, stderr io.Writer, q *workFlags) error {
	for _, a := range args {
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && (name == "api-key" || name == "key") {
			// Never echo the value: it would land in shell history and logs.
			return usageError("batch: an API key is never taken as a flag value: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or use --api-key-command")
		}
	}
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), batchUsage) }
	var opt batchrun.Options
	fs.StringVar(&opt.Input, "input", "", "input JSONL")
	fs.StringVar(&opt.Output, "output", "", "output JSONL")
	config := fs.String("config", "", "scenario-vocabulary config file")
	fs.StringVar(&opt.Strategy, "strategy", "", "strategy: KIND or KIND:KEY=VALUE,…")
	fs.StringVar(&opt.Only, "only", "", "the config's strategy to use")
	fs.StringVar(&opt.Shared.Redis, "shared-redis", "", "Redis URL holding the shared limits")
	fs.StringVar(&opt.Shared.Key, "shared-key", "", "the shared limit's name")
	fs.DurationVar(&opt.Shared.LeaseTTL, "shared-lease-ttl", 0, "how long a crashed process's slots stay taken")
	fs.IntVar(&opt.Shared.Peers, "shared-peers", 0, "processes sharing the limit")
	fs.DurationVar(&opt.Shared.OpTimeout, "shared-op-timeout", 0, "bound on each Redis round trip")
	fs.StringVar(&opt.Provider, "provider", "", "anthropic, azure-openai, bedrock, gemini, openai, openai-responses, vertex or vertex-anthropic")
	fs.Func("provider-strategy", "NAME=SPEC: the strategy of the lines naming provider NAME", func(v string) error {
		name, spec, ok := strings.Cut(v, "=")
		if !ok || name == "" || spec == "" {
			return fmt.Errorf("want NAME=SPEC (e.g. gemini=adaptive or bedrock=semaphore:n=10), got %q", v)
		}
		if _, dup := opt.ProviderStrategies[name]; dup {
			return fmt.Errorf("%s given twice", name)
		}
		if opt.ProviderStrategies == nil {
			opt.ProviderStrategies = map[string]string{}
		}
		opt.ProviderStrategies[name] = spec
		return nil
	})
	fs.StringVar(&opt.Model, "model", "", "model")
	fs.IntVar(&opt.MaxTokens, "max-tokens", 0, "default max_tokens")
	fs.BoolVar(&opt.Stream, "stream", false, "stream responses")
	fs.StringVar(&opt.SystemCache, "system-cache", "", "anthropic: cache each line's system prompt (5m or 1h)")
	fs.StringVar(&opt.BaseURL, "base-url", "", "provider base URL")
	target := fs.String("target", "", "mock: the embedded mock")
	fs.StringVar(&opt.APIKeyCommand, "api-key-command", "", "command printing the API key")
	fs.StringVar(&opt.StateFile, "state-file", defaultStateFile(), "adaptive's state file")
	fs.StringVar(&opt.Schema, "schema", "", "JSON Schema file")
	fs.IntVar(&opt.MaxInvalid, "max-invalid", 2, "re-asks after a schema rejection")
	maxRetries := fs.Int("max-retries", -2, "retries per call")
	fs.IntVar(&opt.Workers, "workers", 0, "items in progress")
	fs.DurationVar(&opt.Grace, "grace", 30*time.Second, "drain deadline")
	fs.BoolVar(&opt.RetryFailed, "retry-failed", false, "retry failed items")
	fs.BoolVar(&opt.SkipInvalid, "skip-invalid", false, "skip invalid lines")
	format := fs.String("format", "text", "summary format: text or json")
	fs.DurationVar(&opt.MaxOutage, "max-outage", batch.DefaultMaxOutage, "how long to wait for an endpoint that stopped answering")
	via := batchAPIFlags(fs) // batchapi.go
	if q != nil {
		q.register(fs)
	}
	recordTo := fs.String("record", "", "write one JSON line per HTTP attempt to FILE")
	rest, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	switch {
	case len(rest) > 0:
		return usageError("batch: unexpected argument %q (the files are --input and --output)", rest[0])
	case (opt.Input == "" && q == nil) || opt.Output == "":
		fmt.Fprint(stderr, batchUsage)
		return usageError("batch: --input and --output are required")
	case *format != "text" && *format != "json":
		return usageError("batch: --format: want text or json, got %q", *format)
	case *target != "" && *target != "mock":
		return usageError("batch: --target: want mock (for a live server, use --base-url), got %q", *target)
	case opt.MaxInvalid < 0:
		return usageError("batch: --max-invalid must not be negative, got %d", opt.MaxInvalid)
	case opt.Workers < 0:
		return usageError("batch: --workers must not be negative, got %d", opt.Workers)
	case opt.Grace < 0:
		return usageError("batch: --grace must not be negative, got %s", opt.Grace)
	case opt.MaxTokens < 0:
		return usageError("batch: --max-tokens must not be negative, got %d", opt.MaxTokens)
	case opt.MaxOutage < 0:
		return usageError("batch: --max-outage must not be negative, got %s", opt.MaxOutage)
	case *maxRetries < -2:
		return usageError("batch: --max-retries must be -1 (no limit) or more, got %d", *maxRetries)
	}
	if abs(opt.Input) == abs(opt.Output) {
		return usageError("batch: --input and --output are the same file")
	}
	if *maxRetries != -2 {
		opt.MaxRetries = maxRetries
	}
	opt.Mock = *target == "mock"
	if opt.Mock && !given(fs, "state-file") {
		opt.StateFile = "" // a limit learned from the mock is not the user's
	}
	opt.Getenv = os.Getenv
	if opt.StateFile != "" {
		if err := os.MkdirAll(filepath.Dir(opt.StateFile), 0o700); err != nil {
			return usageError("batch: --state-file: %v", err)
		}
	}
	if *config != "" {
		if opt.Config, err = loadgen.LoadBatchConfig(*config); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
	}
	if opt.MaxOutage == 0 {
		opt.MaxOutage = -1 // wait as long as it takes
	}
	if via.via != "" {
		if q != nil {
			return usageError("batch work: --via does not apply: a worker makes its share of a queue's items one call each (loadgen batch --via batch-api submits a whole input)")
		}
		return batchAPICmd(ctx, fs, via, opt, *format, stdout, stderr) // batchapi.go
	}
	opt.Progress = progressTo(stderr)
	opt.OnOutage = func(o batch.Outage) {
		fmt.Fprintf(stderr, "%s %s\n", o.At.Format(time.TimeOnly), o)
	}
	started := false
	opt.OnStart = func(s batch.Summary) {
		started = true
		if s.Invalid.Total > 0 {
			fmt.Fprintf(stderr, "skipping %d invalid input lines:\n%s\n", s.Invalid.Total, s.Invalid.Error())
		}
		if s.Repaired > 0 {
			fmt.Fprintf(stderr, "%s: line %d was torn (the last run was killed mid-write); cut off, its item is made again\n", opt.Output, s.Repaired)
		}
		if s.Retried > 0 {
			fmt.Fprintf(stderr, "%s: %d failed results removed, to be made again\n", opt.Output, s.Retried)
		}
	}

	if q != nil {
		if err := q.open(ctx, fs, &opt, stderr); err != nil {
			return err
		}
	}
	closeRecord, err := openBatchRecord(&opt, *recordTo)
	if err != nil {
		return err
	}
	defer closeRecord()
	rep, err := batchrun.Run(ctx, opt)
	if q != nil {
		if qerr := q.finish(err, stderr); qerr != nil {
			return qerr
		}
	}
	var inputErrs *batch.InputErrors
	switch {
	case errors.As(err, &inputErrs):
		return &exitError{code: exitUsage, err: fmt.Errorf("invalid input, nothing was run (fix the lines, or use --skip-invalid):\n%w", err)}
	case !started && err != nil:
		return &exitError{code: exitUsage, err: err}
	}
	if *format == "json" {
		if jerr := rep.WriteJSON(stdout, opt.Input, opt.Output); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		rep.WriteText(stdout, opt.Input, opt.Output)
	}
	switch {
	case errors.Is(err, batch.ErrQuota):
		return &exitError{code: exitQuota, err: fmt.Errorf("stopped: %w; %d of %d items have no result yet: rerun the same command once the quota resets (or raise the spend cap) to resume", err, rep.Remaining, rep.Items)}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: %d of %d items have no result yet; rerun the same command to resume", rep.Remaining, rep.Items)}
	case err != nil:
		return &exitError{code: exitFailed, err: err}
	case !rep.AllOK():
		failed := rep.Failed + rep.DoneFailed
		return &exitError{code: exitFailed, err: fmt.Errorf("%d items failed and %d input lines were skipped; their errors are in %s (rerun with --retry-failed to retry them)",
			failed, rep.Invalid.Total, opt.Output)}
	}
	return nil
}

func abs(path string) string {
	a, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	return a
}
