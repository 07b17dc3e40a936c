package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/strategies"
)

// The encoding and decoding helpers every provider shares.

// Header values shared by every request, never modified: setting them
// costs no allocation per attempt.
var (
	anthropicVersion = []string{AnthropicVersion}
	contentJSON      = []string{"application/json"}
	acceptJSON       = []string{"application/json"}
	acceptSSE        = []string{"text/event-stream"}
	retryCounts      = func() (v [16][]string) {
		for i := range v {
			v[i] = []string{strconv.Itoa(i)}
		}
		return v
	}()
)

// newPost builds POST url with body as JSON and the headers every provider
// sends (commonHeaders), which it returns for the provider's own (auth).
// name is the provider's, for errors.
func newPost(ctx context.Context, name, url string, body any, r Request, attempt int) (*http.Request, http.Header, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("provider: encode %s request: %w", name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("provider: %s request: %w", name, err)
	}
	return req, commonHeaders(req, r, attempt), nil
}

// commonHeaders sets the headers every provider sends and returns the
// request's header map, with canonical keys.
func commonHeaders(req *http.Request, r Request, attempt int) http.Header {
	h := req.Header
	h["Content-Type"] = contentJSON
	if r.Stream {
		h["Accept"] = acceptSSE
	} else {
		h["Accept"] = acceptJSON
	}
	if attempt >= 0 && attempt < len(retryCounts) {
		h["X-Stainless-Retry-Count"] = retryCounts[attempt]
	} else {
		h["X-Stainless-Retry-Count"] = []string{strconv.Itoa(attempt)}
	}
	if r.IdempotencyKey != "" {
		h["Idempotency-Key"] = []string{r.IdempotencyKey}
	}
	return h
}

func nonNil(m []Message) []Message {
	if m == nil {
		return []Message{}
	}
	return m
}

// joinURL appends path to base (or def when base is empty) without doubling
// slashes.
func joinURL(base, def, path string) string {
	if base == "" {
		base = def
	}
	return strings.TrimRight(base, "/") + path
}

// wireFormat is what decode needs of one provider's wire format.
type wireFormat struct {
	requestID  string // the header carrying the request id
	limits     func(http.Header, time.Time) strategies.Limits
	parseError func(body []byte) (errorBody, bool)
	// quota reports whether an error response is a refusal for a spent
	// quota or spend cap, which no retry fixes; nil: none is.
	quota func(e *APIError) bool
	// event reads one event of a stream into s and says whether it was the
	// last; decodeStream owns the reading loop.
	event func(s *stream, ev Event) (last bool)
	// body reads a successful JSON response, already checked to be valid,
	// into out. (By value: a pointer passed to a func value escapes.)
	body func(v gjson.Result, out Response) Response
}

// decode is every provider's Decode, into *out and *o: the headers
// classify the attempt (status, retry-after, x-should-retry, rate limits),
// an error body is read into the Outcome's error, and a success is read as
// an event stream or as JSON. Keeping it one function keeps every provider
// classifying alike. It fills its results in place, as Client.Do does
// (wireOf), so that none of a worker's frames holds a copy of them: a call
// in flight then fits in an 8 KiB goroutine stack (docs/performance.md,
// memory per in-flight call).
func decode(resp *http.Response, sent time.Time, f *wireFormat, out *Response, o *strategies.Outcome) {
	clk := clockOf(resp)
	headerOutcome(resp, clk.Now(), f.limits, o)
	*out = Response{RequestID: resp.Header.Get(f.requestID)}
	switch {
	case o.Kind != strategies.Success:
		apiErr := readAPIError(resp, out.RequestID, f.parseError)
		if f.quota != nil && f.quota(apiErr) {
			o.Kind = strategies.Quota
		}
		o.Err = apiErr
	case isEventStream(resp):
		decodeStream(resp, clk, sent, out, o, f.event)
	default:
		decodeJSON(resp, f, out, o)
	}
	finish(resp, sent, o)
}

// decodeJSON reads a successful JSON response into *out with f.body.
func decodeJSON(resp *http.Response, f *wireFormat, out *Response, o *strategies.Outcome) {
	body, err := readBody(resp)
	if err == nil && !gjson.Valid(body) {
		err = errNotJSON
	}
	if err != nil {
		invalid(o, err)
		return
	}
	*out = f.body(gjson.Parse(body), *out)
	o.Usage = out.Usage
}

// wireOf returns the wireFormat of a built-in provider, whose Decode is
// decode over it, so that Client.Do can call decode itself, in place; nil
// for any other Provider, which Client.Do decodes with its Decode. A type
// switch, not a method: a type embedding a built-in provider to override
// its Decode would inherit a method, and Client.Do would bypass its Decode.
func wireOf(p Provider) *wireFormat {
	switch p.(type) {
	case Anthropic:
		return &anthropicWire
	case OpenAI:
		return &openAIWire
	case OpenAIResponses:
		return &responsesWire
	}
	return nil
}

