package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/internal/tokenest"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// Format is the Messages API wire format (docs/wire.md §1).
type Format struct{}

func (Format) Name() string            { return "anthropic" }
func (Format) RequestIDHeader() string { return "Request-Id" }
func (Format) OverloadStatus() int     { return 529 }
func (Format) Spec() *wire.Spec        { return &spec }

var spec = wire.Spec{
	Path:          "/v1/messages",
	IDPrefix:      "msg_",
	Catalog:       wire.CatalogAnthropic,
	APIKeyHeader:  "X-Api-Key",
	MissingKey:    "x-api-key header is required",
	VersionHeader: "Anthropic-Version",
	// docs/wire.md §1.2.
	Headers: []wire.Header{{Name: "Anthropic-Organization-Id", Value: wire.OrganizationID}},
	// Observed on Anthropic's rate-limit 429s (docs/wire.md §1.4, §6).
	ShouldRetryLimited: true,
	QuotaMessage: func(limit, dim string) string {
		return fmt.Sprintf("You have reached your API usage limits: this API key's quota of %s is spent (mock quota.%s). You will regain access when the quota is raised (PUT /_admin/quota) or the server is reset.", limit, dim)
	},
	ModelNotFound: func(id string) wire.APIError { return wire.APIError{Msg: "model: " + id} },
	CheckSampling: checkSampling,
	Routes:        []wire.Route{{Method: http.MethodPost, Path: "/v1/messages/count_tokens", Endpoint: wire.EndpointCountTokens}},
	DecodeCount:   DecodeCount,
	CountBody:     CountBody,
}

// DecodeCount decodes a count_tokens request: a Messages request without
// max_tokens, whose tools count whatever their schemas.
func DecodeCount(_ wire.Format, body []byte, c *wire.Call) error {
	return DecodeMessages(body, false, c)
}

// CountBody is count_tokens' answer: {"input_tokens": N}.
func CountBody(c *wire.Call) any {
	return struct {
		InputTokens int `json:"input_tokens"`
	}{c.Input}
}

// checkSampling is strictness's check of what the decoder read:
// temperature and top_p in [0, 1], and a conversation starting with a
// user turn.
func checkSampling(c *wire.Call) *wire.APIError {
	if c.Temperature != nil {
		if e := wire.CheckRange(c.Temperature, "temperature", 1, true); e != nil {
			return e
		}
	}
	if c.TopP != nil {
		if e := wire.CheckRange(c.TopP, "top_p", 1, true); e != nil {
			return e
		}
	}
	if c.FirstRole != "" && c.FirstRole != "user" {
		return &wire.APIError{Msg: fmt.Sprintf("messages: the first message must use the \"user\" role, got %q", c.FirstRole), Param: "messages.0.role"}
	}
	return nil
}

// Request holds the fields the mock reads. Absent fields keep the
// absent sentinels decoding starts from (plain values, not pointers, spare
// an allocation each).
type Request struct {
	Model     string          `json:"model"`
	MaxTokens *int64          `json:"max_tokens"` // nil: absent or null
	Messages  []wire.Message  `json:"messages"`
	System    json.RawMessage `json:"system"`
	Tools     json.RawMessage `json:"tools"`
	Stream    bool            `json:"stream"`
	// InferenceGeo is reported back in usage.inference_geo.
	InferenceGeo string `json:"inference_geo"`
	// Content fields (content.go).
	ToolChoice    json.RawMessage `json:"tool_choice"`
	StopSequences []string        `json:"stop_sequences"`
	OutputConfig  json.RawMessage `json:"output_config"` // {format: {type: json_schema, schema}}
	OutputFormat  json.RawMessage `json:"output_format"` // the beta form: {type: json_schema, schema}
	// Sampling, for strictness's range checks only.
	Temperature json.RawMessage `json:"temperature"`
	TopP        json.RawMessage `json:"top_p"`
}

func (Format) Decode(body []byte, _ int, c *wire.Call) error {
	return DecodeMessages(body, true, c)
}

// Requests holds the structs Messages requests are decoded into.
var Requests wire.RequestPool[Request]

