package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// Batch is a resumable batch: the items of a JSONL input file run through
// the engine, and one JSONL result line per item appended to an output file
// the moment the item finishes, so that the output holds every input id
// exactly once however often the batch is killed and rerun.
//
// How Run does it (validation, resuming, re-queues, outages, the lock) is
// the package documentation's "How Run works".
type Batch struct {
	// Input is the path of the JSONL input; it is read twice, so it must be
	// a regular file.
	Input string
	// Output is the path of the JSONL results; created if missing.
	Output string
	// Model is every call's model (input lines do not carry one).
	Model string
	// MaxTokens is the max_tokens of lines that set none. Zero means 1024.
	MaxTokens int
	// Stream requests streamed (SSE) responses.
	Stream bool
	// SystemCache asks Anthropic to cache each line's system prompt with
	// that TTL ("5m" or "1h", provider.Request.SystemCache); lines with no
	// system prompt are sent as they are. Empty: no cache_control.
	SystemCache string
	// RetryFailed makes the items whose recorded result is an error again.
	RetryFailed bool
	// SkipInvalid skips invalid and duplicate lines (reported in
	// Summary.Invalid) instead of refusing to start.
	SkipInvalid bool
	// MaxOutage is how long the batch waits for an endpoint that stopped
	// answering (its circuit open) before it stops with ErrOutage, the items
	// still to make left for the next run. It stops as ending ctx does (the
	// attempts under way get Config.Grace to end). Zero means
	// DefaultMaxOutage; a negative value waits as long as it takes.
	MaxOutage time.Duration
	// OnOutage, when set, is called when the circuit opens (the endpoint
	// stopped answering: the batch pauses) and when it closes (it resumes).
	OnOutage func(Outage)
	// OnStart, when set, is called once the input is validated and the
	// output read, before the first call, with the counts known then
	// (Items, Invalid, DoneOK, DoneFailed, Retried, Repaired, and Remaining:
	// the items to make).
	OnStart func(Summary)
	// Config is the run's configuration. Its Sinks and OnResult receive
	// only terminal results, after the output has them; OnAttempt sees every
	// attempt. Items and Again are set by Run.
	Config engine.Config
	// Queue, when set, supplies the items instead of Input (which then only
	// names them in messages): see Queue.
	Queue Queue

	// Provider names the provider of Config.Client ("anthropic", …). When
	// set, an input line may name its own provider and model in its
	// metadata, {"provider": "gemini", "model": "gemini-2.5-flash"}
	// (Line.Provider, Line.Model): a line naming Provider, or none, goes to
	// Config.Client and Config.Strategy; a line naming another provider
	// goes to that provider's Route, which Routes makes. Either way its
	// model is metadata.model, else the route's Model, else Model. Empty:
	// metadata is not read for routing (every line goes to Config.Client).
	Provider string
	// Routes returns the Route of a provider the input names, called once
	// per provider, the first time a line names it: during the validating
	// pass, before any call (its error is then the input error of that
	// line's metadata.provider, as for every line naming it), or, with a
	// Queue, when the first such item arrives (its error stops the batch).
	// Nil: a line naming another provider than Provider is an input error.
	Routes func(provider string) (*Route, error)

	rt *router // routes the lines' calls, when Provider is set

	takenMu sync.Mutex
	taken   map[idKey]struct{} // the queue's items this run has taken
	lost    int                // of them, dropped as no longer held (QueueHolder)
}

// DefaultMaxTokens is Batch.MaxTokens when it is zero.
const DefaultMaxTokens = 1024

