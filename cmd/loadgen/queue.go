package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/batch/queue"
	"github.com/ratelab/ratelab/internal/batchrun"
	"github.com/ratelab/ratelab/internal/redact"
)

// The subcommands of loadgen batch that share one batch between several
// processes through Redis (docs/distributed-batch.md).
var queueCommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"enqueue": enqueueCmd,
	"work":    workCmd,
	"status":  statusCmd,
	"collect": collectCmd,
}

const queueUsage = `Usage:
  loadgen batch enqueue --queue redis://HOST:PORT/DB --name JOB --input ITEMS.jsonl
  loadgen batch work    --queue URL --name JOB --output RESULTS.jsonl [batch flags]
  loadgen batch status  --queue URL --name JOB [--format text|json] [--delete]
  loadgen batch collect [--queue URL --name JOB | --input ITEMS.jsonl] --output ALL.jsonl
                        [--order input|id] [--report REPORT.json] WORKER.jsonl...

One batch shared by several processes on several machines through one
Redis (docs/distributed-batch.md):

  enqueue   validate ITEMS.jsonl and put its items on the job's Redis
            Stream, once: the same input again adds nothing (an interrupted
            enqueue goes on where it stopped); another input under the same
            name is refused. It also clears a job stopped by a spent quota,
            and re-creates a job Redis lost (restarted or flushed), adding
            only the items no worker has recorded.
  work      join the job's consumer group and run its items as loadgen batch
            does (every batch flag but --input: --strategy, --shared-redis,
            --shared-key, --base-url, --target mock, …), each result written
            to this worker's --output and acknowledged once the file is
            synced. Items held by a worker silent for longer than --lease are
            taken over by the others; a quota refusal stops every worker
            (exit 3). Exits 0 once every item of the job is recorded.
  status    the job's progress: done, pending, waiting, taken over, and each
            worker's counts, rate and last heartbeat
  collect   merge the workers' outputs into one file, every id once (a
            success kept over an error; duplicates dropped and counted), in
            input order or id order, and print the merged report (latency
            histograms merged, per-worker rows, a summed timeline)

--queue is redis://HOST:PORT/DB (rediss:// for TLS), or
redis+cluster://HOST:PORT?addr=HOST2:PORT2 for a Redis Cluster.

Flags of work besides the batch flags:
  --queue URL      the Redis holding the job
  --name JOB       the job
  --worker NAME    this worker's name in the group (default HOST-PID)
  --lease DUR      how long a silent worker's items stay with it (default 30s);
                   above the longest stall you expect (a GC pause, a network
                   blip): after a longer one, the calls it had under way are
                   made twice (the items it had not started, it drops); the
                   same for every worker of a job
  --workers N      items this worker holds at once (default 64)
`

// queueFlags are the flags every queue subcommand takes.
type queueFlags struct {
	url, name string
}

func (q *queueFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&q.url, "queue", "", "Redis URL holding the job")
	fs.StringVar(&q.name, "name", "", "the job's name")
}

// check checks that --queue and --name are given, the name usable.
func (q *queueFlags) check(cmd string) error {
	if q.url == "" || q.name == "" {
		return usageError("batch %s: --queue and --name are required", cmd)
	}
	if err := queue.CheckName(q.name); err != nil {
		return usageError("batch %s: %v", cmd, err)
	}
	return nil
}

func (q *queueFlags) dial(ctx context.Context, cmd string) (redis.UniversalClient, error) {
	if err := q.check(cmd); err != nil {
		return nil, err
	}
	rdb, err := queue.Dial(ctx, q.url)
	if err != nil {
		return nil, usageError("batch %s: %v", cmd, err)
	}
	return rdb, nil
}

func queueFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("batch "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), queueUsage) }
	return fs
}

func stamp(w io.Writer) func(string, ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(w, "%s %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
	}
}

// enqueueCmd implements loadgen batch enqueue.
func enqueueCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := queueFlagSet("enqueue", stderr)
	var q queueFlags
	q.register(fs)
	input := fs.String("input", "", "input JSONL")
	rest, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	if len(rest) > 0 {
		return usageError("batch enqueue: unexpected argument %q", rest[0])
	}
	if *input == "" {
		return usageError("batch enqueue: --input is required")
	}
	rdb, err := q.dial(ctx, "enqueue")
	if err != nil {
		return err
	}
	defer rdb.Close()
	res, err := queue.Enqueue(ctx, rdb, q.name, *input, stamp(stderr))
	var inputErrs *batch.InputErrors
	switch {
	case errors.As(err, &inputErrs):
		return &exitError{code: exitUsage, err: fmt.Errorf("invalid input, nothing was enqueued (fix the lines):\n%w", err)}
	case err != nil:
		return &exitError{code: exitFailed, err: err}
	}
	res.WriteText(stdout)
	return nil
}

