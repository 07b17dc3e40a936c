package record

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
	a := &Attempt{Run: t.Run, Path: req.URL.Path, Provider: ProviderOf(req.URL.Path), Key: KeyLabel(keyOf(req.Header))}
	a.RetryCount, _ = strconv.Atoi(req.Header.Get("X-Stainless-Retry-Count"))
	if b := requestBody(req); len(b) > 0 {
		var r struct {
			Model               string `json:"model"`
			Stream              bool   `json:"stream"`
			MaxTokens           int    `json:"max_tokens"`
			MaxCompletionTokens int    `json:"max_completion_tokens"`
			MaxOutputTokens     int    `json:"max_output_tokens"`
		}
		if json.Unmarshal(b, &r) == nil {
			a.Model, a.Stream = r.Model, r.Stream
			a.MaxTokens = max(r.MaxTokens, r.MaxCompletionTokens, r.MaxOutputTokens)
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
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	resp.Body = &body{rc: resp.Body, t: t, a: a, start: start, sse: sse, done: doneOf(req.Context())}
	return resp, nil
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

// ProviderOf names the wire format of a request path: anthropic for
// /v1/messages, openai for /v1/chat/completions, openai-responses for
// /v1/responses; "" for any other.
func ProviderOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/messages"):
		return "anthropic"
	case strings.HasSuffix(path, "/chat/completions"):
		return "openai"
	case strings.HasSuffix(path, "/responses"):
		return "openai-responses"
	}
	return ""
}

func keyOf(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return a[7:]
	}
	return ""
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

