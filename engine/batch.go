package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/provider"
)

// BatchInput is one line of a batch's input file (items.jsonl):
//
//	{"id": "t-1", "prompt": "Classify: …", "max_tokens": 50, "metadata": {"row": 1}}
//	{"id": "t-2", "system": "Be brief.", "messages": [{"role": "user", "content": "…"}]}
//
// ID is required and unique within the file; exactly one of Prompt and
// Messages is required. Other keys are errors (a misspelt key would otherwise
// be silently ignored).
type BatchInput struct {
	ID string `json:"id"`
	// Prompt is the user message; shorthand for one user message.
	Prompt string `json:"prompt,omitempty"`
	// Messages is the conversation, roles "user" and "assistant".
	Messages []provider.Message `json:"messages,omitempty"`
	// System is the system prompt.
	System string `json:"system,omitempty"`
	// MaxTokens is the call's max_tokens; 0 means Batch.MaxTokens.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Metadata is any JSON value, copied to the result line untouched.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// InputError is one problem with one line of a batch's input, in the one
// field-error type every configuration and input file of ratelab reports
// (File, Line, Path: the key at fault, empty for the whole line; Message):
//
//	items.jsonl:12: max_tokens: must be positive, got -1
type InputError = fielderr.Error

// MaxInputErrors is how many input problems InputErrors lists; the rest are
// only counted, so that a file of a million bad lines costs no memory.
const MaxInputErrors = 100

// InputErrors is every problem of a batch's input file, found by the
// validating pass before any call is made: the first MaxInputErrors, in
// line order, and how many there were.
type InputErrors struct {
	Errs  []*InputError `json:"errors,omitempty"`
	Total int           `json:"total"`
}

func (e *InputErrors) add(ie *InputError) {
	e.Total++
	if len(e.Errs) < MaxInputErrors {
		e.Errs = append(e.Errs, ie)
	}
}

// Error lists the problems one a line.
func (e *InputErrors) Error() string {
	var b strings.Builder
	for i, ie := range e.Errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(ie.Error())
	}
	if more := e.Total - len(e.Errs); more > 0 {
		fmt.Fprintf(&b, "\n… and %d more", more)
	}
	return b.String()
}

// Unwrap returns the listed problems, for errors.As.
func (e *InputErrors) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, ie := range e.Errs {
		out[i] = ie
	}
	return out
}