// DecodeMessages decodes a Messages request into c; count_tokens requests
// have no max_tokens (needMax false).
func DecodeMessages(body []byte, needMax bool, c *wire.Call) error {
	req := Requests.Get()
	defer Requests.Put(req)
	*req = Request{Model: wire.AbsentString}
	if err := wire.DecodeRequest(body, req); err != nil {
		return wire.DescribeBodyError(body, err)
	}
	*c = wire.Call{Temperature: req.Temperature, TopP: req.TopP, InferenceGeo: req.InferenceGeo}
	if err := wire.CheckModel(req.Model); err != nil {
		return err
	}
	c.Model = req.Model
	if len(req.Messages) > 0 {
		c.FirstRole = req.Messages[0].Role
	}
	if needMax {
		if req.MaxTokens == nil {
			return wire.Invalid("max_tokens", "field required")
		}
		n, err := wire.CheckMaxTokens("max_tokens", *req.MaxTokens)
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
		case m.Role != "user" && m.Role != "assistant":
			return wire.Invalid(wire.MsgPath(i, "role"), "want user or assistant, got %q", m.Role)
		}
		n, err := wire.ContentLen(m.Content, i)
		if err != nil {
			return err
		}
		c.Input += wire.MessageTokens(n)
	}
	if len(req.System) > 0 && string(req.System) != "null" {
		n, err := wire.ContentLen(req.System, -1)
		if err != nil {
			return err
		}
		c.Input += wire.MessageTokens(n)
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		c.Input += tokenest.Bytes(req.Tools)
	}
	c.Stream = req.Stream
	if bytes.Contains(body, wire.CacheControlKey) {
		c.Prefixes = wire.RequestPrefixes(req.Tools, req.System, req.Messages, false)
	}
	if needMax { // count_tokens counts tools whatever their schemas
		if err := req.decodeContent(c); err != nil {
			return err
		}
	}
	return nil
}

type anthropicErrorBody struct {
	Type      string `json:"type"`
	Error     detail `json:"error"`
	RequestID string `json:"request_id"`
}

type detail struct {
	Type    string        `json:"type"`
	Message string        `json:"message"`
	Details *errorDetails `json:"details,omitempty"`
}

// errorDetails is the details of a spend-limit 429, as the rate-limits
// docs show it: {"error_code": "enforced_spend_limit_reached"}.
type errorDetails struct {
	ErrorCode string `json:"error_code"`
}

func (Format) WriteError(w http.ResponseWriter, status int, e wire.APIError, reqID string) {
	dt := detail{Type: errorType(status), Message: e.Msg}
	if e.Limit == wire.LimitQuota {
		dt.Details = &errorDetails{ErrorCode: "enforced_spend_limit_reached"}
	}
	wire.WriteJSONBody(w, status, anthropicErrorBody{
		Type:      "error",
		Error:     dt,
		RequestID: reqID,
	})
}

// roundThousand rounds a remaining token count to the nearest 1000, as the
// Anthropic headers do, without exceeding the limit.
func roundThousand(v, limit int64) int64 {
	return min(limit, int64(math.Round(float64(v)/1000))*1000)
}

// appendResetTime appends the RFC 3339 instant, rounded up to the second,
// at which a bucket is full again.
func appendResetTime(b []byte, now time.Time, d time.Duration) []byte {
	t := now.Add(d)
	if r := t.Truncate(time.Second); r.Before(t) {
		t = r.Add(time.Second)
	}
	sec := t.Unix()
	if c := lastReset.Load(); c != nil && c.sec == sec {
		return append(b, c.text...)
	}
	c := &resetText{sec: sec}
	c.text = t.UTC().AppendFormat(c.text[:0:0], time.RFC3339)
	lastReset.Store(c)
	return append(b, c.text...)
}

// resetText is a reset instant formatted, cached for the second it names:
// most responses in a second carry the same few instants.
type resetText struct {
	sec  int64
	text []byte
}

var lastReset atomic.Pointer[resetText]

// anthropicHeaderNames are the limit, remaining and reset headers of the
// requests, input-tokens, output-tokens and tokens dimensions, canonical.
var anthropicHeaderNames = [4][3]string{
	{"Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset"},
	{"Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset"},
	{"Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset"},
	{"Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset"},
}

