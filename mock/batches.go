package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/openaichat"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// This file is the provider batch APIs' engine, shared by Anthropic's
// Message Batches (batches_anthropic.go) and OpenAI's Batch API
// (batches_openai.go, with its Files API in files.go): the configuration,
// the processing-time model and the content of each result. See
// docs/batch-api.md.
//
// Nothing here runs on a timer. A batch's whole schedule is planned when
// it is created (when each of its requests finishes, when it expires), and
// every answer computes the batch's state at the Server's clock's now: in a
// simulated run (WithClock) a batch of six hours ends the moment its
// client's poll sleeps past six hours, and the 24-hour expiry is as
// testable.

// Batches configures the batch APIs: how fast their queue drains, their
// per-request faults and their limits. Its YAML form is the `batches:`
// block of the server configuration; the zero value is the documented
// defaults.
type Batches struct {
	// DrainRate is how many batch requests a second the server processes,
	// over every key and batch, first come first served. 0 means
	// DefaultBatchDrainRate.
	DrainRate float64 `yaml:"drain_rate,omitempty"`
	// Startup is how long a batch waits after its creation before its
	// first request is processed (OpenAI's validating status). 0 means
	// DefaultBatchStartup.
	Startup time.Duration `yaml:"startup,omitempty"`
	// Finalize is how long OpenAI's finalizing status lasts, after the
	// last request. 0 means DefaultBatchFinalize.
	Finalize time.Duration `yaml:"finalize,omitempty"`
	// CancelDelay is how long canceling (cancelling) lasts. 0 means
	// DefaultBatchCancelDelay.
	CancelDelay time.Duration `yaml:"cancel_delay,omitempty"`
	// Expiry is how long after its creation a batch expires: its
	// requests not yet processed then end expired. 0 means 24 hours, as
	// both providers document.
	Expiry time.Duration `yaml:"expiry,omitempty"`
	// Errored is the probability that a batch request ends errored with a
	// server error (api_error; OpenAI's status 500) rather than
	// succeeding, drawn per request from the seeded source.
	Errored float64 `yaml:"errored,omitempty"`
	// Anthropic and OpenAI are each API's limits.
	Anthropic AnthropicBatchLimits `yaml:"anthropic,omitempty"`
	OpenAI    OpenAIBatchLimits    `yaml:"openai,omitempty"`
}

// AnthropicBatchLimits are the Message Batches API's limits, per API key
// (the mock's organization).
type AnthropicBatchLimits struct {
	// MaxRequests caps the requests of one batch; 0 means 100,000.
	MaxRequests int `yaml:"max_requests,omitempty"`
	// MaxBytes caps the body of one batch creation; 0 means 256 MB.
	MaxBytes int64 `yaml:"max_bytes,omitempty"`
	// QueueRequests caps the batch requests not yet processed, over all
	// of a key's batches and models (the rate-limit page's "maximum batch
	// requests in processing queue"); a creation that would pass it gets
	// 429 rate_limit_error. 0 is unlimited.
	QueueRequests int `yaml:"queue_requests,omitempty"`
}

// OpenAIBatchLimits are the Batch API's limits, per API key.
type OpenAIBatchLimits struct {
	// MaxRequests caps the requests of one input file; 0 means 50,000.
	MaxRequests int `yaml:"max_requests,omitempty"`
	// MaxBytes caps one input file; 0 means 200 MB.
	MaxBytes int64 `yaml:"max_bytes,omitempty"`
	// EnqueuedTokens caps, by model pattern (the longest match, as
	// limits_by_model), the input tokens of a key's batches not yet
	// ended; a batch that would pass it fails its validation with
	// "Enqueued token limit reached". A model no pattern matches is
	// unlimited.
	EnqueuedTokens map[string]int `yaml:"enqueued_tokens,omitempty"`
}

// The defaults of Batches. DrainRate's is a model, not a published
// figure: 30 requests a second ends the largest Anthropic batch (100,000
// requests) in under an hour, as "most batches finish in less than 1 hour".
const (
	DefaultBatchDrainRate   = 30.0
	DefaultBatchStartup     = 30 * time.Second
	DefaultBatchFinalize    = 10 * time.Second
	DefaultBatchCancelDelay = 10 * time.Second
	DefaultBatchExpiry      = 24 * time.Hour

	defaultAnthropicBatchRequests = 100_000
	defaultAnthropicBatchBytes    = 256_000_000
	defaultOpenAIBatchRequests    = 50_000
	defaultOpenAIBatchBytes       = 200 << 20
)