// Batch is a resumable batch: the items of a JSONL input file run through
// the engine, and one JSONL result line per item appended to an output file
// the moment the item finishes, so that the output holds every input id
// exactly once however often the batch is killed and rerun.
//
// Run works in three steps:
//
//  1. The input is read once to validate it, streaming and keeping only a
//     set of ids (128-bit hashes) with the line of each: malformed lines,
//     missing or wrong fields and duplicate ids are an *InputErrors naming
//     each line, before any call is made, unless SkipInvalid is set.
//  2. The output, if it exists, is read: the ids it holds are done and are
//     skipped. A torn last line (a process killed mid-write) is cut off, and
//     that item made again. With RetryFailed, the output is first rewritten
//     without its error lines (to a temporary file renamed into place, so a
//     kill at any moment leaves either the old file or the new one), so the
//     failed items are made again and the file still holds each id once.
//  3. The input is streamed again: each item not done goes through Run. A
//     result is appended when it is terminal: a success, or a permanent
//     failure (400, 401, 403, 413, a validation error, or any failure
//     left once Config.Retry's retries are spent). A throttled result (429,
//     529, 503, or a stream's rate_limit_error or overloaded_error event:
//     Result.Kind Throttled or Overloaded) is not terminal: through
//     Config.Again, the engine's re-queue, the item's worker releases its
//     permit, waits for the server's retry-after (or, without one, the SDKs'
//     backoff for its round: 0.5 s doubling to 8 s, jittered from
//     Config.Retry's seed) and makes it again as a new call, retries
//     afresh; its result counts every attempt and wait of every round.
//
// A connection that failed before any response byte (refused, reset,
// closed, unreachable: Result.Kind Unreachable) is a transient fault too: the
// item is made again the same way, with the SDKs' jittered backoff, however
// many retries Config.Retry allows. After CircuitThreshold such failures in
// a row the batch's circuit opens: it pauses every item (no slot taken, no
// attempt made) but one probe per backoff period (0.5 s doubling to 8 s,
// jittered), and closes at the first response, resuming the batch.
// OnOutage hears of both. An endpoint still down after MaxOutage stops the
// batch with ErrOutage, recording nothing for the items not made. Only what
// repeating cannot fix (a 4xx, a TLS failure, a reply that is not HTTP) is
// recorded as an error.
//
// A result's Index is its input line number less one, whatever order the
// items finish in.
//
// Ending ctx stops taking items, lets the calls in progress finish for up to
// Config.Grace, and returns what finished with ctx's error: the items that
// did not finish have no line, and the next run makes them.
//
// Two batches must not append to one output at once; Run holds an advisory
// lock on the output while it runs (where the platform has flock).
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
	// RetryFailed makes the items whose recorded result is an error again.
	RetryFailed bool
	// SkipInvalid skips invalid and duplicate lines (reported in
	// BatchSummary.Invalid) instead of refusing to start.
	SkipInvalid bool
	// MaxOutage is how long the batch waits for an endpoint that stopped
	// answering (its circuit open) before it stops with ErrOutage, the items
	// still to make left for the next run. Zero means DefaultMaxOutage; a
	// negative value waits as long as it takes.
	MaxOutage time.Duration
	// OnOutage, when set, is called when the circuit opens (the endpoint
	// stopped answering: the batch pauses) and when it closes (it resumes).
	OnOutage func(Outage)
	// OnStart, when set, is called once the input is validated and the
	// output read, before the first call, with the counts known then
	// (Items, Invalid, DoneOK, DoneFailed, Retried, Repaired, and Remaining:
	// the items to make).
	OnStart func(BatchSummary)
	// Config is the run's configuration. Its Sinks and OnResult receive
	// only terminal results, after the output has them; OnAttempt sees every
	// attempt. Items is set by Run.
	Config Config
}

// DefaultBatchMaxTokens is Batch.MaxTokens when it is zero.
const DefaultBatchMaxTokens = 1024

// maxLineBytes bounds one input line (a long conversation is still far
// shorter).
const maxLineBytes = 64 << 20

// BatchSummary is how a batch run went. Counts of items are the batch's own;
// Run is the engine's accounting of every attempt of this run.
type BatchSummary struct {
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
	// failed, and it was made again (Config.Again said so).
	Requeued int `json:"requeued"`
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
}

// AllOK reports whether every item of the input has a successful result.
func (s *BatchSummary) AllOK() bool {
	return s.Remaining == 0 && s.DoneFailed == 0 && s.Failed == 0 && s.Invalid.Total == 0
}

// idKey identifies an id by two independent 64-bit hashes: a collision
// between two of a million ids has a probability near 10⁻²⁷, and an entry
// of the set costs the same few tens of bytes whatever the id's length.
type idKey [2]uint64

var idSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(id string) idKey {
	return idKey{maphash.String(idSeeds[0], id), maphash.String(idSeeds[1], id)}
}

// idState is what a batch knows of one id: the input line that carries it
// (0 when only the output has it) and whether the output holds it.
type idState struct {
	line int32
	done uint8
}

const (
	notDone uint8 = iota
	doneOK
	doneFailed
)

