package openaichat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/ratelab/ratelab/internal/tokenest"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// Format is the Chat Completions wire format (docs/wire.md §2).
type Format struct{}

func (Format) Name() string            { return "openai" }
func (Format) RequestIDHeader() string { return "X-Request-Id" }
func (Format) OverloadStatus() int     { return http.StatusServiceUnavailable }
func (Format) Spec() *wire.Spec        { return &Spec }

// Spec is the Chat Completions format's; the Responses API shares it but
// for its path and id prefix.
var Spec = wire.Spec{
	Path:       "/v1/chat/completions",
	IDPrefix:   "chatcmpl-",
	Catalog:    wire.CatalogOpenAI,
	MissingKey: "missing API key: send Authorization: Bearer KEY",
	// docs/wire.md §2.2.
	Headers: []wire.Header{
		{Name: "Openai-Version", Value: []string{"2020-10-01"}},
		{Name: "Openai-Processing-Ms", Value: []string{"0"}},
	},
	Processing: true,
	AutoCache:  true,
	QuotaMessage: func(limit, dim string) string {
		return fmt.Sprintf("You exceeded your current quota, please check your plan and billing details: this API key's quota of %s is spent (mock quota.%s).", limit, dim)
	},
	ModelNotFound: func(id string) wire.APIError {
		return wire.APIError{Msg: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", id), Code: "model_not_found"}
	},
	CheckSampling: CheckSampling,
}

// CheckSampling is strictness's check of what the decoder read:
// temperature in [0, 2] and top_p in [0, 1].
func CheckSampling(c *wire.Call) *wire.APIError {
	if c.Temperature != nil {
		if e := wire.CheckRange(c.Temperature, "temperature", 2, false); e != nil {
			return e
		}
	}
	if c.TopP != nil {
		if e := wire.CheckRange(c.TopP, "top_p", 1, false); e != nil {
			return e
		}
	}
	return nil
}

// DefaultMaxTokens applies when Output.DefaultMaxTokens is 0.
const DefaultMaxTokens = 256

// Request holds the fields the mock reads, with absent sentinels like
// anthropicRequest.
type Request struct {
	Model               string         `json:"model"`
	Messages            []wire.Message `json:"messages"`
	MaxCompletionTokens *int64         `json:"max_completion_tokens"` // nil: absent or null
	MaxTokens           *int64         `json:"max_tokens"`
	Stream              bool           `json:"stream"`
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

// Requests holds the structs Chat Completions requests are decoded
// into.
var Requests wire.RequestPool[Request]

var openaiRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

func (Format) Decode(body []byte, defaultMax int, c *wire.Call) error {
	req := Requests.Get()
	defer Requests.Put(req)
	*req = Request{Model: wire.AbsentString}
	if err := wire.DecodeRequest(body, req); err != nil {
		return wire.DescribeBodyError(body, err)
	}
	*c = wire.Call{Temperature: req.Temperature, TopP: req.TopP}
	if err := wire.CheckModel(req.Model); err != nil {
		return err
	}
	c.Model = req.Model
	c.MaxTokens = defaultMax
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	for _, m := range [...]struct {
		name string
		v    *int64
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if m.v == nil {
			continue
		}
		n, err := wire.CheckMaxTokens(m.name, *m.v)
		if err != nil {
			return err
		}
		c.MaxTokens = n
	}
	if err := wire.CheckMessages(req.Messages); err != nil {
		return err
	}
	for i, m := range req.Messages {
		switch {
		case m.Role == "":
			return wire.Invalid(wire.MsgPath(i, "role"), "field required")
		case !openaiRoles[m.Role]:
			return wire.Invalid(wire.MsgPath(i, "role"), "want system, developer, user, assistant or tool, got %q", m.Role)
		}
		n := 0
		if len(m.Content) > 0 && string(m.Content) != "null" {
			var err error
			if n, err = wire.ContentLen(m.Content, i); err != nil {
				return err
			}
		} else if m.Role != "assistant" {
			return wire.Invalid(wire.MsgPath(i, "content"), "field required")
		}
		c.Input += wire.MessageTokens(n)
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		c.Input += tokenest.Bytes(req.Tools)
	}
	c.Stream = req.Stream
	if c.Input >= wire.MinCachePrefix {
		c.Prefixes = wire.RequestPrefixes(req.Tools, nil, req.Messages, true)
	}
	if req.StreamOptions != nil {
		if !c.Stream {
			return wire.Invalid("stream_options", "only allowed when stream is true")
		}
		c.IncludeUsage = req.StreamOptions.IncludeUsage
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

func (Format) WriteError(w http.ResponseWriter, status int, e wire.APIError, _ string) {
	oe := openaiError{Message: e.Msg, Type: "invalid_request_error", Param: wire.StrPtr(e.Param)}
	switch {
	case status == http.StatusUnauthorized:
		oe.Code = wire.StrPtr("invalid_api_key")
	case status == http.StatusNotFound:
		oe.Code = wire.StrPtr("unknown_url")
	case status == http.StatusRequestEntityTooLarge:
		oe.Code = wire.StrPtr("request_too_large")
	case status == http.StatusTooManyRequests:
		oe.Type = "requests"
		switch e.Limit {
		case wire.LimitTPM, wire.LimitITPM, wire.LimitOTPM:
			oe.Type = "tokens"
		}
		oe.Code = wire.StrPtr("rate_limit_exceeded")
		switch e.Limit {
		case wire.LimitQuota:
			oe.Type, oe.Code = "insufficient_quota", wire.StrPtr("insufficient_quota")
		case wire.LimitAcceleration:
			// Traffic that grew too fast within its limits
			// (docs/mockllm.md, "OpenAI's slow_down").
			oe.Type, oe.Code = "rate_limit_error", wire.StrPtr("slow_down")
		}
	case status == http.StatusServiceUnavailable || status == 529:
		oe.Type = "server_error"
		oe.Code = wire.StrPtr("overloaded")
	case status >= 500:
		oe.Type = "server_error"
	}
	if e.Code != "" {
		oe.Code = wire.StrPtr(e.Code)
	}
	if e.NullCode {
		oe.Code = nil
	}
	wire.WriteJSONBody(w, status, openaiErrorBody{Error: oe})
}

// openaiHeaderNames are the limit, remaining and reset headers of the
// requests and tokens dimensions, canonical.
var openaiHeaderNames = [2][3]string{
	{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"},
	{"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"},
}

func (Format) AppendLimitHeaders(buf []byte, l *wire.HeaderList, s wire.Snapshot, _ time.Time) []byte {
	for i, d := range [...]wire.Dimension{s.Requests, s.Tokens} {
		if d.Limit <= 0 {
			continue
		}
		buf = strconv.AppendInt(buf, d.Limit, 10)
		l.Add(openaiHeaderNames[i][0], buf)
		buf = strconv.AppendInt(buf, d.Remaining, 10)
		l.Add(openaiHeaderNames[i][1], buf)
		buf = appendDuration(buf, d.Reset.Round(time.Millisecond))
		l.Add(openaiHeaderNames[i][2], buf)
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

func finishReason(r *wire.Result) string {
	if r.Capped {
		return "length"
	}
	return "stop"
}

// Body builds the completion by hand, like anthropic.body.
func (Format) Body(b []byte, c *wire.Call, r *wire.Result) ([]byte, error) {
	if c.Content != nil {
		return openaiContentBody(b, c, r), nil
	}
	b = slices.Grow(b, 400+4*r.N+len(c.Model))
	b = append(b, `{"id":"`...)
	b = append(b, r.ID...)
	b = append(b, `","object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, r.Created.Unix(), 10)
	b = append(b, `,"model":`...)
	b = wire.AppendJSONString(b, c.Model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":"`...)
	b = wire.AppendText(b, r, 0, r.N)
	b = append(b, `","refusal":null},"logprobs":null,"finish_reason":"`...)
	b = append(b, finishReason(r)...)
	b = append(b, `"}],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(c.Input), 10)
	b = appendCachedTokens(b, c)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(r.N), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(c.Input+r.N), 10)
	b = append(b, `},"service_tier":"default","system_fingerprint":"`+systemFingerprint+`"}`...)
	return b, nil
}

// chunkHead appends the fields every chunk shares, up to "choices":.
func chunkHead(b []byte, c *wire.Call, r *wire.Result) []byte {
	b = append(b, `data: {"id":"`...)
	b = append(b, r.ID...)
	b = append(b, `","object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, r.Created.Unix(), 10)
	b = append(b, `,"model":`...)
	b = wire.AppendJSONString(b, c.Model)
	b = append(b, `,"service_tier":"default","system_fingerprint":"`+systemFingerprint+`","choices":`...)
	return b
}

func chunkTail(b []byte, c *wire.Call) []byte {
	if c.IncludeUsage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

func (Format) StreamStart(b []byte, c *wire.Call, r *wire.Result) []byte {
	b = chunkHead(b, c, r)
	if cr := c.Content; cr != nil {
		b = append(b, '[')
		for k := range cr.Ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(k), 10)
			if cr.Ans[k].Tool {
				b = append(b, `,"delta":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"index":0,"id":`...)
				b = wire.AppendJSONString(b, cr.IDs[k])
				b = append(b, `,"type":"function","function":{"name":`...)
				b = wire.AppendJSONString(b, cr.Tools[cr.ToolIdx].Name)
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

func (Format) StreamDelta(b []byte, c *wire.Call, r *wire.Result, from, to int) []byte {
	if cr := c.Content; cr != nil {
		return openaiContentDelta(b, c, r, from, to)
	}
	b = chunkHead(b, c, r)
	b = append(b, `[{"index":0,"delta":{"content":"`...)
	b = wire.AppendText(b, r, from, to)
	b = append(b, `"},"logprobs":null,"finish_reason":null}]`...)
	return chunkTail(b, c)
}

func (Format) StreamEnd(b []byte, c *wire.Call, r *wire.Result) []byte {
	b = chunkHead(b, c, r)
	out := r.N
	if cr := c.Content; cr != nil {
		b = append(b, '[')
		for k := range cr.Ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(k), 10)
			b = append(b, `,"delta":{},"logprobs":null,"finish_reason":"`...)
			b = append(b, contentFinishReason(&cr.Ans[k], r)...)
			b = append(b, `"}`...)
		}
		b = append(b, ']')
		out = cr.OutputTokens(r)
	} else {
		b = append(b, `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"`...)
		b = append(b, finishReason(r)...)
		b = append(b, `"}]`...)
	}
	b = chunkTail(b, c)
	if c.IncludeUsage {
		b = chunkHead(b, c, r)
		b = append(b, `[],"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(c.Input), 10)
		b = appendCachedTokens(b, c)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(out), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(c.Input+out), 10)
		b = append(b, "}}\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

func (Format) StreamError(b []byte, _ *wire.Call, _ *wire.Result) []byte {
	return append(b, `data: {"error":{"message":"The server is overloaded. Please try again later.","type":"server_error","param":null,"code":"overloaded"}}`+"\n\n"...)
}

// contentFinishReason is the finish reason of a content answer's choice.
func contentFinishReason(ch *wire.Choice, r *wire.Result) string {
	switch {
	case ch.Capped && ch.Whole(r):
		return "length"
	case ch.Tool:
		return "tool_calls"
	}
	return "stop"
}

// openaiContentBody is body for a request with content fields.
func openaiContentBody(b []byte, c *wire.Call, r *wire.Result) []byte {
	cr := c.Content
	b = append(b, `{"id":"`...)
	b = append(b, r.ID...)
	b = append(b, `","object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, r.Created.Unix(), 10)
	b = append(b, `,"model":`...)
	b = wire.AppendJSONString(b, c.Model)
	b = append(b, `,"choices":[`...)
	for k := range cr.Ans {
		ch := &cr.Ans[k]
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(k), 10)
		if ch.Tool {
			b = append(b, `,"message":{"role":"assistant","content":null,"tool_calls":[{"id":`...)
			b = wire.AppendJSONString(b, cr.IDs[k])
			b = append(b, `,"type":"function","function":{"name":`...)
			b = wire.AppendJSONString(b, cr.Tools[cr.ToolIdx].Name)
			b = append(b, `,"arguments":"`...)
			b = ch.AppendTokens(b, 0, r.N)
			b = append(b, `"}}],"refusal":null}`...)
		} else {
			b = append(b, `,"message":{"role":"assistant","content":"`...)
			b = ch.AppendTokens(b, 0, r.N)
			b = append(b, `","refusal":null}`...)
		}
		b = append(b, `,"logprobs":`...)
		b = cr.AppendLogprobs(b, ch, 0, r.N)
		b = append(b, `,"finish_reason":"`...)
		b = append(b, contentFinishReason(ch, r)...)
		b = append(b, `"}`...)
	}
	out := cr.OutputTokens(r)
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(c.Input), 10)
	b = appendCachedTokens(b, c)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(c.Input+out), 10)
	return append(b, `},"service_tier":"default","system_fingerprint":"`+systemFingerprint+`"}`...)
}

// openaiContentDelta is one chunk of tokens [from, to) of every choice
// that has some; nothing when none has.
func openaiContentDelta(b []byte, c *wire.Call, r *wire.Result, from, to int) []byte {
	cr := c.Content
	head := len(b)
	b = chunkHead(b, c, r)
	b = append(b, '[')
	first := true
	for k := range cr.Ans {
		ch := &cr.Ans[k]
		if from >= ch.Emitted(r) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(k), 10)
		if ch.Tool {
			b = append(b, `,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"`...)
			b = ch.AppendTokens(b, from, to)
			b = append(b, `"}}]}`...)
		} else {
			b = append(b, `,"delta":{"content":"`...)
			b = ch.AppendTokens(b, from, to)
			b = append(b, `"}`...)
		}
		b = append(b, `,"logprobs":`...)
		b = cr.AppendLogprobs(b, ch, from, to)
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
func appendCachedTokens(b []byte, c *wire.Call) []byte {
	if c.CacheRead == 0 {
		return b
	}
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(c.CacheRead), 10)
	return append(b, '}')
}