// Summary is how a batch run went. Counts of items are the batch's own;
// Run is the engine's accounting of every attempt of this run.
type Summary struct {
	// Lines is the input's non-blank lines; Items its distinct valid items.
	Lines int `json:"lines"`
	Items int `json:"items"`
	// Invalid lists the lines skipped with SkipInvalid.
	Invalid InputErrors `json:"invalid"`
	// DoneOK and DoneFailed count the items already in the output, with a
	// success or an error, when the run started (after RetryFailed).
	DoneOK     int `json:"done_ok"`
	DoneFailed int `json:"done_failed"`
	// Retried counts the error lines RetryFailed removed from the output.
	Retried int `json:"retried"`
	// Repaired is the line number of the torn last line cut from the
	// output; 0 when there was none.
	Repaired int `json:"repaired_line,omitempty"`
	// Completed and Failed count the results this run appended.
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// FailedByType counts this run's failures by error type
	// (invalid_request_error, validation_error, connection_error, …).
	FailedByType map[string]int `json:"failed_by_type"`
	// Requeued counts the times an item was throttled, or its connection
	// failed, and it was made again (through engine.Config.Again).
	Requeued int `json:"requeued"`
	// QuotaSpent counts the items refused because the key's quota or spend
	// cap was spent (strategies.Quota). The first stops the batch with
	// ErrQuota; none is recorded, so a resume makes them again.
	QuotaSpent int `json:"quota_spent,omitempty"`
	// Lost counts the queue's items this worker dropped before an attempt
	// because another worker had taken them over (QueueHolder): made there.
	Lost int `json:"lost,omitempty"`
	// Outages counts the times the endpoint stopped answering and the batch
	// paused; OutageSeconds is how long it was paused in all.
	Outages       int     `json:"outages"`
	OutageSeconds float64 `json:"outage_seconds"`
	// Remaining counts the items with no result: the run was interrupted.
	Remaining int `json:"remaining"`
	// Run is the engine's summary of this run: attempts, 429s, tokens, wall
	// time, the strategy's final limit. Its Completed and Failed count the
	// items this run recorded, as the fields above do.
	Run measure.Summary `json:"run"`
	// Providers counts this run's results by provider, when the batch
	// routed lines to several (Batch.Routes).
	Providers map[string]*ProviderCounts `json:"providers,omitempty"`
}

// ProviderCounts are the results one provider's lines had in a run.
type ProviderCounts struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// AllOK reports whether every item of the input has a successful result.
func (s *Summary) AllOK() bool {
	return s.Remaining == 0 && s.DoneFailed == 0 && s.Failed == 0 && s.Invalid.Total == 0
}

// Run runs the batch; see Batch. Its error is an *InputErrors when the
// input is invalid (no call was made), a file error naming the file, ctx's
// error when interrupted, or the engine's. The summary is meaningful
// whenever the run started.
func (b *Batch) Run(ctx context.Context) (Summary, error) {
	var sum Summary
	if b.Config.Client == nil || b.Config.Strategy == nil {
		return sum, errors.New("batch: Batch.Config.Client and Config.Strategy are required")
	}
	if (b.Input == "" && b.Queue == nil) || b.Output == "" {
		return sum, errors.New("batch: Batch.Input and Batch.Output are required")
	}
	if b.MaxTokens < 0 {
		return sum, fmt.Errorf("batch: Batch.MaxTokens must not be negative, got %d", b.MaxTokens)
	}
	if b.Provider != "" {
		b.rt = newRouter(b)
	}
	var ids map[idKey]idState
	var err error
	if b.Queue != nil {
		ids = make(map[idKey]idState) // the queue's items were validated when enqueued
	} else {
		ids, err = b.validate(ctx, &sum)
	}
	if err != nil {
		return sum, err
	}
	out, err := b.openOutput(ids, &sum)
	if err != nil {
		return sum, err
	}
	defer out.Close() // also releases the lock

	todo := 0
	for _, st := range ids {
		if st.line > 0 && st.done == notDone {
			todo++
		}
	}
	sum.Remaining = todo
	sum.FailedByType = make(map[string]int)
	if b.OnStart != nil {
		b.OnStart(sum)
	}
	if b.Queue != nil {
		if err := b.Queue.Start(ctx, b.Output, out); err != nil {
			return sum, err
		}
	} else if todo == 0 {
		return sum, out.Close()
	}

	cfg := b.Config
	cfg.Items = todo
	if b.rt != nil && (b.rt.used() || (b.Queue != nil && b.Routes != nil)) {
		cfg = b.rt.wrap(cfg)
		sum.Providers = make(map[string]*ProviderCounts)
	}
	maxOutage := b.MaxOutage
	if maxOutage == 0 {
		maxOutage = DefaultMaxOutage
	}
	var seed int64
	if cfg.Retry != nil {
		seed = cfg.Retry.Seed
	}
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	circ := newCircuit(seed, maxOutage, b.OnOutage, stop)
	cfg.Strategy = gated{Strategy: cfg.Strategy, c: circ}
	if g, ok := b.Queue.(QueueGate); ok {
		cfg.Strategy = queueGated{Strategy: cfg.Strategy, q: g}
	}
	if h, ok := b.Queue.(QueueHolder); ok {
		cfg.Held = b.held(h)
	}
	var requeued atomic.Int64
	cfg.Again = func(engine.Result) bool {
		requeued.Add(1)
		return true
	}
	userSinks, onResult, onAttempt := cfg.Sinks, cfg.OnResult, cfg.OnAttempt
	cfg.OnResult = nil
	cfg.OnAttempt = func(a engine.Attempt) {
		circ.observe(a)
		if onAttempt != nil {
			onAttempt(a)
		}
	}
	jsonl := engine.NewJSONL(out)
	cfg.Sinks = []engine.Sink{sinkFunc(func(r engine.Result) error {
		var pc *ProviderCounts
		if sum.Providers != nil {
			name := b.Provider
			if rt := b.rt.ofID(r.ID); rt != nil {
				name = rt.name
			}
			b.rt.release(r.ID)
			if pc = sum.Providers[name]; pc == nil {
				pc = &ProviderCounts{}
				sum.Providers[name] = pc
			}
		}
		if r.Kind == strategies.Quota {
			// The key's quota is spent: no other call will do better until
			// it resets. Record nothing for this item, start no other, and
			// leave them all for a resume.
			sum.QuotaSpent++
			cause := fmt.Errorf("%w (%d %s: %s)", ErrQuota, r.Err.Status, r.Err.Type, r.Err.Message)
			if b.Queue != nil && context.Cause(runCtx) == nil {
				b.Queue.Stop(cause)
			}
			stop(cause)
			return nil
		}
		if err := jsonl.Put(r); err != nil {
			return err // names the output already (an *os.PathError)
		}
		if b.Queue != nil {
			b.Queue.Recorded(r.Index+1, r)
		} else {
			sum.Remaining--
		}
		if r.OK() {
			sum.Completed++
		} else {
			sum.Failed++
			sum.FailedByType[r.Err.Type]++
		}
		if pc != nil {
			if r.OK() {
				pc.Completed++
			} else {
				pc.Failed++
			}
		}
		for _, s := range userSinks {
			if err := s.Put(r); err != nil {
				return err
			}
		}
		if onResult != nil {
			onResult(r)
		}
		return nil
	})}

	src := b.source(ids)
	if b.Queue != nil {
		src = b.queueSource(runCtx, ids)
	}
	sum.Run, err = engine.Run(runCtx, cfg, src)
	if err == nil && sum.QuotaSpent > 0 {
		// Every item had ended by the time the refusal was read: still the
		// refused items have no result.
		err = context.Cause(runCtx)
	}
	sum.Requeued = int(requeued.Load())
	b.takenMu.Lock()
	sum.Lost = b.lost
	b.takenMu.Unlock()
	outages, down := circ.stats()
	sum.Outages, sum.OutageSeconds = outages, down.Seconds()
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", b.Output, cerr)
	}
	return sum, err
}