func (Format) AppendLimitHeaders(buf []byte, l *wire.HeaderList, s wire.Snapshot, now time.Time) []byte {
	tokens := s.Tokens
	if tokens.Limit == 0 && s.Input.Limit > 0 && s.Output.Limit > 0 {
		// Real responses report input + output as the combined limit.
		tokens = wire.Dimension{
			Limit:     s.Input.Limit + s.Output.Limit,
			Remaining: s.Input.Remaining + s.Output.Remaining,
			Reset:     max(s.Input.Reset, s.Output.Reset),
		}
	}
	dims := [...]struct {
		names *[3]string
		d     wire.Dimension
		round bool
	}{
		{&anthropicHeaderNames[0], s.Requests, false},
		{&anthropicHeaderNames[1], s.Input, true},
		{&anthropicHeaderNames[2], s.Output, true},
		{&anthropicHeaderNames[3], tokens, true},
	}
	for _, d := range dims {
		if d.d.Limit <= 0 {
			continue
		}
		rem := d.d.Remaining
		if d.round {
			rem = roundThousand(rem, d.d.Limit)
		}
		buf = strconv.AppendInt(buf, d.d.Limit, 10)
		l.Add(d.names[0], buf)
		buf = strconv.AppendInt(buf, rem, 10)
		l.Add(d.names[1], buf)
		buf = appendResetTime(buf, now, d.d.Reset)
		l.Add(d.names[2], buf)
	}
	return buf
}

// StopReason is the stop_reason of c's answer r: end_turn, max_tokens,
// tool_use or stop_sequence (Bedrock's Converse stopReason is the same).
func StopReason(c *wire.Call, r *wire.Result) string {
	if c.Content != nil {
		return contentStopReason(&c.Content.Ans[0], r)
	}
	return anthropicStopReason(r)
}

func anthropicStopReason(r *wire.Result) string {
	if r.Capped {
		return "max_tokens"
	}
	return "end_turn"
}

// A Message, its stream events and its usage carry every field
// anthropic-sdk-go v1.84.0 marks required (api:"required" in message.go)
// but one, with the values the API sends when the feature behind a field
// is unused. Where each value comes from:
//
//   - container: null, in the Message and in message_delta's delta. The SDK
//     (Message.Container): "non-null if a container tool (e.g. code
//     execution) was used"; the TypeScript SDK types it Container | null.
//   - stop_details: null, likewise. The SDK (Message.StopDetails): "null
//     when the stop_reason has no additional detail to report"; it is a
//     RefusalStopDetails, filled only for stop_reason refusal (as in the
//     SDK's lib/betafallback/testdata/fallbackstream/refusal.sse).
//   - diagnostics: null. The SDK (Message.Diagnostics): "null when the
//     request did not supply diagnostics".
//   - usage.cache_creation: {"ephemeral_5m_input_tokens",
//     "ephemeral_1h_input_tokens"}, the cache write split by TTL
//     (cacheWriteLong); its shape is the SDK's CacheCreation and the usage
//     of the SDK's fallbackstream/*.sse fixtures, zeros when nothing is
//     written.
//   - usage.output_tokens_details: {"thinking_tokens": 0}. The SDK
//     (OutputTokensDetails.ThinkingTokens): the output tokens spent on
//     internal reasoning; the mock does no extended thinking.
//   - usage.server_tool_use: null. A ServerToolUsage counts web search and
//     web fetch requests, which the mock never runs; the TypeScript SDK
//     types it ServerToolUsage | null, and the SDK's recorded streams
//     (fallbackstream/*.sse) have none.
//   - usage.speed: "standard", the default of the request's speed
//     (UsageSpeed: "standard" or "fast").
//   - usage.inference_geo: the request's inference_geo ("global", "us"),
//     where the data-residency docs say inference ran
//     (https://platform.claude.com/docs/en/manage-claude/data-residency);
//     "not_available" when the request names none, as published real
//     responses to such requests show it (claude-haiku-4-5 answers,
//     Claude Code transcripts through 2026-09; the SDK's fallbackstream
//     fixtures show "global" without the requests that produced them).
//     The mock has no workspaces, so no workspace default_inference_geo.
//   - a text block's citations: absent, the one required field the mock
//     leaves out, because the API does. The SDK marks TextBlock.Citations
//     required (TypeScript: Array<TextCitation> | null), but the Vercel AI
//     SDK's @ai-sdk/anthropic 3.0.140, written against the real API,
//     validates a text block's citations as an optional array that may
//     not be null, and fails the whole response ("Invalid JSON response")
//     when it is; its content_block_start text blocks have none either
//     (fallbackstream/refusal.sse). The Go SDK reads it absent as nil.
//   - a tool_use block's caller: {"type": "direct"} (ToolUseBlock.Caller,
//     DirectCaller: "tool invocation directly from the model"), the
//     variant of every call of a client-defined tool that no code
//     execution tool made.
//   - message_delta's usage: input_tokens, cache_creation_input_tokens and
//     cache_read_input_tokens as in message_start (MessageDeltaUsage: "the
//     cumulative number of input tokens"; the fallbackstream fixtures repeat
//     message_start's counts), with output_tokens_details and
//     server_tool_use as above.