func (b Batches) drainStep() time.Duration {
	r := b.DrainRate
	if r == 0 {
		r = DefaultBatchDrainRate
	}
	return max(time.Duration(float64(time.Second)/r), 1)
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func validateBatches(b Batches, check func(bool, string, string, ...any)) {
	check(b.DrainRate >= 0 && b.DrainRate <= 1e6, "batches.drain_rate", "must be in [0, 1e6] requests a second (0 is the default, %v), got %v", DefaultBatchDrainRate, b.DrainRate)
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"startup", b.Startup}, {"finalize", b.Finalize}, {"cancel_delay", b.CancelDelay}, {"expiry", b.Expiry}} {
		check(d.v >= 0 && d.v <= 365*24*time.Hour, "batches."+d.key, "must be in [0, 8760h], got %v", d.v)
	}
	check(b.Errored >= 0 && b.Errored <= 1, "batches.errored", "must be a rate in [0, 1], got %v", b.Errored)
	check(b.Anthropic.MaxRequests >= 0, "batches.anthropic.max_requests", "must not be negative, got %d", b.Anthropic.MaxRequests)
	check(b.Anthropic.MaxBytes >= 0, "batches.anthropic.max_bytes", "must not be negative, got %d", b.Anthropic.MaxBytes)
	check(b.Anthropic.QueueRequests >= 0, "batches.anthropic.queue_requests", "must not be negative, got %d", b.Anthropic.QueueRequests)
	check(b.OpenAI.MaxRequests >= 0, "batches.openai.max_requests", "must not be negative, got %d", b.OpenAI.MaxRequests)
	check(b.OpenAI.MaxBytes >= 0, "batches.openai.max_bytes", "must not be negative, got %d", b.OpenAI.MaxBytes)
	for _, p := range admission.PoolPatterns(b.OpenAI.EnqueuedTokens) {
		_, err := path.Match(p, "")
		key := "batches.openai.enqueued_tokens." + p
		check(err == nil && p != "", key, "want a model pattern such as gpt-4o*, got %q", p)
		check(b.OpenAI.EnqueuedTokens[p] >= 0, key, "must not be negative, got %d", b.OpenAI.EnqueuedTokens[p])
	}
}

// batchAPI is one provider's batch API. A batch belongs to the API that
// created it, whatever the format of its requests (an OpenAI batch's are
// Chat Completions or Responses requests): it is listed, found and counted
// against the queue limits there only.
type batchAPI struct {
	// wr is the format whose envelope, request-id header, common headers,
	// authentication and version check the API's endpoints answer with;
	// its Spec's Catalog is the provider whose formats a batch may carry.
	wr wire.Format
	// object is what the API calls a batch, in a 404's message.
	object string
}

var (
	anthropicBatches = &batchAPI{wr: anthropic.Format{}, object: "message_batch"}
	openaiBatches    = &batchAPI{wr: openaichat.Format{}, object: "batch"}
)

// batchStore holds every batch and file of a Server. Its lock is taken
// before the Server's (which generating content needs), never after.
type batchStore struct {
	mu      sync.Mutex
	batches map[string]*mbatch
	order   []*mbatch // by creation
	files   map[string]*mfile
	fileSeq []*mfile
	// free is when the server's queue has processed every request planned
	// so far: a new batch's requests start after it.
	free time.Time
}

func (bs *batchStore) init() {
	if bs.batches == nil {
		bs.batches = make(map[string]*mbatch)
		bs.files = make(map[string]*mfile)
	}
}

// reset forgets every batch and file, and the queue, as a new Server has
// none (Server.Reset). It takes bs.mu, so the caller must not hold the
// Server's lock (the order is bs.mu, then s.mu).
func (bs *batchStore) reset() {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.batches, bs.order, bs.files, bs.fileSeq = nil, nil, nil, nil
	bs.free = time.Time{}
}

// Outcomes of a batch request.
const (
	outcomeSucceeded = "succeeded"
	outcomeErrored   = "errored"
	outcomeCanceled  = "canceled"
	outcomeExpired   = "expired"
)

