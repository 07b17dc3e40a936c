package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/strategies"
)

// Decode is every format's Decode, into *out and *o: the headers
// classify the attempt (status, retry-after, x-should-retry, rate limits,
// with f's parsers), an error body is read into the Outcome's error (with
// f.ParseError, and f.Quota tells a spent quota), and a success is read as
// an event stream (f.Event) or as JSON (f.Body). Keeping it one function
// keeps every format classifying alike. It fills its results in place, as
// provider.Client.Do does for a registered format, so that none of a
// worker's frames holds a copy of them: a call in flight then fits in an
// 8 KiB goroutine stack (docs/performance.md, memory per in-flight call).
// Decode does not close resp.Body.
func Decode(resp *http.Response, sent time.Time, f *Spec, out *Response, o *strategies.Outcome) {
	clk := clockOf(resp)
	headerOutcome(resp, clk.Now(), f, o)
	*out = Response{RequestID: resp.Header.Get(f.RequestID)}
	switch {
	case o.Kind != strategies.Success:
		apiErr := readAPIError(resp, out.RequestID, f, o)
		if f.Quota != nil && f.Quota(apiErr) {
			o.Kind = strategies.Quota
		}
		if f.Kind != nil {
			o.Kind = f.Kind(apiErr, o.Kind)
		}
		o.Err = apiErr
	case isEventStream(resp):
		decodeStream(resp, clk, sent, out, o, f, NewSSEReader(resp.Body))
	case f.EventStream != nil && hasContentType(resp, f.EventStreamType):
		decodeStream(resp, clk, sent, out, o, f, f.EventStream(resp.Body))
	default:
		decodeJSON(resp, f, out, o)
	}
	finish(resp, sent, o)
}

// decodeJSON reads a successful JSON response into *out with f.Body.
func decodeJSON(resp *http.Response, f *Spec, out *Response, o *strategies.Outcome) {
	body, err := readBody(resp)
	if err == nil && !gjson.Valid(body) {
		err = ErrNotJSON
	}
	if err != nil {
		invalid(o, err)
		return
	}
	*out = f.Body(gjson.Parse(body), *out)
	o.Usage = out.Usage
}

// Stream is what an event stream's events build up: a Format's Event
// reads each into Out (the ID, usage and stop reason) and, for the text,
// Delta; Fail and Invalid end the attempt.
type Stream struct {
	// Out is the response so far; Decode sets its Text from the deltas
	// and the Outcome's usage from its Usage.
	Out  Response
	o    strategies.Outcome
	resp *http.Response
	clk  clock.Clock
	sent time.Time
	text strings.Builder
}

// decodeStream reads an event stream with f.Event until it says it read
// the last one or the stream ends (streamCut). The text is the sum of the
// deltas.
func decodeStream(resp *http.Response, clk clock.Clock, sent time.Time, out *Response, o *strategies.Outcome, f *Spec, sr EventReader) {
	s := &Stream{resp: resp, clk: clk, sent: sent, Out: *out, o: *o}
	for {
		ev, err := sr.Next()
		if err != nil {
			streamCut(resp, &s.o, err)
			break
		}
		if f.Event(s, ev) {
			break
		}
	}
	s.Out.Text = s.text.String()
	s.o.Usage = s.Out.Usage
	*out, *o = s.Out, s.o
}

// Delta appends a text delta, noting the time to the first one.
func (s *Stream) Delta(d string) {
	if d == "" {
		return
	}
	if s.Out.TTFT == 0 {
		s.Out.TTFT = max(clock.Since(s.clk, s.sent), 1)
	}
	s.text.WriteString(d)
}

// Fail ends the attempt as Failed, with the status the stream started
// with: no SDK retries once a stream has begun.
func (s *Stream) Fail(typ, msg string) {
	s.o.Kind = strategies.Failed
	s.o.Err = &APIError{Status: s.resp.StatusCode, Type: typ, Message: msg, RequestID: s.Out.RequestID}
}

// Invalid ends the attempt as Failed with ErrInvalidResponse wrapping err:
// an event that could not be decoded.
func (s *Stream) Invalid(err error) { invalid(&s.o, err) }

// Typed returns the type of an event of a typed stream (Anthropic's, the
// Responses API's): its event field, else its data's "type"; false, the
// attempt ended as Invalid, when its data is not JSON.
func (s *Stream) Typed(ev SSEEvent) (string, bool) {
	if !gjson.ValidBytes(ev.Data) {
		invalid(&s.o, fmt.Errorf("event %q: %w", ev.Event, ErrNotJSON))
		return "", false
	}
	if ev.Event != "" {
		return ev.Event, true
	}
	return gjson.GetBytes(ev.Data, "type").String(), true
}

// hasContentType reports whether resp's Content-Type is ct (parameters
// aside).
func hasContentType(resp *http.Response, ct string) bool {
	v := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Type")))
	return v == ct || strings.HasPrefix(v, ct+";")
}

func isEventStream(resp *http.Response) bool {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	return strings.HasPrefix(strings.TrimSpace(ct), "text/event-stream")
}

// maxBody bounds a JSON body read into memory.
const maxBody = 64 << 20

// ErrNotJSON reports a body or event that is not valid JSON (wrapped in
// ErrInvalidResponse).
var ErrNotJSON = errors.New("not valid JSON")

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
// with type and message when the body has the provider's error shape; a
// retry delay in the body sets o's RetryAfter when no header did.
func readAPIError(resp *http.Response, requestID string, f *Spec, o *strategies.Outcome) *APIError {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &APIError{Status: resp.StatusCode, RequestID: requestID}
	if b, ok := f.ParseError(body); ok {
		e.Type, e.Code, e.Message = b.Type, b.Code, b.Message
		if b.HasRetryAfter && !o.HasRetryAfter {
			o.RetryAfter, o.HasRetryAfter = b.RetryAfter, true
		}
	} else if err == nil {
		e.Message = strings.TrimSpace(string(bytes.ToValidUTF8(body[:min(len(body), 512)], nil)))
	}
	if f.ErrorType != nil && e.Type == "" {
		e.Type = f.ErrorType(resp.Header)
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