// stream is what an event stream's events build up.
type stream struct {
	resp *http.Response
	clk  clock.Clock
	sent time.Time
	out  Response
	o    strategies.Outcome
	text strings.Builder
}

// decodeStream reads an event stream with event until event says it read
// the last one or the stream ends (streamCut). The text is the sum of the
// deltas.
func decodeStream(resp *http.Response, clk clock.Clock, sent time.Time, out *Response, o *strategies.Outcome, event func(*stream, Event) bool) {
	s := &stream{resp: resp, clk: clk, sent: sent, out: *out, o: *o}
	sr := NewSSEReader(resp.Body)
	for {
		ev, err := sr.Next()
		if err != nil {
			streamCut(resp, &s.o, err)
			break
		}
		if event(s, ev) {
			break
		}
	}
	s.out.Text = s.text.String()
	s.o.Usage = s.out.Usage
	*out, *o = s.out, s.o
}

// delta appends a text delta, noting the time to the first one.
func (s *stream) delta(d string) {
	if d == "" {
		return
	}
	if s.out.TTFT == 0 {
		s.out.TTFT = max(clock.Since(s.clk, s.sent), 1)
	}
	s.text.WriteString(d)
}

// fail ends the attempt as Failed, with the status the stream started
// with: no SDK retries once a stream has begun.
func (s *stream) fail(typ, msg string) {
	s.o.Kind = strategies.Failed
	s.o.Err = &APIError{Status: s.resp.StatusCode, Type: typ, Message: msg, RequestID: s.out.RequestID}
}

// typed returns the type of an event of a typed stream (Anthropic's, the
// Responses API's): its event field, else its data's "type"; false, the
// attempt ended as Invalid, when its data is not JSON.
func (s *stream) typed(ev Event) (string, bool) {
	if !gjson.ValidBytes(ev.Data) {
		invalid(&s.o, fmt.Errorf("event %q: %w", ev.Event, errNotJSON))
		return "", false
	}
	if ev.Event != "" {
		return ev.Event, true
	}
	return gjson.GetBytes(ev.Data, "type").String(), true
}

func isEventStream(resp *http.Response) bool {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	return strings.HasPrefix(strings.TrimSpace(ct), "text/event-stream")
}

// maxBody bounds a JSON body read into memory.
const maxBody = 64 << 20

// errNotJSON reports a body or event that is not valid JSON.
var errNotJSON = errors.New("not valid JSON")

// readBody reads a whole 2xx body, up to maxBody, in one allocation when
// the length is known. It returns the body as a string for gjson without
// copying it: nothing writes to the bytes once read.
func readBody(resp *http.Response) (string, error) {
	var body []byte
	if n := resp.ContentLength; n >= 0 && n <= maxBody {
		body = make([]byte, n)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			return "", err
		}
	} else {
		var err error
		if body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody)); err != nil {
			return "", err
		}
	}
	return unsafe.String(unsafe.SliceData(body), len(body)), nil
}

// readAPIError reads an error response's body and returns it as an APIError,
// with type and message when the body has the provider's error shape.
func readAPIError(resp *http.Response, requestID string, parse func([]byte) (errorBody, bool)) *APIError {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &APIError{Status: resp.StatusCode, RequestID: requestID}
	if b, ok := parse(body); ok {
		e.Type, e.Code, e.Message = b.typ, b.code, b.msg
	} else if err == nil {
		e.Message = strings.TrimSpace(string(bytes.ToValidUTF8(body[:min(len(body), 512)], nil)))
	}
	return e
}

// invalid marks an attempt whose 2xx body could not be decoded.
func invalid(o *strategies.Outcome, err error) {
	o.Kind = strategies.Failed
	o.Err = fmt.Errorf("%w: %w", ErrInvalidResponse, err)
}

// streamCut classifies a stream that ended before its final event: Canceled
// when the request's context ended it, Failed otherwise.
func streamCut(resp *http.Response, o *strategies.Outcome, err error) {
	if resp.Request != nil {
		if cerr := resp.Request.Context().Err(); cerr != nil {
			o.Kind = strategies.Canceled
			o.Err = cerr
			return
		}
	}
	o.Kind = strategies.Failed
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		o.Err = ErrIncompleteStream
	} else {
		o.Err = fmt.Errorf("%w: %w", ErrIncompleteStream, err)
	}
}

// finish drains what is left of the body (so the connection can be reused),
// sets the latency, and turns a read cut by the caller's context into
// Canceled.
func finish(resp *http.Response, sent time.Time, o *strategies.Outcome) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 256<<10)) //nolint:errcheck // best effort
	o.Latency = clock.Since(clockOf(resp), sent)
	var apiErr *APIError
	if o.Kind == strategies.Failed && !errors.As(o.Err, &apiErr) && resp.Request != nil {
		if cerr := resp.Request.Context().Err(); cerr != nil {
			o.Kind, o.Err = strategies.Canceled, cerr
		}
	}
}