// mbatch is one batch of either API.
type mbatch struct {
	id, key string
	api     *batchAPI   // the API it was created with
	wr      wire.Format // the requests' wire format
	created time.Time
	expires time.Time
	start   time.Time     // when its first request starts being processed
	step    time.Duration // the time of one request
	// planned is how many requests are processed before expiry (the
	// rest expire); processed is planned, or fewer after a cancel.
	planned int
	reqs    []breq
	// cancelAt is when a cancel was asked; zero when none was.
	cancelAt    time.Time
	cancelDelay time.Duration
	finalize    time.Duration
	deleted     bool

	// OpenAI's: the endpoint, input file, metadata, the model of its
	// lines, its input tokens (for the enqueued-token limit), and a
	// validation failure (failed status).
	endpoint, inputFile string
	metadata            map[string]string
	model               string
	inputTokens         int
	failure             []batchLineError

	// results, once materialized (the first answer after the batch
	// ended): each request's outcome and its result line.
	done     bool
	outcomes []string
	lines    [][]byte
	// OpenAI's output and error files, once materialized.
	outputFile, errorFile string
	usage                 batchUsage
}

type batchUsage struct{ input, output, requests int }

// breq is one request of a batch.
type breq struct {
	customID string
	params   json.RawMessage // the request body
	fault    bool            // drawn errored (Batches.Errored)
	input    int             // input tokens, for the limits
	// bad is why the body is invalid, found at creation: the request
	// ends errored (invalid_request_error; OpenAI's status 400).
	bad *wire.APIError
}

// batchLineError is a validation error of an OpenAI input file.
type batchLineError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   any    `json:"param"`
	Line    any    `json:"line"`
}

// plan schedules b's requests on the server's queue at now.
func (bs *batchStore) plan(b *mbatch, cfg Batches, now time.Time) {
	b.step = cfg.drainStep()
	b.created = now
	b.expires = now.Add(orDuration(cfg.Expiry, DefaultBatchExpiry))
	b.cancelDelay = orDuration(cfg.CancelDelay, DefaultBatchCancelDelay)
	b.finalize = orDuration(cfg.Finalize, DefaultBatchFinalize)
	b.start = now.Add(orDuration(cfg.Startup, DefaultBatchStartup))
	if b.failure != nil { // fails its validation: never queued
		return
	}
	if bs.free.After(b.start) {
		b.start = bs.free
	}
	n := len(b.reqs)
	b.planned = n
	if b.start.Add(time.Duration(n) * b.step).After(b.expires) {
		b.planned = max(0, min(n, int(b.expires.Sub(b.start)/b.step)))
	}
	bs.free = b.start.Add(time.Duration(b.planned) * b.step)
}

// processedAt is how many of b's requests have been processed at t.
func (b *mbatch) processedAt(t time.Time) int {
	if t.Before(b.start) {
		return 0
	}
	return min(b.planned, int(t.Sub(b.start)/b.step))
}

// processed is how many of b's requests are processed in the end.
func (b *mbatch) processed() int {
	if !b.cancelAt.IsZero() {
		return b.processedAt(b.cancelAt)
	}
	return b.planned
}

// naturalEnd is when b's processing ends without a cancel: after its last
// request, or at its expiry.
func (b *mbatch) naturalEnd() time.Time {
	if b.planned < len(b.reqs) && b.failure == nil {
		return b.expires
	}
	return b.start.Add(time.Duration(b.planned) * b.step)
}

// endedAt is when b's processing ends, a cancel included.
func (b *mbatch) endedAt() time.Time {
	end := b.naturalEnd()
	if !b.cancelAt.IsZero() && b.cancelAt.Before(end) {
		return b.cancelAt.Add(b.cancelDelay)
	}
	return end
}

// canceledBefore reports whether a cancel asked before the natural end
// takes effect.
func (b *mbatch) canceled() bool {
	return !b.cancelAt.IsZero() && b.cancelAt.Before(b.naturalEnd())
}

// outcome is request k's outcome once b has ended.
func (b *mbatch) outcome(k int) string {
	switch {
	case k < b.processed():
		if b.reqs[k].fault || b.reqs[k].bad != nil {
			return outcomeErrored
		}
		return outcomeSucceeded
	case b.canceled():
		return outcomeCanceled
	}
	return outcomeExpired
}

