package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/internal/batchrun"
)

// batchAPIUsage is the part of loadgen batch's usage about --via
// batch-api (docs/batch-api.md).
const batchAPIUsage = `
Through the provider's batch API (half the price, its own quota, hours):
  --via batch-api         submit the items as provider batches (Anthropic's
                          Message Batches, OpenAI's Files + Batch API) instead
                          of one call each; poll them and append their results
                          to the output in the same format, each id once.
                          Created batch ids are kept in OUTPUT.batches.json,
                          written before a batch counts as submitted: rerun
                          the same command after any interruption (kill -9
                          too) and it resumes without creating a batch twice
  --resubmit LIST         outcomes submitted again in a new batch instead of
                          recorded as errors: expired, errored (server
                          errors; an invalid request never is), canceled,
                          comma-separated (default none)
  --max-rounds N          submissions of one item at most (default 3)
  --batch-size N          requests per provider batch at most (default the
                          API's: 100,000 Anthropic, 50,000 OpenAI)
  --poll MIN,MAX          polling backoff (default 10s,5m)
  --batch-state PATH      the state file (default OUTPUT.batches.json)
`

type viaFlags struct {
	via, resubmit, poll, state string
	maxRounds, batchSize       int
}

func batchAPIFlags(fs *flag.FlagSet) *viaFlags {
	v := &viaFlags{}
	fs.StringVar(&v.via, "via", "", "batch-api: through the provider's batch API")
	fs.StringVar(&v.resubmit, "resubmit", "", "outcomes submitted again: expired, errored, canceled")
	fs.IntVar(&v.maxRounds, "max-rounds", 0, "submissions of one item at most")
	fs.IntVar(&v.batchSize, "batch-size", 0, "requests per provider batch at most")
	fs.StringVar(&v.poll, "poll", "", "polling backoff MIN,MAX")
	fs.StringVar(&v.state, "batch-state", "", "state file of --via batch-api")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), batchAPIUsage)
	}
	return v
}

// batchAPICmd is loadgen batch --via batch-api.
func batchAPICmd(ctx context.Context, fs *flag.FlagSet, v *viaFlags, opt batchrun.Options, format string, stdout, stderr io.Writer) error {
	if v.via != "batch-api" {
		return usageError("batch: --via: want batch-api, got %q", v.via)
	}
	for _, f := range []string{"strategy", "only", "workers", "max-retries", "schema", "max-invalid", "stream", "grace", "max-outage", "shared-redis", "shared-key"} {
		if given(fs, f) {
			return usageError("batch: --via batch-api: --%s does not apply (the provider runs a batch's requests)", f)
		}
	}
	ao := &batchrun.APIOptions{MaxRounds: v.maxRounds, BatchSize: v.batchSize, State: v.state}
	if v.resubmit != "" {
		for _, o := range strings.Split(v.resubmit, ",") {
			o = strings.TrimSpace(o)
			if o != "expired" && o != "errored" && o != "canceled" {
				return usageError("batch: --resubmit: want expired, errored or canceled, comma-separated, got %q", o)
			}
			ao.Resubmit = append(ao.Resubmit, o)
		}
	}
	if v.poll != "" {
		lo, hi, ok := strings.Cut(v.poll, ",")
		var err1, err2 error
		ao.PollMin, err1 = time.ParseDuration(lo)
		if ok {
			ao.PollMax, err2 = time.ParseDuration(hi)
		}
		if err1 != nil || err2 != nil || ao.PollMin <= 0 || ok && ao.PollMax < ao.PollMin {
			return usageError("batch: --poll: want MIN,MAX durations with 0 < MIN <= MAX, e.g. 10s,5m, got %q", v.poll)
		}
	}
	if v.maxRounds < 0 || v.batchSize < 0 {
		return usageError("batch: --max-rounds and --batch-size must not be negative")
	}
	ao.OnEvent = func(s string) { fmt.Fprintf(stderr, "%s %s\n", time.Now().Format(time.TimeOnly), s) }
	opt.API = ao
	opt.Strategy, opt.Only = "", ""
	started := false
	opt.OnStart = func(s batch.Summary) {
		started = true
		if s.Invalid.Total > 0 {
			fmt.Fprintf(stderr, "skipping %d invalid input lines:\n%s\n", s.Invalid.Total, s.Invalid.Error())
		}
		if s.Repaired > 0 {
			fmt.Fprintf(stderr, "%s: line %d was torn (the last run was killed mid-write); cut off, its item is made again\n", opt.Output, s.Repaired)
		}
	}
	rep, err := batchrun.RunAPI(ctx, opt)
	var inputErrs *batch.InputErrors
	switch {
	case errors.As(err, &inputErrs):
		return &exitError{code: exitUsage, err: fmt.Errorf("invalid input, nothing was run (fix the lines, or use --skip-invalid):\n%w", err)}
	case !started && err != nil:
		return &exitError{code: exitUsage, err: err}
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(rep); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		rep.WriteText(stdout, opt.Input, opt.Output)
	}
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: %d of %d items have no result yet; rerun the same command to resume (the batches created are in %s)", rep.Remaining, rep.Items, rep.State)}
	case err != nil:
		return &exitError{code: exitFailed, err: err}
	case !rep.AllOK():
		return &exitError{code: exitFailed, err: fmt.Errorf("%d items failed and %d input lines were skipped; their errors are in %s (rerun with --retry-failed, and --resubmit, to make them again)",
			rep.Failed+rep.DoneFailed, rep.Invalid.Total, opt.Output)}
	}
	return nil
}