// Body builds the Message by hand: it is the hot path of JSON throughput,
// and every field but the model is known not to need escaping.
func (Format) Body(b []byte, c *wire.Call, r *wire.Result) ([]byte, error) {
	if c.Content != nil {
		return anthropicContentBody(b, c, r), nil
	}
	b = slices.Grow(b, 640+4*r.N+len(c.Model))
	b = append(b, `{"id":"`...)
	b = append(b, r.ID...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = wire.AppendJSONString(b, c.Model)
	b = append(b, `,"content":[{"type":"text","text":"`...)
	b = wire.AppendText(b, r, 0, r.N)
	b = append(b, `"}],"container":null,"stop_reason":"`...)
	b = append(b, anthropicStopReason(r)...)
	b = append(b, `","stop_sequence":null,"stop_details":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.Input-c.CacheRead-c.CacheWrite), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(r.N), 10)
	b = appendUsageTail(b, c)
	return b, nil
}

func (Format) StreamStart(b []byte, c *wire.Call, r *wire.Result) []byte {
	b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\""...)
	b = append(b, r.ID...)
	b = append(b, `","type":"message","role":"assistant","content":[],"container":null,"model":`...)
	b = wire.AppendJSONString(b, c.Model)
	b = append(b, `,"stop_reason":null,"stop_sequence":null,"stop_details":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.Input-c.CacheRead-c.CacheWrite), 10)
	b = append(b, `,"output_tokens":1`...)
	b = appendUsageTail(b, c)
	b = append(b, "}\n\n"...)
	if c.Content != nil && c.Content.Ans[0].Tool {
		b = append(b, "event: content_block_start\ndata: "...)
		b = appendToolUseBlock(b, c, nil)
		b = append(b, "\n\n"...)
	} else {
		b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"...)
	}
	return append(b, "event: ping\ndata: {\"type\": \"ping\"}\n\n"...)
}

func (Format) StreamDelta(b []byte, c *wire.Call, r *wire.Result, from, to int) []byte {
	if c.Content != nil {
		ch := &c.Content.Ans[0]
		if from >= ch.N {
			return b
		}
		if ch.Tool {
			b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\""...)
		} else {
			b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""...)
		}
		b = ch.AppendTokens(b, from, to)
		return append(b, "\"}}\n\n"...)
	}
	b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""...)
	b = wire.AppendText(b, r, from, to)
	return append(b, "\"}}\n\n"...)
}

func (Format) StreamEnd(b []byte, c *wire.Call, r *wire.Result) []byte {
	b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"...)
	b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	n := r.N
	if c.Content != nil {
		ch := &c.Content.Ans[0]
		b = append(b, contentStopReason(ch, r)...)
		b = append(b, `","stop_sequence":`...)
		b = appendStopSequence(b, ch, r)
		n = ch.Emitted(r)
	} else {
		b = append(b, anthropicStopReason(r)...)
		b = append(b, `","stop_sequence":null`...)
	}
	// message_delta's usage is cumulative: the input and cache counts of
	// message_start again, and the final output count.
	b = append(b, `,"stop_details":null,"container":null},"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.Input-c.CacheRead-c.CacheWrite), 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.CacheWrite), 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.CacheRead), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"output_tokens_details":{"thinking_tokens":0},"server_tool_use":null}}`+"\n\n"...)
	return append(b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

func (Format) StreamError(b []byte, _ *wire.Call, _ *wire.Result) []byte {
	return wire.AppendSSE(b, "error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
}

// contentStopReason is the stop reason of a content answer.
func contentStopReason(ch *wire.Choice, r *wire.Result) string {
	switch {
	case ch.Capped && ch.Whole(r):
		return "max_tokens"
	case ch.Tool:
		return "tool_use"
	case ch.Stop != "" && ch.Whole(r):
		return "stop_sequence"
	}
	return "end_turn"
}

// appendStopSequence appends the matched stop sequence, or null.
func appendStopSequence(b []byte, ch *wire.Choice, r *wire.Result) []byte {
	if ch.Stop == "" || !ch.Whole(r) {
		return append(b, "null"...)
	}
	return wire.AppendJSONString(b, ch.Stop)
}

// appendToolUseBlock appends a tool_use content block whose input is
// input; nil gives {} (the block as a stream starts it, and a tool call
// cut before its end).
func appendToolUseBlock(b []byte, c *wire.Call, input []byte) []byte {
	cr := c.Content
	if input == nil {
		input = []byte("{}")
	}
	b = append(b, `{"type":"content_block_start","index":0,"content_block":`...)
	b = appendToolUse(b, cr, 0, input)
	return append(b, '}')
}

// appendToolUse appends choice k's tool_use block.
func appendToolUse(b []byte, cr *wire.ContentReq, k int, input []byte) []byte {
	b = append(b, `{"type":"tool_use","id":`...)
	b = wire.AppendJSONString(b, cr.IDs[k])
	b = append(b, `,"name":`...)
	b = wire.AppendJSONString(b, cr.Tools[cr.ToolIdx].Name)
	b = append(b, `,"input":`...)
	b = append(b, input...)
	return append(b, `,"caller":{"type":"direct"}}`...)
}

// anthropicContentBody is body for a request with content fields.
func anthropicContentBody(b []byte, c *wire.Call, r *wire.Result) []byte {
	cr := c.Content
	ch := &cr.Ans[0]
	b = append(b, `{"id":"`...)
	b = append(b, r.ID...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = wire.AppendJSONString(b, c.Model)
	b = append(b, `,"content":[`...)
	if ch.Tool {
		input := []byte("{}") // a call cut before its end
		if ch.Whole(r) {
			input = ch.Doc
		}
		b = appendToolUse(b, cr, 0, input)
	} else {
		b = append(b, `{"type":"text","text":"`...)
		b = ch.AppendTokens(b, 0, r.N)
		b = append(b, `"}`...)
	}
	b = append(b, `],"container":null,"stop_reason":"`...)
	b = append(b, contentStopReason(ch, r)...)
	b = append(b, `","stop_sequence":`...)
	b = appendStopSequence(b, ch, r)
	b = append(b, `,"stop_details":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.Input-c.CacheRead-c.CacheWrite), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(ch.Emitted(r)), 10)
	return appendUsageTail(b, c)
}

// appendUsageTail appends the rest of a Message's usage after
// output_tokens, closes it, appends the fields that follow it and closes
// the Message.
func appendUsageTail(b []byte, c *wire.Call) []byte {
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.CacheWrite), 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.CacheRead), 10)
	long := CacheWriteLong(c)
	b = append(b, `,"cache_creation":{"ephemeral_5m_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.CacheWrite-long), 10)
	b = append(b, `,"ephemeral_1h_input_tokens":`...)
	b = strconv.AppendInt(b, int64(long), 10)
	b = append(b, `},"output_tokens_details":{"thinking_tokens":0},"server_tool_use":null,"service_tier":"standard","speed":"standard","inference_geo":`...)
	if c.InferenceGeo == "" {
		b = append(b, `"not_available"`...)
	} else {
		b = wire.AppendJSONString(b, c.InferenceGeo)
	}
	return append(b, `},"diagnostics":null}`...)
}

// CacheWriteLong is the part of c's cache write that goes to the one-hour
// cache, as the prompt-caching docs bill a request that mixes TTLs
// ("Mixing different TTLs", https://docs.claude.com/en/docs/build-with-claude/prompt-caching):
// A is the tokens read, B the highest one-hour breakpoint after A (A if
// none), C the last breakpoint; B−A tokens are written for an hour and
// C−B for five minutes. The mock's write is C−A.
func CacheWriteLong(c *wire.Call) int {
	if c.CacheWrite == 0 {
		return 0
	}
	a := c.CacheRead
	hi := a
	for _, p := range c.Prefixes {
		if p.TTL == wire.CacheTTLLong && p.Tokens > hi && p.Tokens <= a+c.CacheWrite {
			hi = p.Tokens
		}
	}
	return hi - a
}

// errorType is the error type of a status; other 4xx are
// invalid_request_error and other 5xx api_error.
func errorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusConflict:
		return "conflict_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529, http.StatusServiceUnavailable:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