// pending is how many of b's requests are still in the processing queue
// at now.
func (b *mbatch) pending(now time.Time) int {
	if b.deleted || !now.Before(b.endedAt()) {
		return 0
	}
	if b.canceled() && !now.Before(b.cancelAt) {
		return 0
	}
	if b.failure != nil {
		return 0
	}
	// The requests that will expire wait in the queue until then.
	return len(b.reqs) - b.processedAt(now)
}

// answer is the content of one succeeded request: its wire format's
// response body, from the generator the synchronous endpoints use, and its
// usage. A body that no longer decodes (it was checked at creation) is an
// error result.
func (s *Server) answer(b []byte, wr wire.Format, params []byte, id string) (_ []byte, in, out int, e *wire.APIError) {
	var c wire.Call
	if err := wr.Decode(params, s.cfg.Output.DefaultMaxTokens, &c); err != nil {
		_, ae := refusal(err, http.StatusBadRequest)
		return b, 0, 0, &ae
	}
	if err := s.checkRequest(wr, &c); err != nil {
		_, ae := refusal(err, http.StatusBadRequest)
		return b, 0, 0, &ae
	}
	if c.Stream {
		return b, 0, 0, &wire.APIError{Msg: "stream: streaming is not supported in a batch request"}
	}
	s.compose(&c)
	now := s.clock.Now()
	s.mu.Lock()
	n, capped := s.outputLength(&c)
	s.mu.Unlock()
	r := wire.Result{ID: id, Created: now, Clock: s.clock, N: n, Capped: capped, Text: s.text}
	out0 := len(b)
	b, err := wr.Body(b, &c, &r)
	if err != nil {
		return b[:out0], 0, 0, &wire.APIError{Msg: "encoding the response: " + err.Error()}
	}
	return b, c.Input, n, nil
}

// checkParams decodes one request body as its wire format's endpoint
// would, for the errors a batch reports at creation.
func (s *Server) checkParams(wr wire.Format, params []byte) (input int, e *wire.APIError) {
	var c wire.Call
	if err := wr.Decode(params, s.cfg.Output.DefaultMaxTokens, &c); err != nil {
		_, ae := refusal(err, http.StatusBadRequest)
		return 0, &ae
	}
	if err := s.checkRequest(wr, &c); err != nil {
		_, ae := refusal(err, http.StatusBadRequest)
		return 0, &ae
	}
	if c.Stream {
		return 0, &wire.APIError{Msg: "stream: streaming is not supported in a batch request", Param: "stream"}
	}
	return c.Input, nil
}

// batchPrice is what model's batch requests cost: Price's batch prices,
// or half its synchronous ones.
func batchPrice(prices map[string]Price, model string) (in, out float64) {
	p := admission.PriceOf(prices, model)
	in, out = p.BatchInput, p.BatchOutput
	if in == 0 {
		in = p.Input / 2
	}
	if out == 0 {
		out = p.Output / 2
	}
	return in, out
}

// BatchStats are the batch APIs' totals since the server started or was
// last Reset.
type BatchStats struct {
	Batches   int `json:"batches"`
	Requests  int `json:"requests"`
	Succeeded int `json:"succeeded"`
	Errored   int `json:"errored"`
	Canceled  int `json:"canceled"`
	Expired   int `json:"expired"`
	// InputTokens and OutputTokens are the succeeded requests' usage, and
	// USD what they cost at the batch prices (Price.BatchInput and
	// BatchOutput).
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	USD          float64 `json:"usd"`
}

// BatchStats returns the batch APIs' totals: the batches created, and the
// outcomes and usage of those whose results were materialized (read, or
// asked for, after they ended).
func (s *Server) BatchStats() BatchStats {
	bs := &s.batch
	bs.mu.Lock()
	defer bs.mu.Unlock()
	var st BatchStats
	for _, b := range bs.order {
		st.Batches++
		st.Requests += len(b.reqs)
		if !b.done {
			continue
		}
		for _, o := range b.outcomes {
			switch o {
			case outcomeSucceeded:
				st.Succeeded++
			case outcomeErrored:
				st.Errored++
			case outcomeCanceled:
				st.Canceled++
			case outcomeExpired:
				st.Expired++
			}
		}
		st.InputTokens += b.usage.input
		st.OutputTokens += b.usage.output
		in, out := batchPrice(s.cfg.Prices, b.model)
		st.USD += (float64(b.usage.input)*in + float64(b.usage.output)*out) / 1e6
	}
	return st
}