// body observes a response body as the client reads it.
type body struct {
	rc    io.ReadCloser
	t     *Transport
	a     *Attempt
	start time.Time
	sse   bool

	done func(*Attempt) // WithDone's, or nil

	mu      sync.Mutex
	ended   bool
	buf     []byte // JSON: the body so far; SSE: the unfinished line
	event   string // SSE: the frame's event name
	data    []byte // SSE: the frame's data
	last    time.Time
	gapSum  float64
	gapSq   float64
	usage   Usage
	hasUse  bool
	errType string
	errMsg  string
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
		if b.sse {
			b.feed(p[:n], now)
		} else if len(b.buf) < maxJSON {
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
			b.frame(now)
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

var chatContent = []byte(`"content":"`)

// isToken reports whether an SSE frame carries output: a content delta.
func isToken(event string, data []byte) bool {
	switch event {
	case "content_block_delta", "response.output_text.delta", "response.function_call_arguments.delta", "response.refusal.delta":
		return true
	case "":
		if i := bytes.Index(data, chatContent); i >= 0 && i+len(chatContent) < len(data) && data[i+len(chatContent)] != '"' {
			return true
		}
		return bytes.Contains(data, []byte(`"tool_calls":[`))
	}
	return false
}

func (b *body) frame(now time.Time) {
	if isToken(b.event, b.data) {
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
		return
	}
	if bytes.Equal(b.data, []byte("[DONE]")) || len(b.data) == 0 {
		return
	}
	b.parse(b.data)
}

// parse reads the usage, stop reason and error of a JSON body or frame in
// any of the three formats.
func (b *body) parse(data []byte) {
	var r struct {
		Type       string     `json:"type"`
		Model      string     `json:"model"`
		StopReason string     `json:"stop_reason"`
		Status     string     `json:"status"`
		Code       any        `json:"code"`
		Message    any        `json:"message"` // an Anthropic message (message_start) or an error event's text
		Usage      *usageJSON `json:"usage"`
		Delta      *struct {
			StopReason string `json:"stop_reason"`
		} `json:"delta"`
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Response *struct {
			Model             string     `json:"model"`
			Status            string     `json:"status"`
			Usage             *usageJSON `json:"usage"`
			Error             *errJSON   `json:"error"`
			IncompleteDetails *struct {
				Reason string `json:"reason"`
			} `json:"incomplete_details"`
		} `json:"response"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &r) != nil {
		return
	}
	if m, ok := r.Message.(map[string]any); ok { // Anthropic's message_start
		if raw, err := json.Marshal(m); err == nil {
			var msg struct {
				Model string     `json:"model"`
				Usage *usageJSON `json:"usage"`
			}
			if json.Unmarshal(raw, &msg) == nil {
				b.setModel(msg.Model)
				b.addUsage(msg.Usage)
			}
		}
	}
	b.setModel(r.Model)
	b.addUsage(r.Usage)
	if r.StopReason != "" {
		b.a.StopReason = r.StopReason
	}
	if r.Delta != nil && r.Delta.StopReason != "" {
		b.a.StopReason = r.Delta.StopReason
	}
	for _, c := range r.Choices {
		if c.FinishReason != "" {
			b.a.StopReason = c.FinishReason
		}
	}
	if x := r.Response; x != nil {
		b.setModel(x.Model)
		b.addUsage(x.Usage)
		if x.Status == "completed" {
			b.a.StopReason = "completed"
		}
		if x.IncompleteDetails != nil && x.IncompleteDetails.Reason != "" {
			b.a.StopReason = x.IncompleteDetails.Reason
		}
		if x.Error != nil {
			b.setError(x.Error.kind(), x.Error.Message)
		}
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		var e errJSON
		if json.Unmarshal(r.Error, &e) == nil {
			b.setError(e.kind(), e.Message)
		}
	} else if r.Type == "error" { // a Responses stream's error event
		msg, _ := r.Message.(string)
		b.setError(toString(r.Code, "error"), msg)
	}
}

func (b *body) setModel(m string) {
	if m != "" {
		b.a.Model = m
	}
}

func (b *body) setError(kind, msg string) {
	if b.errType == "" {
		b.errType, b.errMsg = kind, msg
	}
}

type errJSON struct {
	Type    string `json:"type"`
	Code    any    `json:"code"`
	Message string `json:"message"`
}

func (e *errJSON) kind() string {
	if e.Type != "" {
		return e.Type
	}
	return toString(e.Code, "error")
}

func toString(v any, def string) string {
	switch x := v.(type) {
	case string:
		if x != "" {
			return x
		}
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return def
}

type usageJSON struct {
	InputTokens         *int `json:"input_tokens"`
	OutputTokens        *int `json:"output_tokens"`
	PromptTokens        *int `json:"prompt_tokens"`
	CompletionTokens    *int `json:"completion_tokens"`
	CacheRead           *int `json:"cache_read_input_tokens"`
	CacheCreation       *int `json:"cache_creation_input_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

func (b *body) addUsage(u *usageJSON) {
	if u == nil {
		return
	}
	set := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
			b.hasUse = true
		}
	}
	set(&b.usage.InputTokens, u.InputTokens)
	set(&b.usage.InputTokens, u.PromptTokens)
	set(&b.usage.OutputTokens, u.OutputTokens)
	set(&b.usage.OutputTokens, u.CompletionTokens)
	set(&b.usage.CacheReadInputTokens, u.CacheRead)
	set(&b.usage.CacheCreationInputTokens, u.CacheCreation)
	if d := u.PromptTokensDetails; d != nil {
		b.usage.CacheReadInputTokens = d.CachedTokens
	}
	if d := u.InputTokensDetails; d != nil {
		b.usage.CacheReadInputTokens = d.CachedTokens
	}
}

// finish writes the attempt's line, once: err is the read's error (io.EOF
// at the end), nil when the client closed the body.
func (b *body) finish(err error, now time.Time) {
	b.ended = true
	b.t.inFlight.Add(-1)
	a := b.a
	a.LatencyMS = ms(now.Sub(b.start))
	if b.sse {
		if len(b.buf) > 0 {
			b.line(b.buf, now)
		}
		if len(b.data) > 0 {
			b.frame(now)
		}
	} else if len(b.buf) > 0 {
		b.parse(b.buf)
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
	a.ErrorType, a.ErrorMessage = b.errType, clip(b.errMsg)
	if err != nil && err != io.EOF && a.ErrorType == "" {
		a.ErrorType, a.ErrorMessage = "stream_cut", clip(err.Error())
	}
	b.t.W.Write(a)
	if b.done != nil {
		b.done(a)
	}
}
