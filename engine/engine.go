package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// Item is one unit of work: a request to get answered, made as one call
// (or, with Config.Again, several) through the strategy (see the glossary
// in docs/architecture.md).
type Item struct {
	// Index is the item's position in its input; results carry it so that
	// they can be matched to inputs whatever order they finish in.
	Index int
	// ID is the caller's identifier (a batch input's id); it may be empty.
	ID string
	// Request is what each attempt sends.
	Request provider.Request
	// Metadata is passed through to the Result untouched.
	Metadata json.RawMessage
}

// Source yields a run's items in order. It is pulled one item at a time, and
// only when a worker is free to take it, so a source streaming from a file
// keeps memory proportional to the run's concurrency, not its size. A
// non-nil error ends the run: Run stops taking items, lets the ones in
// progress finish and returns the error.
type Source iter.Seq2[Item, error]

// Slice returns a Source of items.
func Slice(items []Item) Source {
	return func(yield func(Item, error) bool) {
		for _, it := range items {
			if !yield(it, nil) {
				return
			}
		}
	}
}

// Generate returns a Source of n items made by f(0) … f(n-1), each made only
// when it is taken. Generate sets each item's Index to i.
func Generate(n int, f func(i int) Item) Source {
	return func(yield func(Item, error) bool) {
		for i := range n {
			it := f(i)
			it.Index = i
			if !yield(it, nil) {
				return
			}
		}
	}
}

// Chan returns a Source of the items received from ch until it is closed.
func Chan(ch <-chan Item) Source {
	return func(yield func(Item, error) bool) {
		for it := range ch {
			if !yield(it, nil) {
				return
			}
		}
	}
}

// Result is how one item ended: its text on success or its error, with
// attempts and timings. Its JSON form is one line of results.jsonl.
type Result struct {
	Index      int              `json:"index"`
	ID         string           `json:"id,omitempty"`
	Text       string           `json:"text,omitempty"`
	StopReason string           `json:"stop_reason,omitempty"`
	Usage      strategies.Usage `json:"usage"`
	// Err is nil when the item succeeded.
	Err      *ResultError    `json:"error,omitempty"`
	Attempts int             `json:"attempts"`
	Timings  Timings         `json:"timings"`
	Metadata json.RawMessage `json:"metadata,omitempty"`

	// Kind classifies how the item ended, from its last attempt's Outcome,
	// where the Result is made: a caller deciding what to do with a failure
	// switches on it instead of parsing Err back. It is one of
	// strategies.Success, Throttled, Overloaded, Unreachable, Failed and
	// Quota, never Canceled or Abandoned (an interrupted item has no
	// Result). It is not part of the result line (results.jsonl keeps its
	// format, and Err says it there); ReadJSONL sets it to Success or
	// Failed.
	Kind strategies.Kind `json:"-"`
}

// OK reports whether the item succeeded.
func (r *Result) OK() bool { return r.Err == nil }

// kindOf classifies an attempt's outcome that was not a success. The
// provider's error type is read from its *provider.APIError, where the
// provider put it: a stream's error event has status 200, and a 429 may be
// a spent quota (strategies.Quota), and a connection that failed the way a
// server down makes it fail is strategies.Unreachable.
func kindOf(o strategies.Outcome) strategies.Kind {
	var typ string
	if apiErr := (*provider.APIError)(nil); errors.As(o.Err, &apiErr) {
		typ = apiErr.Type
	}
	switch {
	case o.Kind == strategies.Quota, typ == "insufficient_quota":
		return strategies.Quota
	case o.Kind == strategies.Throttled, typ == "rate_limit_error":
		return strategies.Throttled
	case o.Kind == strategies.Overloaded, typ == "overloaded_error":
		return strategies.Overloaded
	case provider.Transient(o):
		return strategies.Unreachable
	}
	return strategies.Failed
}