// workFlags are work's own flags, registered into loadgen batch's.
type workFlags struct {
	queueFlags
	worker string
	lease  time.Duration
	w      *queue.Worker
}

// workCmd implements loadgen batch work: loadgen batch with its items from
// the job's queue.
func workCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return batchMain(ctx, args, stdout, stderr, new(workFlags))
}

func (q *workFlags) register(fs *flag.FlagSet) {
	q.queueFlags.register(fs)
	fs.StringVar(&q.worker, "worker", "", "this worker's name")
	fs.DurationVar(&q.lease, "lease", queue.DefaultLease, "how long a silent worker's items stay with it")
	fs.Usage = func() { fmt.Fprint(fs.Output(), queueUsage) }
}

// open joins the job and makes it opt's queue.
func (q *workFlags) open(ctx context.Context, fs *flag.FlagSet, opt *batchrun.Options, stderr io.Writer) error {
	if given(fs, "input") {
		return usageError("batch work: the items come from the job's queue; --input is enqueue's (loadgen batch enqueue)")
	}
	if err := q.check("work"); err != nil {
		return err
	}
	w, err := queue.Join(ctx, q.url, q.name, queue.WorkerOptions{Name: q.worker, Lease: q.lease, Logf: stamp(stderr),
		EnqueueHint: fmt.Sprintf("loadgen batch enqueue --queue %s --name %s --input FILE", redact.URL(q.url), q.name)})
	if err != nil {
		return usageError("batch work: %v", err)
	}
	q.w = w
	opt.Queue = w
	opt.Input = "job " + q.name
	opt.Progress = nil // the job's progress is loadgen batch status's
	if !given(fs, "workers") {
		opt.Workers = 64
	}
	return nil
}

// finish ends the worker's part, and says why it stopped when it was the
// job.
func (q *workFlags) finish(err error, stderr io.Writer) error {
	if err = q.w.Finish(err); errors.Is(err, batch.ErrQuota) {
		return &exitError{code: exitQuota, err: fmt.Errorf("stopped: %w; the job is stopped for every worker: once the quota resets (or the spend cap is raised), run loadgen batch enqueue with the same --input (it clears the stop) and start the workers again", err)}
	}
	return nil
}

// statusCmd implements loadgen batch status.
func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := queueFlagSet("status", stderr)
	var q queueFlags
	q.register(fs)
	format := fs.String("format", "text", "text or json")
	del := fs.Bool("delete", false, "delete the job's keys")
	rest, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	if len(rest) > 0 {
		return usageError("batch status: unexpected argument %q", rest[0])
	}
	if *format != "text" && *format != "json" {
		return usageError("batch status: --format: want text or json, got %q", *format)
	}
	rdb, err := q.dial(ctx, "status")
	if err != nil {
		return err
	}
	defer rdb.Close()
	if *del {
		if err := queue.Delete(ctx, rdb, q.name); err != nil {
			return &exitError{code: exitFailed, err: err}
		}
		fmt.Fprintf(stdout, "job %s deleted\n", q.name)
		return nil
	}
	st, err := queue.Status(ctx, rdb, q.name)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	st.WriteText(stdout)
	return nil
}

// collectCmd implements loadgen batch collect.
func collectCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := queueFlagSet("collect", stderr)
	var q queueFlags
	q.register(fs)
	var opt queue.CollectOptions
	fs.StringVar(&opt.Output, "output", "", "the merged output")
	fs.StringVar(&opt.Input, "input", "", "the job's input, to list the ids with no result")
	order := fs.String("order", "input", "input or id")
	report := fs.String("report", "", "write the merged report as JSON to this file")
	format := fs.String("format", "text", "text or json")
	rest, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	opt.Outputs = rest
	switch {
	case opt.Output == "":
		return usageError("batch collect: --output is required")
	case len(rest) == 0:
		return usageError("batch collect: name the workers' output files after the flags")
	case *order != "input" && *order != "id":
		return usageError("batch collect: --order: want input or id, got %q", *order)
	case *format != "text" && *format != "json":
		return usageError("batch collect: --format: want text or json, got %q", *format)
	}
	opt.ByID = *order == "id"
	if q.url != "" || q.name != "" {
		rdb, err := q.dial(ctx, "collect")
		if err != nil {
			return err
		}
		st, err := queue.Status(ctx, rdb, q.name)
		rdb.Close()
		if err != nil {
			return &exitError{code: exitFailed, err: err}
		}
		opt.Items = st.Items
	}
	rep, err := queue.Collect(opt)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	if *report != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*report, append(b, '\n'), 0o644); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("--report: %w", err)}
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.WriteText(stdout)
	}
	if rep.Missing > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("collect: %d of %d items have no result yet (first: %s)", rep.Missing, rep.Expected, strings.Join(rep.MissingIDs, ", "))}
	}
	return nil
}
