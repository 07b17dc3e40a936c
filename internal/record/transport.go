package record

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"
)

// maxJSON is how much of a JSON (non-streamed) response body is kept to
// read its usage and error; a body past it is recorded without them.
const maxJSON = 4 << 20

// Transport records every attempt made through Base: the request's model,
// max_tokens, stream flag and key label, the response's status, rate-limit
// and retry headers, its usage, error type and, for a stream, its token
// timings, as one line in W when the response's body ends (is read to its
// end, breaks off or is closed). It is safe for concurrent use.
type Transport struct {
	Base http.RoundTripper
	W    *Writer
	// Now is the clock (a simulated run's); nil is time.Now.
	Now func() time.Time
	// Run labels the lines (the scenario row).
	Run string

	inFlight atomic.Int64
}

func (t *Transport) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := route(req.URL)
	a := &Attempt{Run: t.Run, Path: req.URL.Path, Key: KeyLabel(keyOf(req)), Model: c.model, Stream: c.stream}
	if c.f != nil {
		a.Provider = c.f.name
	}
	a.RetryCount, _ = strconv.Atoi(req.Header.Get("X-Stainless-Retry-Count"))
	if a.RetryCount == 0 {
		a.RetryCount = awsRetries(req.Header.Get("Amz-Sdk-Request"))
	}
	if b := requestBody(req); len(b) > 0 {
		var r struct {
			Model               string `json:"model"`
			Stream              bool   `json:"stream"`
			MaxTokens           int    `json:"max_tokens"`
			MaxCompletionTokens int    `json:"max_completion_tokens"`
			MaxOutputTokens     int    `json:"max_output_tokens"`
			GenerationConfig    struct {
				MaxOutputTokens int `json:"maxOutputTokens"`
			} `json:"generationConfig"`
			InferenceConfig struct {
				MaxTokens int `json:"maxTokens"`
			} `json:"inferenceConfig"`
		}
		if json.Unmarshal(b, &r) == nil {
			if a.Model == "" {
				a.Model = r.Model // the path's, when it names one, is the call's
			}
			a.Stream = a.Stream || r.Stream
			a.MaxTokens = max(r.MaxTokens, r.MaxCompletionTokens, r.MaxOutputTokens, r.GenerationConfig.MaxOutputTokens, r.InferenceConfig.MaxTokens)
		}
	}
	a.InFlight = int(t.inFlight.Add(1))
	start := t.now()
	a.SentAt = start
	resp, err := t.Base.RoundTrip(req)
	if err != nil {
		t.inFlight.Add(-1)
		a.ErrorType, a.ErrorMessage = "transport", clip(err.Error())
		a.LatencyMS = ms(t.now().Sub(start))
		t.W.Write(a)
		if f := doneOf(req.Context()); f != nil {
			f(a)
		}
		return nil, err
	}
	got := t.now()
	a.Status = resp.StatusCode
	a.HeadersMS = ms(got.Sub(start))
	for name, v := range resp.Header {
		n := strings.ToLower(name)
		if len(v) > 0 && (strings.HasPrefix(n, "anthropic-ratelimit-") || strings.HasPrefix(n, "x-ratelimit-") ||
			n == "retry-after" || n == "retry-after-ms" || n == "x-should-retry") {
			if a.Headers == nil {
				a.Headers = make(map[string]string, 8)
			}
			a.Headers[n] = v[0]
		}
	}
	a.RetryAfterMS = retryAfter(resp.Header, got)
	ct := resp.Header.Get("Content-Type")
	b := &body{rc: resp.Body, t: t, a: a, start: start, done: doneOf(req.Context())}
	if c.f != nil {
		b.token = c.f.token
	}
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		b.frames = framesSSE
	case strings.HasPrefix(ct, "application/vnd.amazon.eventstream"):
		b.frames = framesEventStream
	}
	// Bedrock's error type is a header, x-amzn-ErrorType, up to its colon.
	if et := resp.Header.Get("X-Amzn-Errortype"); et != "" && resp.StatusCode >= 400 {
		et, _, _ = strings.Cut(et, ":")
		b.hdrErr = strings.TrimSpace(et)
	}
	resp.Body = b
	return resp, nil
}

// awsRetries is the retries an AWS SDK's amz-sdk-request header counts:
// its attempt (1-based) less one, wherever it stands among the header's
// parts ("attempt=1; max=3" on a first attempt, botocore's "ttl=…;
// attempt=2; max=3" on a retry); 0 without one.
func awsRetries(v string) int {
	for part := range strings.SplitSeq(v, ";") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(part), "attempt="); ok {
			if n, err := strconv.Atoi(n); err == nil && n > 1 {
				return n - 1
			}
			return 0
		}
	}
	return 0
}