// ResultError is how an item failed, after its last attempt: the HTTP status
// (0 when no response arrived; 200 for a stream that broke or carried an
// error event), the provider's error type (rate_limit_error,
// overloaded_error, invalid_request_error, …, or one of provider.Describe's
// own: connection_error, incomplete_stream, invalid_response; "rejected" when
// the strategy could never admit the call) and its message, never holding
// the API key.
type ResultError struct {
	Status  int    `json:"status"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Error implements error.
func (e *ResultError) Error() string {
	return fmt.Sprintf("status %d %s: %s", e.Status, e.Type, e.Message)
}

// Timings are an item's timestamps and where its time went. Waits are the
// item's totals over all its attempts.
type Timings struct {
	Start time.Time `json:"start"` // when a worker took the item
	End   time.Time `json:"end"`   // when its last attempt ended
	// WaitSlot is time waiting for the strategy to admit an attempt
	// (a concurrency slot or a pacing turn).
	WaitSlot time.Duration `json:"wait_slot_ns"`
	// WaitTokens is time waiting for a token budget.
	WaitTokens time.Duration `json:"wait_tokens_ns"`
	// WaitRetryAfter is time waiting because the server asked (retry-after).
	WaitRetryAfter time.Duration `json:"wait_retry_after_ns"`
	// Backoff is time sleeping between attempts with no server delay.
	Backoff time.Duration `json:"backoff_ns"`
	// TTFT is the time to first token of the successful attempt, when
	// streaming; 0 otherwise.
	TTFT time.Duration `json:"ttft_ns,omitempty"`
}

// Attempt is one HTTP attempt, as Config.OnAttempt and the Recorder see it.
type Attempt struct {
	Index int
	ID    string
	// N is the 0-based number of the attempt among all the item's attempts.
	// It is the X-Stainless-Retry-Count sent, except after a Check
	// rejection, when the header starts again at 0 for the new call.
	N       int
	Start   time.Time
	Cost    strategies.Cost
	Outcome strategies.Outcome
}

// Client makes one attempt of a request. *provider.Client implements it;
// tests can fake it. It must be safe for concurrent use.
type Client interface {
	Do(ctx context.Context, r provider.Request, attempt int) (provider.Response, strategies.Outcome)
}

// A ClientInto is a Client that can write an attempt's results in place, as
// *provider.Client does: Run then calls DoInto, and no frame of a worker's
// holds a copy of them (a quarter kilobyte each, and the compiler's
// copies), which keeps a call in flight within an 8 KiB goroutine stack
// (docs/performance.md, memory per in-flight call). DoInto must do what Do
// does: a type that embeds a ClientInto (a *provider.Client, say) and
// changes what Do does must define DoInto too, or Run calls the embedded
// one's.
type ClientInto interface {
	Client
	DoInto(ctx context.Context, r *provider.Request, attempt int, out *provider.Response, o *strategies.Outcome)
}

// A Coster is a Client that knows what a request will cost (provider,
// key fingerprint, estimated tokens); *provider.Client implements it. For a
// Client that does not, Run uses provider.EstimateTokens and MaxTokens.
type Coster interface {
	Cost(r provider.Request) strategies.Cost
}

// Sink receives each finished item's Result as soon as it finishes. Run
// calls sinks one at a time, in completion order, never concurrently. An
// error from Put is fatal to the run: results could no longer be recorded.
type Sink interface {
	Put(r Result) error
}

// DefaultWorkers is Config.Workers when it is zero.
const DefaultWorkers = 1024

// DefaultResolution is Config.Resolution when it is zero.
const DefaultResolution = 100 * time.Millisecond

// Config configures Run. Client and Strategy are required.
type Config struct {
	// Client makes the attempts.
	Client Client
	// Strategy admits attempts and learns from their outcomes.
	Strategy strategies.Strategy
	// Retry is the retry policy; nil makes one attempt per item.
	Retry *strategies.RetryPolicy
	// Workers bounds the items in progress at once (waiting in the
	// strategy, attempting or between attempts), and so the run's memory.
	// With an unbounded strategy it is the run's concurrency. Zero means
	// DefaultWorkers.
	Workers int
	// Sinks receive every finished Result (a JSONL file, …). Items still in
	// progress when the run is interrupted are not finished and reach no
	// sink, so a resumed batch retries them.
	Sinks []Sink
	// Resolution is the timeline's sampling interval; zero means
	// DefaultResolution and a negative value records no timeline. It is at
	// least MinResolution, and a run long enough to need more than
	// MaxTimelinePoints samples gets a coarser one (Timeline says which).
	Resolution time.Duration
	// Grace lets attempts in progress when ctx ends go on for up to this
	// long (a batch's drain deadline). Zero cancels them at once.
	Grace time.Duration
	// Items is the number of items the source will yield, when known; it is
	// Summary.Items for an interrupted run. Zero means count what was taken.
	Items int
	// Check, when set, validates every successful response (its text
	// against a JSON Schema, say). A response it rejects makes the item ask
	// again, as a new call under the strategy and retry policy, up to
	// MaxInvalid more times; then the item fails with a ResultError of type
	// "validation_error" carrying Check's message (and keeps the text). It is
	// called concurrently from the workers.
	Check func(it Item, resp provider.Response) error
	// MaxInvalid is how many times an item whose response Check rejected is
	// asked again; zero means never.
	MaxInvalid int
	// OnAttempt, when set, is called after every attempt, concurrently from
	// the workers; it must be safe for concurrent use and must not block.
	OnAttempt func(Attempt)
	// OnResult, when set, is called with every finished Result, after the
	// sinks, one at a time.
	OnResult func(Result)
	// Again, when set, is asked about every item whose call ended
	// temporarily (Result.Kind.Temporary: throttled, overloaded or
	// unreachable) before its Result is delivered. When it says true, the
	// item is not finished: its worker waits, holding no permit, for the
	// server's retry-after or else the SDKs' backoff for the item's round
	// (strategies.Backoff: 0.5 s doubling to 8 s, jittered from Retry's
	// seed), then makes it again as a new call under Strategy and Retry,
	// retries afresh, as RetryPolicy.Requeue makes a retry; the Result
	// finally delivered counts every round's attempts and waits. A batch
	// makes its throttled items this way until they succeed, whatever Retry
	// allows. Again is called concurrently from the workers and must not
	// block. It is not asked once the run is stopping: an item whose round
	// ends then, or that is waiting between rounds, is not finished.
	Again func(Result) bool
	// Held, when set, is asked before every attempt, once its permit is
	// granted, whether the run still holds the item (index and id): a work
	// queue's worker that was frozen or cut off for longer than its lease
	// has had its items taken over by other workers, and must not make
	// them too. When it says false, the attempt is not made, the permit is
	// released unused (strategies.Abandoned), and the item ends there: no
	// Result reaches a sink or OnResult, and it counts in no figure of the
	// Summary but Items. Held is called concurrently from the workers and
	// may block for a round trip.
	Held func(index int, id string) bool
}

// PanicError is what Run panics with when a worker panicked: the original
// value and the worker's stack.
type PanicError struct {
	Value any
	Stack []byte
}

// Error implements error.
func (p *PanicError) Error() string {
	return fmt.Sprintf("engine: worker panicked: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic value when it is an error.
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// errFatal marks the cause of an abort that is not ctx's: a sink failed or a
// worker panicked.
var errFatal = errors.New("engine: run aborted")

// Run sends every item of src through cfg.Strategy and cfg.Client, with
// cfg.Retry, on at most cfg.Workers goroutines, delivers each finished Result
// to the recorder, cfg.Sinks and cfg.OnResult, and returns the run's
// Summary.
//
// A failed item is a Result with an error, not an error of Run: the run goes
// on. When ctx ends, Run stops taking items, cancels the attempts in progress
// (after cfg.Grace), and returns the Summary of what finished, marked
// Incomplete, with ctx's error. A source or sink error stops the run the same
// way and is returned. A panic in a worker (a bug in a strategy, client or
// sink) stops the run and is re-raised in Run's goroutine as a *PanicError.
//
// The run has one clock, the strategy's (strategies.ClockOf: the one
// strategies.WithClock gave it): the workers and the timeline's sampler are
// its goroutines, every timing is read from it, and the waits between rounds
// and between attempts go through it. Give Client, when it waits, the same
// clock. A clock.Sim makes a simulated run: call Run from within Sim.Run,
// and use a Source that does not block (Slice, Generate).
func Run(ctx context.Context, cfg Config, src Source) (measure.Summary, error) {
	if cfg.Client == nil || cfg.Strategy == nil {
		return measure.Summary{}, errors.New("engine: Config.Client and Config.Strategy are required")
	}
	if src == nil {
		return measure.Summary{}, errors.New("engine: nil source")
	}
	r := newRun(ctx, cfg)
	return r.run(src)
}

type run struct {
	cfg  Config
	clk  clock.Clock
	ctx  context.Context // the caller's
	rec  *Recorder
	cost func(provider.Request) strategies.Cost
	into ClientInto // cfg.Client when it is one

	// stop ends dispatch: the caller's ctx ended, or the run is aborted.
	stopCtx context.Context
	stop    context.CancelCauseFunc
	// callCtx is what attempts run under; it outlives stopCtx by Grace.
	callCtx    context.Context
	cancelCall context.CancelFunc

	// strategy is cfg.Strategy, with Acquire ended by stop when attempts
	// have a grace period: a drain finishes calls, it starts none.
	strategy strategies.Strategy

	deliverMu sync.Mutex

	aborted  atomic.Bool
	fatalMu  sync.Mutex
	fatalErr error
	panicked *PanicError
}

func newRun(ctx context.Context, cfg Config) *run {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Resolution == 0 {
		cfg.Resolution = DefaultResolution
	}
	r := &run{cfg: cfg, clk: strategies.ClockOf(cfg.Strategy), ctx: ctx}
	r.rec = NewRecorder(cfg.Strategy, cfg.Resolution)
	r.into, _ = cfg.Client.(ClientInto)
	if c, ok := cfg.Client.(Coster); ok {
		r.cost = c.Cost
	} else {
		r.cost = func(req provider.Request) strategies.Cost {
			return strategies.Cost{InputTokens: provider.EstimateTokens(req), MaxTokens: req.MaxTokens}
		}
	}
	r.stopCtx, r.stop = context.WithCancelCause(ctx)
	r.strategy = cfg.Strategy
	if cfg.Grace > 0 {
		r.callCtx, r.cancelCall = context.WithCancel(context.WithoutCancel(ctx))
		r.strategy = stoppable{Strategy: cfg.Strategy, stop: r.stopCtx}
	} else {
		r.callCtx, r.cancelCall = context.WithCancel(r.stopCtx)
	}
	return r
}

func (r *run) run(src Source) (sum measure.Summary, err error) {
	start := r.clk.Now()
	r.rec.start(start)
	sampler := r.rec.sample(r.clk, start)
	finished := r.clk.NewEvent()
	if r.cfg.Grace > 0 {
		r.clk.Go(func() { r.watchGrace(finished) })
	}

	// Workers are started as items arrive and no worker is idle, up to
	// cfg.Workers, and then live for the run: a worker's stack grows once,
	// not once per item, and memory follows the concurrency actually used.
	work := clock.NewChan[Item](r.clk)
	wg := clock.NewWaitGroup(r.clk)
	workers, taken, exhausted := 0, 0, false
	var srcErr error
	worker := func(first Item) {
		defer wg.Done()
		defer func() {
			if p := recover(); p != nil {
				r.abort(nil, &PanicError{Value: p, Stack: debug.Stack()})
			}
		}()
		t := r.newTask()
		t.it = first
		r.process(t)
		for t.next(work) {
			r.process(t)
		}
	}
	func() {
		defer work.Close()
		// A panic in the source still waits for the workers before it
		// goes on up.
		defer func() {
			if p := recover(); p != nil {
				r.abort(nil, &PanicError{Value: p, Stack: debug.Stack()})
			}
		}()
		for it, err := range src {
			if err != nil {
				srcErr = err
				return
			}
			if r.stopCtx.Err() != nil {
				return
			}
			if work.TrySend(it) {
				taken++
				continue
			}
			if workers < r.cfg.Workers {
				workers++
				taken++
				wg.Add(1)
				first := it // escapes to the worker; it itself stays on the stack
				r.clk.Go(func() { worker(first) })
				continue
			}
			if work.Send(r.stopCtx, it) != nil {
				return
			}
			taken++
		}
		exhausted = true
	}()
	wg.Wait()
	finished.Fire()
	r.cancelCall()
	r.stop(nil)
	end := r.clk.Now()
	sampler.stop(end)

	if r.panicked != nil {
		panic(r.panicked)
	}
	sum = r.rec.summary(end)
	sum.Items = max(taken, r.cfg.Items)
	sum.Incomplete = !exhausted || sum.Canceled > 0 || r.fatalErr != nil
	switch {
	case r.fatalErr != nil:
		return sum, r.fatalErr
	case srcErr != nil:
		return sum, fmt.Errorf("engine: source: %w", srcErr)
	case r.ctx.Err() != nil && sum.Incomplete:
		return sum, context.Cause(r.ctx)
	}
	return sum, nil
}

// watchGrace cancels the attempts in progress Grace after the caller's ctx
// ends, or at once when the run is aborted.
func (r *run) watchGrace(finished *clock.Event) {
	if fired, _ := r.clk.Wait(r.stopCtx, finished, 0); fired {
		return
	}
	if errors.Is(context.Cause(r.stopCtx), errFatal) {
		r.cancelCall()
		return
	}
	if fired, _ := r.clk.Wait(context.Background(), finished, r.cfg.Grace); !fired {
		r.cancelCall()
	}
}

// abort stops the run for a sink error or a panic; the first one wins.
func (r *run) abort(err error, p *PanicError) {
	r.fatalMu.Lock()
	if r.fatalErr == nil && r.panicked == nil {
		r.fatalErr, r.panicked = err, p
	}
	r.fatalMu.Unlock()
	r.aborted.Store(true)
	r.stop(errFatal)
	r.cancelCall()
}

// task is a worker's item in progress. Its state lives here, on the heap,
// and each worker reuses its one task: a worker's frames hold a pointer,
// not Items, Results and Outcomes (a quarter kilobyte each, copied at
// every call), so a call in flight fits in an 8 KiB goroutine stack
// (docs/performance.md, memory per in-flight call; bench/inflight's
// TestWorkerStack).
type task struct {
	r        *run
	attempt  func(ctx context.Context, n int) strategies.Outcome // strategies.Do's attempt func, made once
	it       Item
	cost     strategies.Cost
	policy   *strategies.RetryPolicy
	attempts int // over every call made for the item
	waits    strategies.Waits
	call     strategies.Call
	resp     provider.Response
	res      Result
	released bool // Config.Held said the item is no longer the run's
}

// newTask returns a worker's task.
func (r *run) newTask() *task {
	t := &task{r: r}
	// Attempt n of t's call. (A func literal, not a method value of task,
	// whose wrapper would be a frame more.)
	t.attempt = func(ctx context.Context, n int) strategies.Outcome {
		if r.cfg.Held != nil && r.released(t) {
			return t.call.Outcome
		}
		start := r.clk.Now()
		r.rec.attemptStarted()
		t.send(ctx, n)
		r.attempted(t, n, start)
		return t.call.Outcome
	}
	return t
}

// errNotHeld is the error of the outcome of an attempt not made because
// Config.Held said the item is no longer the run's.
var errNotHeld = errors.New("engine: the item is no longer held (Config.Held)")

// released asks Config.Held whether t's item is still the run's; when it is
// not, it marks t released and sets the outcome that ends its call
// unattempted, in a frame of its own (see task).
//
//go:noinline
func (r *run) released(t *task) bool {
	if r.cfg.Held(t.it.Index, t.it.ID) {
		return false
	}
	t.released = true
	t.call.Outcome = strategies.Outcome{Kind: strategies.Abandoned, Err: errNotHeld}
	return true
}

// send makes attempt n of t's call with the Client: in place when it is a
// ClientInto.
func (t *task) send(ctx context.Context, n int) {
	if c := t.r.into; c != nil {
		c.DoInto(ctx, &t.it.Request, n, &t.resp, &t.call.Outcome)
		return
	}
	t.sendValue(ctx, n)
}

// sendValue is send with Client.Do, in a frame of its own: its results
// and the compiler's copies of them are over a kilobyte.
//
//go:noinline
func (t *task) sendValue(ctx context.Context, n int) {
	t.resp, t.call.Outcome = t.r.cfg.Client.Do(ctx, t.it.Request, n)
}

// next takes the next item from work into t; false when there is none.
// Nothing of the last item is kept while it waits: t is zeroed in place
// (a task literal would be a kilobyte of this frame).
//
//go:noinline
func (t *task) next(work *clock.Chan[Item]) bool {
	r, attempt := t.r, t.attempt
	*t = task{}
	t.r, t.attempt = r, attempt
	it, ok := work.Recv()
	t.it = it
	return ok
}

// process makes t's item's call and delivers its Result, unless the run was
// interrupted before the item finished. The item is made again, as a new
// call, when Check rejected the response (at once, up to MaxInvalid times)
// and when its call ended temporarily and Again says so (after a wait).
func (r *run) process(t *task) {
	t.cost = r.cost(t.it.Request)
	start := r.clk.Now()
	var (
		asked int        // calls made again after Check rejected the response
		round int        // calls made again after a temporary end
		rng   *rand.Rand // the jitter of the backoff between rounds
	)
	t.policy = r.policy(t.it.Index)
	for {
		invalid, ok := r.call(t)
		if t.released {
			return // another's now: not finished here, and not canceled
		}
		if !ok {
			// Interrupted: not finished, so no sink records it.
			r.rec.canceledItem()
			return
		}
		t.attempts = t.res.Attempts
		t.res.Timings.Start = start
		if invalid && asked < r.cfg.MaxInvalid && r.stopCtx.Err() == nil {
			asked++
			continue
		}
		if r.cfg.Again == nil || !t.res.Kind.Temporary() {
			r.deliver(&t.res)
			return
		}
		if r.stopCtx.Err() != nil {
			r.rec.canceledItem()
			return
		}
		if !r.again(&t.res) {
			r.deliver(&t.res)
			return
		}
		// Made again once the server's delay has passed or, without one,
		// after the backoff for the item's round: taken at once, a
		// throttled call would only be throttled again.
		var wait time.Duration
		retryAfter := t.call.Outcome.HasRetryAfter
		if retryAfter {
			wait = serverDelay(&t.call.Outcome)
		} else {
			if rng == nil {
				var seed int64
				if r.cfg.Retry != nil {
					seed = r.cfg.Retry.Seed
				}
				rng = rand.New(rand.NewPCG(uint64(seed), uint64(t.it.Index)))
			}
			wait = strategies.Backoff(round, rng.Int64N)
		}
		round++
		slept, err := r.sleep(wait)
		if retryAfter {
			t.waits.RetryAfter += slept
		} else {
			t.waits.Backoff += slept
		}
		if err != nil {
			r.rec.canceledItem()
			return
		}
	}
}

// policy is the retry policy of item i's calls. A jitter source per item
// keeps runs with the same seed identical, whatever order the workers
// happen to retry in.
func (r *run) policy(i int) *strategies.RetryPolicy {
	return r.cfg.Retry.ForCall(int64(i))
}

// again is Config.Again's verdict on res, in a frame of its own (see task).
//
//go:noinline
func (r *run) again(res *Result) bool { return r.cfg.Again(*res) }

// serverDelay is strategies.ServerDelay of *o, in a frame of its own.
//
//go:noinline
func serverDelay(o *strategies.Outcome) time.Duration { return strategies.ServerDelay(*o) }

// sleep waits d on the run's clock, or until the run stops, and returns how
// long it waited (strategies.Sleep on the run's clock).
func (r *run) sleep(d time.Duration) (time.Duration, error) {
	if d <= 0 {
		return 0, r.stopCtx.Err()
	}
	start := r.clk.Now()
	if err := r.clk.Sleep(r.stopCtx, d); err != nil {
		return clock.Since(r.clk, start), err
	}
	return d, nil
}

// call makes one call for t's item through strategies.Do and puts its
// Result in t.res (attempts, the item's attempts before it, and waits are
// the item's totals) and the last attempt's Outcome in t.call.Outcome. It
// reports whether Check rejected the response; ok is false when the run
// was interrupted before the call ended.
func (r *run) call(t *task) (invalid, ok bool) {
	var err error
	t.call, err = strategies.Do(r.callCtx, r.strategy, t.policy, t.cost, t.attempt)
	t.waits = t.waits.Add(t.call.Waits)
	return r.result(t, err)
}

// attempted records attempt n of t's call, started at start and ended with
// t.call.Outcome, in a frame of its own (see task).
//
//go:noinline
func (r *run) attempted(t *task, n int, start time.Time) {
	a := Attempt{Index: t.it.Index, ID: t.it.ID, N: t.attempts + n, Cost: t.cost, Start: start, Outcome: t.call.Outcome}
	r.rec.Attempt(a)
	if r.cfg.OnAttempt != nil {
		r.cfg.OnAttempt(a)
	}
}

// result makes t.res from t.call and the error strategies.Do returned.
//
//go:noinline
func (r *run) result(t *task, err error) (invalid, ok bool) {
	o := &t.call.Outcome
	var checkErr error // Check's verdict on the response, when it rejected it
	if err == nil && o.Kind == strategies.Success && r.cfg.Check != nil {
		if checkErr = r.cfg.Check(t.it, t.resp); checkErr != nil {
			r.rec.invalidResponse()
		}
	}
	res := &t.res
	waits := &t.waits
	*res = Result{Index: t.it.Index, ID: t.it.ID, Metadata: t.it.Metadata, Attempts: t.attempts + t.call.Attempts}
	res.Timings.End = r.clk.Now()
	res.Timings.WaitSlot = waits.Slot
	res.Timings.WaitTokens = waits.Tokens
	res.Timings.WaitRetryAfter = waits.RetryAfter
	res.Timings.Backoff = waits.Backoff

	switch {
	case err != nil && r.stopCtx.Err() != nil,
		o.Kind == strategies.Canceled && r.callCtx.Err() != nil:
		return false, false
	case err != nil:
		res.Err = &ResultError{Type: "rejected", Message: err.Error()}
		res.Kind = strategies.Failed
		if t.call.Attempts > 0 {
			res.Err.Status, res.Err.Type, res.Err.Message = provider.Describe(*o)
			res.Kind = kindOf(*o)
		}
	case o.Kind == strategies.Success && checkErr != nil:
		res.Text, res.StopReason, res.Usage = t.resp.Text, t.resp.StopReason, t.resp.Usage
		res.Err = &ResultError{Status: o.Status, Type: "validation_error", Message: checkErr.Error()}
		res.Kind = strategies.Failed
	case o.Kind == strategies.Success:
		res.Text, res.StopReason, res.Usage = t.resp.Text, t.resp.StopReason, t.resp.Usage
		res.Timings.TTFT = t.resp.TTFT
	default:
		res.Usage = o.Usage
		status, typ, msg := provider.Describe(*o)
		res.Err = &ResultError{Status: status, Type: typ, Message: msg}
		res.Kind = kindOf(*o)
	}
	return checkErr != nil, true
}

// deliver hands res to the sinks, then the recorder and OnResult, one
// result at a time: the summary counts what the sinks recorded.
func (r *run) deliver(res *Result) {
	r.deliverMu.Lock()
	defer r.deliverMu.Unlock()
	if r.aborted.Load() {
		// A sink failed: nothing more is recorded anywhere, so the item
		// counts as not finished, and a resumed batch makes it again.
		r.rec.canceledItem()
		return
	}
	for _, s := range r.cfg.Sinks {
		if err := s.Put(*res); err != nil {
			r.abort(fmt.Errorf("engine: sink: %w", err), nil)
			r.rec.canceledItem()
			return
		}
	}
	r.rec.Put(*res) //nolint:errcheck // the recorder never fails
	if r.cfg.OnResult != nil {
		r.cfg.OnResult(*res)
	}
}

// stoppable is a Strategy whose Acquire also ends when stop does.
type stoppable struct {
	strategies.Strategy
	stop context.Context
}

// Clock tells the wrapped strategy's clock, so that Do waits on it.
func (s stoppable) Clock() clock.Clock { return strategies.ClockOf(s.Strategy) }

func (s stoppable) Acquire(ctx context.Context, c strategies.Cost) (strategies.Permit, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	unhook := context.AfterFunc(s.stop, cancel)
	defer unhook()
	return s.Strategy.Acquire(orStopped{ctx, s.stop}, c)
}

// orStopped is a context that has ended once stop has, as Err reports at
// once: its Done closes a moment later, when context.AfterFunc has called
// cancel in a goroutine of its own, while a simulated clock, which checks
// the contexts of the waits with Err, must see the end at the instant stop
// ended.
type orStopped struct {
	context.Context
	stop context.Context
}

func (c orStopped) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.stop.Err() != nil {
		return context.Canceled
	}
	return nil
}
