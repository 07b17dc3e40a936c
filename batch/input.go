package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/provider"
)

// Line is one line of a batch's input file (items.jsonl):
//
//	{"id": "t-1", "prompt": "Classify: …", "max_tokens": 50, "metadata": {"row": 1}}
//	{"id": "t-2", "system": "Be brief.", "messages": [{"role": "user", "content": "…"}]}
//
// ID is required and unique within the file; exactly one of Prompt and
// Messages is required. Other keys are errors (a misspelt key would otherwise
// be silently ignored).
type Line struct {
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
	// When it is an object, its "provider" and "model" keys, if present,
	// name the line's provider and model (Provider, Model).
	Metadata json.RawMessage `json:"metadata,omitempty"`

	// Provider and Model are metadata.provider and metadata.model: the
	// provider (one of provider.Names) and the model the line's call goes
	// to, when the batch routes lines (Batch.Provider); empty when the
	// line names none.
	Provider string `json:"-"`
	Model    string `json:"-"`
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

// maxLineBytes bounds one input line (a long conversation is still far
// shorter).
const maxLineBytes = 64 << 20

// validate is the first pass over the input: it checks every line and
// returns the set of ids, each with the line of its first occurrence.
func (b *Batch) validate(ctx context.Context, sum *Summary) (map[idKey]idState, error) {
	ids := make(map[idKey]idState)
	var bad InputErrors
	err := b.scan(func(line int, in *Line, ie *InputError) bool {
		if line%4096 == 0 && ctx.Err() != nil {
			return false
		}
		sum.Lines++
		if ie != nil {
			bad.add(ie)
			return true
		}
		if b.rt != nil {
			if _, err := b.rt.route(in.Provider); err != nil {
				bad.add(&InputError{File: b.Input, Line: line, Path: "metadata.provider", Message: fmt.Sprintf("%s: %v", in.Provider, err)})
				return true
			}
			if m := b.rt.oneModel; m != "" && in.Model != "" && in.Model != m {
				bad.add(&InputError{File: b.Input, Line: line, Path: "metadata.model", Message: fmt.Sprintf("%q: %s's Batch API takes one model per batch, this run's %q", in.Model, b.Provider, m)})
				return true
			}
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

// ReadInput calls fn with each non-blank line of the batch input file at
// path, in order: its number and either its decoded line or its problem,
// until fn returns false. Its error is a read error naming the file.
// loadgen reads a scenario's items: {file: …} with it.
func ReadInput(path string, fn func(line int, in *Line, ie *InputError) bool) error {
	return (&Batch{Input: path}).scan(fn)
}

// scan reads the input line by line, calling fn with each non-blank line's
// number and either its decoded item or its problem, until fn returns
// false. Its error is a read error naming the file.
func (b *Batch) scan(fn func(line int, in *Line, ie *InputError) bool) error {
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

// inputKeys are Line's keys, for messages.
var inputKeys = []string{"id", "prompt", "messages", "system", "max_tokens", "metadata"}

// decodeInput decodes and checks one input line. It decodes with
// encoding/json, about 15 times faster than internal/strict's YAML decoder
// on a typical line (4 µs against 60 µs, BenchmarkLine there), which counts
// for a file of a million lines read twice; its messages use the words of
// every configuration (package fielderr): "want an integer, got \"ten\"",
// "unknown key \"promt\" (did you mean prompt?)".
func decodeInput(file string, line int, data []byte) (*Line, *InputError) {
	bad := func(field, format string, args ...any) *InputError {
		return &InputError{File: file, Line: line, Path: field, Message: fmt.Sprintf(format, args...)}
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, bad("", "want a JSON object {\"id\": …, \"prompt\": …}, got %s", preview(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	in := new(Line)
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
	if ie := in.route(bad); ie != nil {
		return nil, ie
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

// route reads the line's provider and model from its metadata, when it is
// an object naming them, and checks them: metadata.provider one of
// provider.Names, metadata.model a non-empty string.
func (in *Line) route(bad func(field, format string, args ...any) *InputError) *InputError {
	md := bytes.TrimSpace(in.Metadata)
	if len(md) == 0 || md[0] != '{' || (!bytes.Contains(md, []byte(`"provider"`)) && !bytes.Contains(md, []byte(`"model"`))) {
		return nil // not an object, or one naming neither (the common case: no second decode)
	}
	var m struct {
		Provider json.RawMessage `json:"provider"`
		Model    json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(md, &m); err != nil {
		return bad("metadata", "invalid JSON: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	str := func(field string, raw json.RawMessage) (string, *InputError) {
		if len(raw) == 0 {
			return "", nil
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || v == "" {
			got := string(raw)
			if len(got) > 40 {
				got = got[:40] + "…"
			}
			if err == nil {
				got = `""`
			}
			return "", bad(field, "want a non-empty string, got %s", got)
		}
		return v, nil
	}
	var ie *InputError
	if in.Provider, ie = str("metadata.provider", m.Provider); ie != nil {
		return ie
	}
	if in.Model, ie = str("metadata.model", m.Model); ie != nil {
		return ie
	}
	if in.Provider != "" && !slices.Contains(providerNames, in.Provider) {
		hint := ""
		if s := fielderr.Suggest(strings.ToLower(in.Provider), providerNames); s != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", s)
		}
		return bad("metadata.provider", "unknown provider %q%s; want one of %s", in.Provider, hint, strings.Join(providerNames, ", "))
	}
	return nil
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

// providerNames are the providers a line's metadata.provider may name.
var providerNames = provider.Names()