type doneKey struct{}

// WithDone returns ctx with f to call with an attempt made with it once its
// line is written (its usage known): how the recording proxy settles the
// output tokens of a request its own limits admitted.
func WithDone(ctx context.Context, f func(*Attempt)) context.Context {
	return context.WithValue(ctx, doneKey{}, f)
}

func doneOf(ctx context.Context) func(*Attempt) {
	f, _ := ctx.Value(doneKey{}).(func(*Attempt))
	return f
}

// requestBody returns req's body, leaving req able to send it.
func requestBody(req *http.Request) []byte {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return b
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	rest := io.Reader(bytes.NewReader(b))
	if err != nil {
		rest = io.MultiReader(rest, errReader{err})
	}
	req.Body = io.NopCloser(rest)
	return b
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func retryAfter(h http.Header, now time.Time) *float64 {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			return &f
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		f *= 1000
		return &f
	}
	if t, err := http.ParseTime(v); err == nil {
		f := math.Max(0, ms(t.Sub(now)))
		return &f
	}
	return nil
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func clip(s string) string {
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// How a response body is framed.
const (
	framesJSON        = iota // one JSON document
	framesSSE                // text/event-stream
	framesEventStream        // application/vnd.amazon.eventstream (Bedrock)
)

// maxFrame bounds one eventstream message: a longer prelude is not one.
const maxFrame = 16 << 20

// body observes a response body as the client reads it.
type body struct {
	rc     io.ReadCloser
	t      *Transport
	a      *Attempt
	start  time.Time
	frames int
	token  func(event string, data []byte) bool // the format's; nil: none counts

	done func(*Attempt) // WithDone's, or nil

	mu      sync.Mutex
	ended   bool
	buf     []byte // JSON: the body so far; SSE: the unfinished line; eventstream: the unfinished message
	event   string // SSE: the frame's event name
	data    []byte // SSE: the frame's data
	last    time.Time
	gapSum  float64
	gapSq   float64
	usage   Usage
	hasUse  bool
	errType string
	errCode string
	errMsg  string
	hdrErr  string // x-amzn-ErrorType
	bad     string // why the stream's framing broke, when it did
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return n, err
	}
	now := b.t.now()
	if n > 0 {
		switch {
		case b.frames == framesSSE:
			b.feed(p[:n], now)
		case b.frames == framesEventStream:
			b.feedEventStream(p[:n], now)
		case len(b.buf) < maxJSON:
			b.buf = append(b.buf, p[:n]...)
		}
	}
	if err != nil {
		b.finish(err, now)
	}
	return n, err
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.finish(nil, b.t.now())
	}
	return err
}

// feed splits SSE bytes into lines and frames.
func (b *body) feed(p []byte, now time.Time) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.buf = append(b.buf, p...)
			return
		}
		line := p[:i]
		if len(b.buf) > 0 {
			b.buf = append(b.buf, line...)
			line = b.buf
		}
		b.line(bytes.TrimSuffix(line, []byte("\r")), now)
		b.buf = b.buf[:0]
		p = p[i+1:]
	}
}

func (b *body) line(l []byte, now time.Time) {
	switch {
	case len(l) == 0:
		if len(b.data) > 0 || b.event != "" {
			b.frame(b.event, b.data, now)
		}
		b.event, b.data = "", b.data[:0]
	case bytes.HasPrefix(l, []byte("event:")):
		b.event = strings.TrimSpace(string(l[6:]))
	case bytes.HasPrefix(l, []byte("data:")):
		d := bytes.TrimPrefix(l[5:], []byte(" "))
		if len(b.data) > 0 {
			b.data = append(b.data, '\n')
		}
		b.data = append(b.data, d...)
	}
}

// feedEventStream splits eventstream bytes into messages: each is its
// total length (the first 4 bytes, big-endian) long, and is decoded (its
// CRCs checked) by aws-sdk-go-v2's decoder once whole.
func (b *body) feedEventStream(p []byte, now time.Time) {
	if b.bad != "" {
		return
	}
	b.buf = append(b.buf, p...)
	for len(b.buf) >= 12 {
		total := int(binary.BigEndian.Uint32(b.buf))
		if total < 16 || total > maxFrame {
			b.bad = fmt.Sprintf("not an event stream: a message of %d bytes (16 to %d)", total, maxFrame)
			b.buf = nil
			return
		}
		if len(b.buf) < total {
			return
		}
		msg, err := eventstream.NewDecoder().Decode(bytes.NewReader(b.buf[:total]), nil)
		if err != nil {
			b.bad = "event stream message: " + err.Error()
			b.buf = nil
			return
		}
		b.buf = b.buf[total:]
		str := func(name string) string {
			if v := msg.Headers.Get(name); v != nil {
				return v.String()
			}
			return ""
		}
		switch str(":message-type") {
		case "event":
			ev, data := str(":event-type"), msg.Payload
			if ev == "chunk" { // InvokeModelWithResponseStream: {"bytes": base64(a Messages stream event)}
				if raw, err := base64.StdEncoding.DecodeString(gjson.GetBytes(data, "bytes").String()); err == nil {
					ev, data = gjson.GetBytes(raw, "type").String(), raw
				}
			}
			b.frame(ev, data, now)
		case "exception":
			b.setError(str(":exception-type"), "", gjson.GetBytes(msg.Payload, "message").String())
		case "error":
			b.setError(str(":error-code"), "", str(":error-message"))
		}
	}
}