// sinkFunc adapts a function to engine.Sink.
type sinkFunc func(engine.Result) error

func (f sinkFunc) Put(r engine.Result) error { return f(r) }

// source streams the input's items still to do.
func (b *Batch) source(ids map[idKey]idState) engine.Source {
	return func(yield func(engine.Item, error) bool) {
		err := b.scan(func(line int, in *Line, _ *InputError) bool {
			if in == nil {
				return true
			}
			st := ids[keyOf(in.ID)]
			if int(st.line) != line || st.done != notDone {
				return true // a duplicate, or done in an earlier run
			}
			return yield(b.item(line, in), nil)
		})
		if err != nil {
			yield(engine.Item{}, err)
		}
	}
}

// systemCache is the cache TTL of line in's system prompt, if it has one.
func (b *Batch) systemCache(in *Line) string {
	if in.System == "" {
		return ""
	}
	return b.SystemCache
}

// item makes the engine item of input line line.
func (b *Batch) item(line int, in *Line) engine.Item {
	msgs := in.Messages
	if in.Prompt != "" {
		msgs = []provider.Message{{Role: "user", Content: in.Prompt}}
	}
	maxTokens := in.MaxTokens
	if maxTokens == 0 {
		maxTokens = b.MaxTokens
	}
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	model := b.Model
	if b.rt != nil {
		// validate (or queueSource) made the route already: no error here.
		if rt, _ := b.rt.route(in.Provider); rt != nil {
			b.rt.assign(in.ID, rt)
			if rt.Model != "" {
				model = rt.Model
			}
		}
		if in.Model != "" {
			model = in.Model
		}
	}
	return engine.Item{
		Index: line - 1,
		ID:    in.ID,
		Request: provider.Request{
			Model:          model,
			System:         in.System,
			SystemCache:    b.systemCache(in),
			Messages:       msgs,
			MaxTokens:      maxTokens,
			Stream:         b.Stream,
			IdempotencyKey: in.ID,
		},
		Metadata: in.Metadata,
	}
}