// materialize computes b's outcomes and result lines once it has ended,
// with line(k, outcome) making request k's line. bs.mu is held.
func (s *Server) materialize(b *mbatch, line func(k int, outcome string, body []byte, e *wire.APIError) []byte) {
	if b.done {
		return
	}
	b.done = true
	b.outcomes = make([]string, len(b.reqs))
	b.lines = make([][]byte, len(b.reqs))
	var buf []byte
	for k := range b.reqs {
		o := b.outcome(k)
		var e *wire.APIError
		var body []byte
		switch {
		case o == outcomeErrored && b.reqs[k].bad != nil:
			e = b.reqs[k].bad
			e.Code = "invalid_request"
		case o == outcomeErrored:
			e = &wire.APIError{Msg: "Internal server error"}
		case o == outcomeSucceeded:
			var in, out int
			buf, in, out, e = s.answer(buf[:0], b.wr, b.reqs[k].params, s.newID(b.wr.Spec().IDPrefix))
			if e != nil {
				o = outcomeErrored
				e.Code = "invalid_request"
			} else {
				body = buf
				b.usage.input += in
				b.usage.output += out
				b.usage.requests++
			}
		}
		b.outcomes[k] = o
		b.lines[k] = line(k, o, body, e)
		b.reqs[k].params = nil // the body is not needed any more
	}
	if b.usage.input+b.usage.output > 0 {
		in, out := batchPrice(s.cfg.Prices, b.model)
		usd := (float64(b.usage.input)*in + float64(b.usage.output)*out) / 1e6
		s.mu.Lock()
		s.key(b.key).lim.AddUSD(usd)
		s.mu.Unlock()
	}
}

// modelOf reads the model of a request body; "" when it has none.
func modelOf(params []byte) string {
	var m struct {
		Model string `json:"model"`
	}
	json.Unmarshal(params, &m)
	return m.Model
}

// keyBatches returns key's batches of api not deleted, newest first.
// bs.mu is held.
func (bs *batchStore) keyBatches(key string, api *batchAPI) []*mbatch {
	var out []*mbatch
	for _, b := range slices.Backward(bs.order) {
		if b.key == key && !b.deleted && b.api == api {
			out = append(out, b)
		}
	}
	return out
}

// page cuts list (newest first) to the page a list request asks for:
// limit items after the id after (older than it) or before the id before
// (newer than it). ok is false when the cursor names no batch.
func page(list []*mbatch, after, before string, limit int) (out []*mbatch, more, ok bool) {
	idx := func(id string) int {
		return slices.IndexFunc(list, func(b *mbatch) bool { return b.id == id })
	}
	switch {
	case after != "":
		i := idx(after)
		if i < 0 {
			return nil, false, false
		}
		lo := i + 1
		hi := min(len(list), lo+limit)
		return list[lo:hi], hi < len(list), true
	case before != "":
		hi := idx(before)
		if hi < 0 {
			return nil, false, false
		}
		lo := max(0, hi-limit)
		return list[lo:hi], lo > 0, true
	}
	hi := min(len(list), limit)
	return list[:hi], hi < len(list), true
}

// queueWait is how long until key's queue of api's batches holds room
// for need more requests under limit, at now: the time the excess-th
// pending request finishes. bs.mu is held.
func (bs *batchStore) queueWait(key string, api *batchAPI, now time.Time, excess int) time.Duration {
	for _, b := range bs.order {
		if b.key != key || b.api != api {
			continue
		}
		p := b.pending(now)
		if p == 0 {
			continue
		}
		if excess <= p {
			done := b.processedAt(now) + excess
			return b.start.Add(time.Duration(done) * b.step).Sub(now)
		}
		excess -= p
	}
	return time.Second
}

func fmtCount(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// PriceOf is model's synchronous price: that of Prices' longest matching
// pattern, zero when none matches.
func (c Config) PriceOf(model string) Price { return admission.PriceOf(c.Prices, model) }

// BatchPriceOf is model's batch price in USD per million input and output
// tokens: Price.BatchInput and BatchOutput, or half the synchronous ones.
func (c Config) BatchPriceOf(model string) (in, out float64) { return batchPrice(c.Prices, model) }