func (b *body) frame(event string, data []byte, now time.Time) {
	if b.token != nil && b.token(event, data) {
		a := b.a
		if a.Frames == 0 {
			a.TTFTMS = ms(now.Sub(b.start))
		} else {
			g := float64(now.Sub(b.last)) / 1e6
			b.gapSum += g
			b.gapSq += g * g
		}
		a.Frames++
		a.LastTokenMS = ms(now.Sub(b.start))
		b.last = now
		// A Gemini chunk carries its text and, on the last, the usage;
		// a Messages delta nothing else.
		if !bytes.Contains(data, []byte(`"usageMetadata"`)) {
			return
		}
	}
	if bytes.Equal(data, []byte("[DONE]")) || len(data) == 0 {
		return
	}
	b.parse(data)
}

// parse reads the usage, stop reason and error of a JSON body or frame in
// any of the formats: their fields do not collide.
func (b *body) parse(data []byte) {
	v := gjson.ParseBytes(data)
	if v.IsArray() { // a Google front end's error, wrapped in a one-element array
		v = v.Get("0")
	}
	if !v.IsObject() {
		return
	}
	if m := v.Get("message"); m.IsObject() { // Anthropic's message_start
		b.setModel(m.Get("model").String())
		b.addUsage(m.Get("usage"))
	}
	b.setModel(v.Get("model").String())
	b.setModel(v.Get("modelVersion").String()) // Gemini's
	b.addUsage(v.Get("usage"))                 // every format's but Gemini's
	b.addUsage(v.Get("usageMetadata"))         // Gemini's
	for _, k := range []string{"stop_reason", "delta.stop_reason", "stopReason", "candidates.0.finishReason"} {
		if s := v.Get(k).String(); s != "" {
			b.a.StopReason = s
		}
	}
	if v.Get("object").String() == "response" { // a plain Responses API answer
		if v.Get("status").String() == "completed" {
			b.a.StopReason = "completed"
		}
		if s := v.Get("incomplete_details.reason").String(); s != "" {
			b.a.StopReason = s
		}
	}
	v.Get("choices").ForEach(func(_, c gjson.Result) bool {
		if s := c.Get("finish_reason").String(); s != "" {
			b.a.StopReason = s
		}
		return true
	})
	if x := v.Get("response"); x.IsObject() { // the Responses API's events
		b.setModel(x.Get("model").String())
		b.addUsage(x.Get("usage"))
		if x.Get("status").String() == "completed" {
			b.a.StopReason = "completed"
		}
		if s := x.Get("incomplete_details.reason").String(); s != "" {
			b.a.StopReason = s
		}
		if e := x.Get("error"); e.IsObject() {
			b.errorObject(e)
		}
	}
	if e := v.Get("error"); e.IsObject() {
		b.errorObject(e)
	} else if v.Get("type").String() == "error" { // a Responses stream's error event
		b.setError(kindOf(v), "", v.Get("message").String())
	} else if b.a.Status >= 400 && v.Get("message").Type == gjson.String { // Bedrock's {"message": …}
		b.setError(b.hdrErr, "", v.Get("message").String())
	} else if b.a.Status >= 400 && v.Get("Message").Type == gjson.String {
		b.setError(b.hdrErr, "", v.Get("Message").String())
	}
}

// kindOf is an error object's type: type (Anthropic, OpenAI), status
// (Google's RESOURCE_EXHAUSTED, …), else code (Azure's "429").
func kindOf(e gjson.Result) string {
	for _, k := range []string{"type", "status", "code"} {
		if s := e.Get(k); s.Exists() && s.String() != "" {
			return s.String()
		}
	}
	return "error"
}