// Run runs the batch; see Batch. Its error is an *InputErrors when the
// input is invalid (no call was made), a file error naming the file, ctx's
// error when interrupted, or the engine's. The summary is meaningful
// whenever the run started.
func (b *Batch) Run(ctx context.Context) (BatchSummary, error) {
	var sum BatchSummary
	if b.Config.Client == nil || b.Config.Strategy == nil {
		return sum, errors.New("engine: Batch.Config.Client and Config.Strategy are required")
	}
	if b.Input == "" || b.Output == "" {
		return sum, errors.New("engine: Batch.Input and Batch.Output are required")
	}
	if b.MaxTokens < 0 {
		return sum, fmt.Errorf("engine: Batch.MaxTokens must not be negative, got %d", b.MaxTokens)
	}
	ids, err := b.validate(ctx, &sum)
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
	if todo == 0 {
		return sum, out.Close()
	}

	cfg := b.Config
	cfg.Items = todo
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
	var requeued atomic.Int64
	cfg.Again = func(Result) bool {
		requeued.Add(1)
		return true
	}
	userSinks, onResult, onAttempt := cfg.Sinks, cfg.OnResult, cfg.OnAttempt
	cfg.OnResult = nil
	cfg.OnAttempt = func(a Attempt) {
		circ.observe(a)
		if onAttempt != nil {
			onAttempt(a)
		}
	}
	jsonl := NewJSONL(out)
	cfg.Sinks = []Sink{sinkFunc(func(r Result) error {
		if err := jsonl.Put(r); err != nil {
			return err // names the output already (an *os.PathError)
		}
		sum.Remaining--
		if r.OK() {
			sum.Completed++
		} else {
			sum.Failed++
			sum.FailedByType[r.Err.Type]++
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

	sum.Run, err = Run(runCtx, cfg, b.source(ids))
	sum.Requeued = int(requeued.Load())
	outages, down := circ.stats()
	sum.Outages, sum.OutageSeconds = outages, down.Seconds()
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", b.Output, cerr)
	}
	return sum, err
}

// sinkFunc adapts a function to Sink.
type sinkFunc func(Result) error

func (f sinkFunc) Put(r Result) error { return f(r) }

// source streams the input's items still to do.
func (b *Batch) source(ids map[idKey]idState) Source {
	return func(yield func(Item, error) bool) {
		err := b.scan(func(line int, in *BatchInput, _ *InputError) bool {
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
			yield(Item{}, err)
		}
	}
}

// item makes the engine item of input line line.
func (b *Batch) item(line int, in *BatchInput) Item {
	msgs := in.Messages
	if in.Prompt != "" {
		msgs = []provider.Message{{Role: "user", Content: in.Prompt}}
	}
	maxTokens := in.MaxTokens
	if maxTokens == 0 {
		maxTokens = b.MaxTokens
	}
	if maxTokens == 0 {
		maxTokens = DefaultBatchMaxTokens
	}
	return Item{
		Index: line - 1,
		ID:    in.ID,
		Request: provider.Request{
			Model:          b.Model,
			System:         in.System,
			Messages:       msgs,
			MaxTokens:      maxTokens,
			Stream:         b.Stream,
			IdempotencyKey: in.ID,
		},
		Metadata: in.Metadata,
	}
}

// validate is the first pass over the input: it checks every line and
// returns the set of ids, each with the line of its first occurrence.
func (b *Batch) validate(ctx context.Context, sum *BatchSummary) (map[idKey]idState, error) {
	ids := make(map[idKey]idState)
	var bad InputErrors
	err := b.scan(func(line int, in *BatchInput, ie *InputError) bool {
		if line%4096 == 0 && ctx.Err() != nil {
			return false
		}
		sum.Lines++
		if ie != nil {
			bad.add(ie)
			return true
		}
		k := keyOf(in.ID)
		if prev, dup := ids[k]; dup {
			bad.add(&InputError{File: b.Input, Line: line, Path: "id",
				Message: fmt.Sprintf("duplicate id %q (first on line %d)", in.ID, prev.line)})
			return true
		}
		if line > 1<<31-1 {
			bad.add(&InputError{File: b.Input, Line: line, Message: "too many lines"})
			return false
		}
		ids[k] = idState{line: int32(line)}
		sum.Items++
		return true
	})
	if err == nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		return nil, err
	}
	if bad.Total > 0 && !b.SkipInvalid {
		return nil, &bad
	}
	sum.Invalid = bad
	return ids, nil
}

// scan reads the input line by line, calling fn with each non-blank line's
// number and either its decoded item or its problem, until fn returns
// false. Its error is a read error naming the file.
func (b *Batch) scan(fn func(line int, in *BatchInput, ie *InputError) bool) error {
	f, err := os.Open(b.Input)
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	var long []byte // a line longer than the reader's buffer
	for line := 1; ; line++ {
		data, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], data...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxLineBytes {
				data, err = br.ReadSlice('\n')
				long = append(long, data...)
			}
			data = long
			if len(long) > maxLineBytes {
				return fmt.Errorf("%s:%d: line longer than %d bytes", b.Input, line, maxLineBytes)
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %w", b.Input, err)
		}
		if len(bytes.TrimSpace(data)) > 0 {
			in, ie := decodeInput(b.Input, line, data)
			if ie != nil {
				in = nil
			}
			if !fn(line, in, ie) {
				return nil
			}
		}
		if err != nil { // io.EOF
			return nil
		}
	}
}

// inputKeys are BatchInput's keys, for messages.
var inputKeys = []string{"id", "prompt", "messages", "system", "max_tokens", "metadata"}

// decodeInput decodes and checks one input line. It decodes with
// encoding/json, about 15 times faster than internal/strict's YAML decoder
// on a typical line (4 µs against 60 µs, BenchmarkLine there), which counts
// for a file of a million lines read twice; its messages use the words of
// every configuration (package fielderr): "want an integer, got \"ten\"",
// "unknown key \"promt\" (did you mean prompt?)".
func decodeInput(file string, line int, data []byte) (*BatchInput, *InputError) {
	bad := func(field, format string, args ...any) *InputError {
		return &InputError{File: file, Line: line, Path: field, Message: fmt.Sprintf(format, args...)}
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, bad("", "want a JSON object {\"id\": …, \"prompt\": …}, got %s", preview(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	in := new(BatchInput)
	if err := dec.Decode(in); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, bad("", "invalid JSON at column %d: %v", se.Offset, se)
		case errors.As(err, &te) && te.Field != "":
			return nil, bad(te.Field, "want %s, got %s", fielderr.Describe(te.Type), gotJSON(data, te))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return nil, bad(name, "%s", fielderr.UnknownKey(name, inputKeys))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, bad("", "invalid JSON: unexpected end of line")
		}
		return nil, bad("", "invalid JSON: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return nil, bad("", "more than one JSON value on the line")
	}
	switch {
	case in.ID == "":
		return nil, bad("id", "required: a non-empty string unique in the file")
	case checkID(in.ID) != "":
		return nil, bad("id", "%s", checkID(in.ID))
	case in.Prompt == "" && len(in.Messages) == 0:
		return nil, bad("prompt", "required: a prompt, or messages")
	case in.Prompt != "" && len(in.Messages) > 0:
		return nil, bad("messages", "set prompt or messages, not both")
	case in.MaxTokens < 0:
		return nil, bad("max_tokens", "must be positive, got %d", in.MaxTokens)
	}
	for i, m := range in.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, bad(fmt.Sprintf("messages[%d].role", i), "want user or assistant, got %q (a system prompt goes in system)", m.Role)
		}
		if m.Content == "" {
			return nil, bad(fmt.Sprintf("messages[%d].content", i), "required: a non-empty string")
		}
	}
	return in, nil
}

// gotJSON describes the value a type error is about: as written when it is
// a top-level key's (read again, which only a bad line pays for), else by
// its JSON kind.
func gotJSON(data []byte, te *json.UnmarshalTypeError) string {
	if !strings.Contains(te.Field, ".") {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(data, &m) // the line is an object: only its values' types are wrong
		if raw := bytes.TrimSpace(m[te.Field]); len(raw) > 0 {
			switch raw[0] {
			case '{':
				return "a mapping"
			case '[':
				return "a list"
			}
			if len(raw) > 40 {
				return string(raw[:40]) + "…"
			}
			return string(raw)
		}
	}
	switch {
	case te.Value == "object":
		return "a mapping"
	case te.Value == "array":
		return "a list"
	case strings.HasPrefix(te.Value, "number "):
		return strings.TrimPrefix(te.Value, "number ")
	}
	return "a " + te.Value
}

// preview quotes the start of a line for a message.
func preview(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%q…", b[:40])
	}
	return fmt.Sprintf("%q", b)
}

// openOutput reads what the output already holds into ids, repairs a torn
// last line, drops error lines for RetryFailed, and returns the file open
// for appending, with its lock held until it is closed.
func (b *Batch) openOutput(ids map[idKey]idState, sum *BatchSummary) (*os.File, error) {
	f, err := openLocked(b.Output, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		return nil, err
	}
	failed := 0
	offset, err := ReadJSONL(f, func(r Result) error {
		if r.OK() {
			ids[keyOf(r.ID)] = markDone(ids[keyOf(r.ID)], doneOK)
		} else {
			failed++
			if st := ids[keyOf(r.ID)]; st.done != doneOK {
				ids[keyOf(r.ID)] = markDone(st, doneFailed)
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrTornLine):
		var line int
		fmt.Sscanf(strings.TrimPrefix(err.Error(), ErrTornLine.Error()+": line "), "%d", &line)
		if err := f.Truncate(offset); err != nil {
			return fail(fmt.Errorf("%s: repairing torn last line: %w", b.Output, err))
		}
		sum.Repaired = line
	case err != nil:
		msg := strings.TrimPrefix(err.Error(), "engine: results ")
		return fail(fmt.Errorf("%s: %s (not a results file of loadgen batch? move it away or name another --output)", b.Output, msg))
	}
	if b.RetryFailed && failed > 0 {
		if err := b.dropFailed(f); err != nil {
			return fail(err)
		}
		for k, st := range ids {
			if st.done == doneFailed {
				st.done = notDone
				ids[k] = st
			}
		}
		sum.Retried = failed
		f.Close()
		if f, err = openLocked(b.Output, os.O_RDWR); err != nil {
			return nil, err
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return fail(fmt.Errorf("output: %w", err))
	}
	for _, st := range ids {
		if st.line == 0 {
			continue
		}
		switch st.done {
		case doneOK:
			sum.DoneOK++
		case doneFailed:
			sum.DoneFailed++
		}
	}
	return f, nil
}

// openLocked opens path and locks it; closing the file releases the lock.
func openLocked(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("output %s: %w", path, err)
	}
	return f, nil
}

func markDone(st idState, done uint8) idState {
	st.done = done
	return st
}

// dropFailed rewrites the output without its error lines: to a temporary
// file beside it, synced, then renamed over it, so that a kill at any moment
// leaves one whole file or the other.
func (b *Batch) dropFailed(f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(b.Output), filepath.Base(b.Output)+".*.tmp")
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	bw := bufio.NewWriterSize(tmp, 256<<10)
	keep := NewJSONL(bw)
	if _, err := ReadJSONL(f, func(r Result) error {
		if !r.OK() {
			return nil
		}
		return keep.Put(r)
	}); err != nil && !errors.Is(err, ErrTornLine) {
		tmp.Close()
		return fmt.Errorf("%s: %w", b.Output, err)
	}
	err = bw.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), b.Output)
	}
	if err != nil {
		return fmt.Errorf("output: rewriting without failed results: %w", err)
	}
	if d, err := os.Open(filepath.Dir(b.Output)); err == nil {
		_ = d.Sync() // make the rename durable where the platform allows
		d.Close()
	}
	return nil
}
