package mock

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// openai is the Chat Completions wire format (docs/wire.md §2).
type openai struct{}

func (openai) name() string            { return "openai" }
func (openai) requestIDHeader() string { return "X-Request-Id" }
func (openai) overloadStatus() int     { return http.StatusServiceUnavailable }

// defaultMaxTokens applies when Output.DefaultMaxTokens is 0.
const defaultMaxTokens = 256

// openaiRequest holds the fields the mock reads, with absent sentinels like
// anthropicRequest.
type openaiRequest struct {
	Model               string    `json:"model"`
	Messages            []message `json:"messages"`
	MaxCompletionTokens *int64    `json:"max_completion_tokens"` // nil: absent or null
	MaxTokens           *int64    `json:"max_tokens"`
	Stream              bool      `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools json.RawMessage `json:"tools"`
	// Content fields (content.go).
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Stop           json.RawMessage `json:"stop"` // a string or an array of strings
	N              *int64          `json:"n"`
	Logprobs       bool            `json:"logprobs"`
	TopLogprobs    *int64          `json:"top_logprobs"`
	// Sampling, for strictness's range checks only.
	Temperature json.RawMessage `json:"temperature"`
	TopP        json.RawMessage `json:"top_p"`
}

// openaiRequests holds the structs Chat Completions requests are decoded
// into.
var openaiRequests requestPool[openaiRequest]

var openaiRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

func (openai) decode(body []byte, defaultMax int, c *call) error {
	req := openaiRequests.get()
	defer openaiRequests.put(req)
	*req = openaiRequest{Model: absentString}
	if err := decodeRequest(body, req); err != nil {
		return describeBodyError(body, err)
	}
	*c = call{temperature: req.Temperature, topP: req.TopP}
	if err := checkModel(req.Model); err != nil {
		return err
	}
	c.model = req.Model
	c.maxTokens = defaultMax
	if c.maxTokens == 0 {
		c.maxTokens = defaultMaxTokens
	}
	for _, m := range [...]struct {
		name string
		v    *int64
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if m.v == nil {
			continue
		}
		n, err := checkMaxTokens(m.name, *m.v)
		if err != nil {
			return err
		}
		c.maxTokens = n
	}
	if err := checkMessages(req.Messages); err != nil {
		return err
	}
	for i, m := range req.Messages {
		switch {
		case m.Role == "":
			return invalid(msgPath(i, "role"), "field required")
		case !openaiRoles[m.Role]:
			return invalid(msgPath(i, "role"), "want system, developer, user, assistant or tool, got %q", m.Role)
		}
		n := 0
		if len(m.Content) > 0 && string(m.Content) != "null" {
			var err error
			if n, err = contentLen(m.Content, i); err != nil {
				return err
			}
		} else if m.Role != "assistant" {
			return invalid(msgPath(i, "content"), "field required")
		}
		c.input += messageTokens(n)
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		c.input += (utf8.RuneCount(req.Tools) + 3) / 4
	}
	c.stream = req.Stream
	if c.input >= minCachePrefix {
		c.prefixes = requestPrefixes(req.Tools, nil, req.Messages, true)
	}
	if req.StreamOptions != nil {
		if !c.stream {
			return invalid("stream_options", "only allowed when stream is true")
		}
		c.includeUsage = req.StreamOptions.IncludeUsage
	}
	if err := req.decodeContent(c); err != nil {
		return err
	}
	return nil
}

type openaiErrorBody struct {
	Error openaiError `json:"error"`
}

type openaiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (openai) writeError(w http.ResponseWriter, status int, e apiError, _ string) {
	oe := openaiError{Message: e.msg, Type: "invalid_request_error", Param: strp(e.param)}
	switch {
	case status == http.StatusUnauthorized:
		oe.Code = strp("invalid_api_key")
	case status == http.StatusNotFound:
		oe.Code = strp("unknown_url")
	case status == http.StatusRequestEntityTooLarge:
		oe.Code = strp("request_too_large")
	case status == http.StatusTooManyRequests:
		oe.Type = "requests"
		switch e.limit {
		case LimitTPM, LimitITPM, LimitOTPM:
			oe.Type = "tokens"
		}
		oe.Code = strp("rate_limit_exceeded")
		if e.limit == LimitQuota {
			oe.Type, oe.Code = "insufficient_quota", strp("insufficient_quota")
		}
	case status == http.StatusServiceUnavailable || status == 529:
		oe.Type = "server_error"
		oe.Code = strp("overloaded")
	case status >= 500:
		oe.Type = "server_error"
	}
	if e.code != "" {
		oe.Code = strp(e.code)
	}
	writeJSONBody(w, status, openaiErrorBody{Error: oe})
}

// openaiHeaderNames are the limit, remaining and reset headers of the
// requests and tokens dimensions, canonical.
var openaiHeaderNames = [2][3]string{
	{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"},
	{"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"},
}

func (openai) appendLimitHeaders(buf []byte, l *headerList, s snapshot, _ time.Time) []byte {
	for i, d := range [...]dimension{s.requests, s.tokens} {
		if d.limit <= 0 {
			continue
		}
		buf = strconv.AppendInt(buf, d.limit, 10)
		l.add(openaiHeaderNames[i][0], buf)
		buf = strconv.AppendInt(buf, d.remaining, 10)
		l.add(openaiHeaderNames[i][1], buf)
		buf = appendDuration(buf, d.reset.Round(time.Millisecond))
		l.add(openaiHeaderNames[i][2], buf)
	}
	return buf
}

// appendDuration appends d.String() for d rounded to the millisecond,
// formatting the common values below a second without allocating.
func appendDuration(b []byte, d time.Duration) []byte {
	switch {
	case d == 0:
		return append(b, "0s"...)
	case d > 0 && d < time.Second && d%time.Millisecond == 0:
		b = strconv.AppendInt(b, int64(d/time.Millisecond), 10)
		return append(b, "ms"...)
	}
	return append(b, d.String()...)
}

const systemFingerprint = "fp_mockllm"

func finishReason(r *result) string {
	if r.capped {
		return "length"
	}
	return "stop"
}

// body builds the completion by hand, like anthropic.body.
func (openai) body(b []byte, c *call, r *result) ([]byte, error) {
	if c.content != nil {
		return openaiContentBody(b, c, r), nil
	}
	b = slices.Grow(b, 400+4*r.n+len(c.model))
	b = append(b, `{"id":"`...)
	b = append(b, r.id...)
	b = append(b, `","object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, r.created.Unix(), 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":"`...)
	b = appendText(b, r, 0, r.n)
	b = append(b, `","refusal":null},"logprobs":null,"finish_reason":"`...)
	b = append(b, finishReason(r)...)
	b = append(b, `"}],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(c.input), 10)
	b = appendCachedTokens(b, c)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(r.n), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(c.input+r.n), 10)
	b = append(b, `},"service_tier":"default","system_fingerprint":"`+systemFingerprint+`"}`...)
	return b, nil
}

// chunkHead appends the fields every chunk shares, up to "choices":.
func chunkHead(b []byte, c *call, r *result) []byte {
	b = append(b, `data: {"id":"`...)
	b = append(b, r.id...)
	b = append(b, `","object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, r.created.Unix(), 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.model)
	b = append(b, `,"service_tier":"default","system_fingerprint":"`+systemFingerprint+`","choices":`...)
	return b
}

func chunkTail(b []byte, c *call) []byte {
	if c.includeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

func (openai) streamStart(b []byte, c *call, r *result) []byte {
	b = chunkHead(b, c, r)
	if cr := c.content; cr != nil {
		b = append(b, '[')
		for k := range cr.ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(k), 10)
			if cr.ans[k].tool {
				b = append(b, `,"delta":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"index":0,"id":`...)
				b = appendJSONString(b, cr.ids[k])
				b = append(b, `,"type":"function","function":{"name":`...)
				b = appendJSONString(b, cr.tools[cr.toolIdx].name)
				b = append(b, `,"arguments":""}}]},"logprobs":null,"finish_reason":null}`...)
			} else {
				b = append(b, `,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`...)
			}
		}
		b = append(b, ']')
		return chunkTail(b, c)
	}
	b = append(b, `[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]`...)
	return chunkTail(b, c)
}

func (openai) streamDelta(b []byte, c *call, r *result, from, to int) []byte {
	if cr := c.content; cr != nil {
		return openaiContentDelta(b, c, r, from, to)
	}
	b = chunkHead(b, c, r)
	b = append(b, `[{"index":0,"delta":{"content":"`...)
	b = appendText(b, r, from, to)
	b = append(b, `"},"logprobs":null,"finish_reason":null}]`...)
	return chunkTail(b, c)
}

func (openai) streamEnd(b []byte, c *call, r *result) []byte {
	b = chunkHead(b, c, r)
	out := r.n
	if cr := c.content; cr != nil {
		b = append(b, '[')
		for k := range cr.ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(k), 10)
			b = append(b, `,"delta":{},"logprobs":null,"finish_reason":"`...)
			b = append(b, cr.ans[k].finishReason(r)...)
			b = append(b, `"}`...)
		}
		b = append(b, ']')
		out = cr.outputTokens(r)
	} else {
		b = append(b, `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"`...)
		b = append(b, finishReason(r)...)
		b = append(b, `"}]`...)
	}
	b = chunkTail(b, c)
	if c.includeUsage {
		b = chunkHead(b, c, r)
		b = append(b, `[],"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(c.input), 10)
		b = appendCachedTokens(b, c)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(out), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(c.input+out), 10)
		b = append(b, "}}\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

func (openai) streamError(b []byte, _ *call, _ *result) []byte {
	return append(b, `data: {"error":{"message":"The server is overloaded. Please try again later.","type":"server_error","param":null,"code":"overloaded"}}`+"\n\n"...)
}

// finishReason is the finish reason of a content answer's choice.
func (ch *choiceOut) finishReason(r *result) string {
	switch {
	case ch.capped && ch.whole(r):
		return "length"
	case ch.tool:
		return "tool_calls"
	}
	return "stop"
}

// openaiContentBody is body for a request with content fields.
func openaiContentBody(b []byte, c *call, r *result) []byte {
	cr := c.content
	b = append(b, `{"id":"`...)
	b = append(b, r.id...)
	b = append(b, `","object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, r.created.Unix(), 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.model)
	b = append(b, `,"choices":[`...)
	for k := range cr.ans {
		ch := &cr.ans[k]
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(k), 10)
		if ch.tool {
			b = append(b, `,"message":{"role":"assistant","content":null,"tool_calls":[{"id":`...)
			b = appendJSONString(b, cr.ids[k])
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendJSONString(b, cr.tools[cr.toolIdx].name)
			b = append(b, `,"arguments":"`...)
			b = ch.appendTokens(b, 0, r.n)
			b = append(b, `"}}],"refusal":null}`...)
		} else {
			b = append(b, `,"message":{"role":"assistant","content":"`...)
			b = ch.appendTokens(b, 0, r.n)
			b = append(b, `","refusal":null}`...)
		}
		b = append(b, `,"logprobs":`...)
		b = cr.appendLogprobs(b, ch, 0, r.n)
		b = append(b, `,"finish_reason":"`...)
		b = append(b, ch.finishReason(r)...)
		b = append(b, `"}`...)
	}
	out := cr.outputTokens(r)
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(c.input), 10)
	b = appendCachedTokens(b, c)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(c.input+out), 10)
	return append(b, `},"service_tier":"default","system_fingerprint":"`+systemFingerprint+`"}`...)
}

// openaiContentDelta is one chunk of tokens [from, to) of every choice
// that has some; nothing when none has.
func openaiContentDelta(b []byte, c *call, r *result, from, to int) []byte {
	cr := c.content
	head := len(b)
	b = chunkHead(b, c, r)
	b = append(b, '[')
	first := true
	for k := range cr.ans {
		ch := &cr.ans[k]
		if from >= ch.emitted(r) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(k), 10)
		if ch.tool {
			b = append(b, `,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"`...)
			b = ch.appendTokens(b, from, to)
			b = append(b, `"}}]}`...)
		} else {
			b = append(b, `,"delta":{"content":"`...)
			b = ch.appendTokens(b, from, to)
			b = append(b, `"}`...)
		}
		b = append(b, `,"logprobs":`...)
		b = cr.appendLogprobs(b, ch, from, to)
		b = append(b, `,"finish_reason":null}`...)
	}
	if first {
		return b[:head]
	}
	b = append(b, ']')
	return chunkTail(b, c)
}

// appendCachedTokens appends prompt_tokens_details when the prompt cache
// served part of the prompt.
func appendCachedTokens(b []byte, c *call) []byte {
	if c.cacheRead == 0 {
		return b
	}
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(c.cacheRead), 10)
	return append(b, '}')
}