// errorObject reads an error object: its type, message and finer code
// (Anthropic's details.error_code, OpenAI's code beside a type, Google's
// QuotaFailure quotaId or ErrorInfo reason), and Google's RetryInfo
// retryDelay, the retry-after of an answer with no header of it.
func (b *body) errorObject(e gjson.Result) {
	code := e.Get("details.error_code").String()
	if code == "" && e.Get("type").Exists() && e.Get("code").Type == gjson.String {
		code = e.Get("code").String()
	}
	e.Get("details").ForEach(func(_, d gjson.Result) bool {
		switch d.Get("@type").String() {
		case "type.googleapis.com/google.rpc.QuotaFailure":
			if code == "" {
				code = d.Get("violations.0.quotaId").String()
			}
		case "type.googleapis.com/google.rpc.ErrorInfo":
			if code == "" {
				code = d.Get("reason").String()
			}
		case "type.googleapis.com/google.rpc.RetryInfo":
			if f, ok := protoSeconds(d.Get("retryDelay").String()); ok && b.a.RetryAfterMS == nil {
				f *= 1000
				b.a.RetryAfterMS = &f
				b.a.RetryAfterFrom = "body"
			}
		}
		return true
	})
	b.setError(kindOf(e), code, e.Get("message").String())
}

// protoSeconds reads google.protobuf.Duration's JSON form, "18s" or
// "1.501s", in seconds.
func protoSeconds(s string) (float64, bool) {
	v, ok := strings.CutSuffix(s, "s")
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func (b *body) setModel(m string) {
	if m != "" && b.a.Model == "" {
		b.a.Model = m
	}
}

func (b *body) setError(kind, code, msg string) {
	if b.errType == "" {
		b.errType, b.errCode, b.errMsg = kind, code, msg
	}
}

// addUsage reads a usage object of any format: Anthropic's and OpenAI's
// snake_case, Bedrock's camelCase, Gemini's usageMetadata.
func (b *body) addUsage(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	set := func(dst *int, keys ...string) {
		for _, k := range keys {
			if x := u.Get(k); x.Exists() {
				*dst = int(x.Int())
				b.hasUse = true
			}
		}
	}
	set(&b.usage.InputTokens, "input_tokens", "prompt_tokens", "inputTokens", "promptTokenCount")
	set(&b.usage.OutputTokens, "output_tokens", "completion_tokens", "outputTokens", "candidatesTokenCount")
	if t := u.Get("thoughtsTokenCount"); t.Exists() { // Gemini's thinking, billed as output
		b.usage.OutputTokens += int(t.Int())
	}
	set(&b.usage.CacheReadInputTokens, "cache_read_input_tokens", "prompt_tokens_details.cached_tokens",
		"input_tokens_details.cached_tokens", "cacheReadInputTokens", "cachedContentTokenCount")
	set(&b.usage.CacheCreationInputTokens, "cache_creation_input_tokens", "cacheWriteInputTokens")
}

// finish writes the attempt's line, once: err is the read's error (io.EOF
// at the end), nil when the client closed the body.
func (b *body) finish(err error, now time.Time) {
	b.ended = true
	b.t.inFlight.Add(-1)
	a := b.a
	a.LatencyMS = ms(now.Sub(b.start))
	switch b.frames {
	case framesSSE:
		if len(b.buf) > 0 {
			b.line(b.buf, now)
		}
		if len(b.data) > 0 {
			b.frame(b.event, b.data, now)
		}
	case framesEventStream:
		if len(b.buf) > 0 && b.bad == "" {
			if len(b.buf) >= 4 {
				b.bad = fmt.Sprintf("the event stream ended inside a message: %d of its %d bytes", len(b.buf), binary.BigEndian.Uint32(b.buf))
			} else {
				b.bad = fmt.Sprintf("the event stream ended inside a message's prelude: %d of its 12 bytes", len(b.buf))
			}
		}
	default:
		if len(b.buf) > 0 {
			b.parse(b.buf)
		}
	}
	b.buf, b.data = nil, nil
	if a.Frames > 1 {
		n := float64(a.Frames - 1)
		mean := b.gapSum / n
		a.GapMeanMS = math.Round(mean*1e3) / 1e3
		a.GapStdMS = math.Round(math.Sqrt(math.Max(0, b.gapSq/n-mean*mean))*1e3) / 1e3
	}
	if b.hasUse {
		u := b.usage
		a.Usage = &u
	}
	if b.errType == "" && b.hdrErr != "" {
		b.errType = b.hdrErr
	}
	a.ErrorType, a.ErrorCode, a.ErrorMessage = b.errType, b.errCode, clip(b.errMsg)
	switch {
	case b.bad != "" && a.ErrorType == "":
		a.ErrorType, a.ErrorMessage = "stream_cut", clip(b.bad)
	case err != nil && err != io.EOF && a.ErrorType == "":
		a.ErrorType, a.ErrorMessage = "stream_cut", clip(err.Error())
	}
	b.t.W.Write(a)
	if b.done != nil {
		b.done(a)
	}
}
