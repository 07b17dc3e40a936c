package mock

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// anthropic is the Messages API wire format (docs/wire.md §1).
type anthropic struct{}

func (anthropic) name() string            { return "anthropic" }
func (anthropic) requestIDHeader() string { return "Request-Id" }
func (anthropic) overloadStatus() int     { return 529 }

// anthropicRequest holds the fields the mock reads. Absent fields keep the
// absent sentinels decoding starts from (plain values, not pointers, spare
// an allocation each).
type anthropicRequest struct {
	Model     string          `json:"model"`
	MaxTokens *int64          `json:"max_tokens"` // nil: absent or null
	Messages  []message       `json:"messages"`
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

func (anthropic) decode(body []byte, _ int, c *call) error {
	return decodeAnthropic(body, true, c)
}

// anthropicRequests holds the structs Messages requests are decoded into.
var anthropicRequests requestPool[anthropicRequest]

// decodeAnthropic decodes a Messages request into c; count_tokens requests
// have no max_tokens (needMax false).
func decodeAnthropic(body []byte, needMax bool, c *call) error {
	req := anthropicRequests.get()
	defer anthropicRequests.put(req)
	*req = anthropicRequest{Model: absentString}
	if err := decodeRequest(body, req); err != nil {
		return describeBodyError(body, err)
	}
	*c = call{temperature: req.Temperature, topP: req.TopP, inferenceGeo: req.InferenceGeo}
	if err := checkModel(req.Model); err != nil {
		return err
	}
	c.model = req.Model
	if len(req.Messages) > 0 {
		c.firstRole = req.Messages[0].Role
	}
	if needMax {
		if req.MaxTokens == nil {
			return invalid("max_tokens", "field required")
		}
		n, err := checkMaxTokens("max_tokens", *req.MaxTokens)
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
		case m.Role != "user" && m.Role != "assistant":
			return invalid(msgPath(i, "role"), "want user or assistant, got %q", m.Role)
		}
		n, err := contentLen(m.Content, i)
		if err != nil {
			return err
		}
		c.input += messageTokens(n)
	}
	if len(req.System) > 0 && string(req.System) != "null" {
		n, err := contentLen(req.System, -1)
		if err != nil {
			return err
		}
		c.input += messageTokens(n)
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		c.input += (utf8.RuneCount(req.Tools) + 3) / 4
	}
	c.stream = req.Stream
	if bytes.Contains(body, cacheControlKey) {
		c.prefixes = requestPrefixes(req.Tools, req.System, req.Messages, false)
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

func (anthropic) writeError(w http.ResponseWriter, status int, e apiError, reqID string) {
	dt := detail{Type: anthropicErrorType(status), Message: e.msg}
	if e.limit == LimitQuota {
		dt.Details = &errorDetails{ErrorCode: "enforced_spend_limit_reached"}
	}
	writeJSONBody(w, status, anthropicErrorBody{
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

func (anthropic) appendLimitHeaders(buf []byte, l *headerList, s snapshot, now time.Time) []byte {
	tokens := s.tokens
	if tokens.limit == 0 && s.input.limit > 0 && s.output.limit > 0 {
		// Real responses report input + output as the combined limit.
		tokens = dimension{
			limit:     s.input.limit + s.output.limit,
			remaining: s.input.remaining + s.output.remaining,
			reset:     max(s.input.reset, s.output.reset),
		}
	}
	dims := [...]struct {
		names *[3]string
		d     dimension
		round bool
	}{
		{&anthropicHeaderNames[0], s.requests, false},
		{&anthropicHeaderNames[1], s.input, true},
		{&anthropicHeaderNames[2], s.output, true},
		{&anthropicHeaderNames[3], tokens, true},
	}
	for _, d := range dims {
		if d.d.limit <= 0 {
			continue
		}
		rem := d.d.remaining
		if d.round {
			rem = roundThousand(rem, d.d.limit)
		}
		buf = strconv.AppendInt(buf, d.d.limit, 10)
		l.add(d.names[0], buf)
		buf = strconv.AppendInt(buf, rem, 10)
		l.add(d.names[1], buf)
		buf = appendResetTime(buf, now, d.d.reset)
		l.add(d.names[2], buf)
	}
	return buf
}

func anthropicStopReason(r *result) string {
	if r.capped {
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

// body builds the Message by hand: it is the hot path of JSON throughput,
// and every field but the model is known not to need escaping.
func (anthropic) body(b []byte, c *call, r *result) ([]byte, error) {
	if c.content != nil {
		return anthropicContentBody(b, c, r), nil
	}
	b = slices.Grow(b, 640+4*r.n+len(c.model))
	b = append(b, `{"id":"`...)
	b = append(b, r.id...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, c.model)
	b = append(b, `,"content":[{"type":"text","text":"`...)
	b = appendText(b, r, 0, r.n)
	b = append(b, `"}],"container":null,"stop_reason":"`...)
	b = append(b, anthropicStopReason(r)...)
	b = append(b, `","stop_sequence":null,"stop_details":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.input-c.cacheRead-c.cacheWrite), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(r.n), 10)
	b = appendUsageTail(b, c)
	return b, nil
}

func (anthropic) streamStart(b []byte, c *call, r *result) []byte {
	b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\""...)
	b = append(b, r.id...)
	b = append(b, `","type":"message","role":"assistant","content":[],"container":null,"model":`...)
	b = appendJSONString(b, c.model)
	b = append(b, `,"stop_reason":null,"stop_sequence":null,"stop_details":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.input-c.cacheRead-c.cacheWrite), 10)
	b = append(b, `,"output_tokens":1`...)
	b = appendUsageTail(b, c)
	b = append(b, "}\n\n"...)
	if c.content != nil && c.content.ans[0].tool {
		b = append(b, "event: content_block_start\ndata: "...)
		b = appendToolUseBlock(b, c, nil)
		b = append(b, "\n\n"...)
	} else {
		b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"...)
	}
	return append(b, "event: ping\ndata: {\"type\": \"ping\"}\n\n"...)
}

func (anthropic) streamDelta(b []byte, c *call, r *result, from, to int) []byte {
	if c.content != nil {
		ch := &c.content.ans[0]
		if from >= ch.n {
			return b
		}
		if ch.tool {
			b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\""...)
		} else {
			b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""...)
		}
		b = ch.appendTokens(b, from, to)
		return append(b, "\"}}\n\n"...)
	}
	b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""...)
	b = appendText(b, r, from, to)
	return append(b, "\"}}\n\n"...)
}

func (anthropic) streamEnd(b []byte, c *call, r *result) []byte {
	b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"...)
	b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	n := r.n
	if c.content != nil {
		ch := &c.content.ans[0]
		b = append(b, ch.anthropicStopReason(r)...)
		b = append(b, `","stop_sequence":`...)
		b = ch.appendStopSequence(b, r)
		n = ch.emitted(r)
	} else {
		b = append(b, anthropicStopReason(r)...)
		b = append(b, `","stop_sequence":null`...)
	}
	// message_delta's usage is cumulative: the input and cache counts of
	// message_start again, and the final output count.
	b = append(b, `,"stop_details":null,"container":null},"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.input-c.cacheRead-c.cacheWrite), 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.cacheWrite), 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.cacheRead), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"output_tokens_details":{"thinking_tokens":0},"server_tool_use":null}}`+"\n\n"...)
	return append(b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

func (anthropic) streamError(b []byte, _ *call, _ *result) []byte {
	return appendSSE(b, "error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
}

// anthropicStopReason is the stop reason of a content answer.
func (ch *choiceOut) anthropicStopReason(r *result) string {
	switch {
	case ch.capped && ch.whole(r):
		return "max_tokens"
	case ch.tool:
		return "tool_use"
	case ch.stop != "" && ch.whole(r):
		return "stop_sequence"
	}
	return "end_turn"
}

// appendStopSequence appends the matched stop sequence, or null.
func (ch *choiceOut) appendStopSequence(b []byte, r *result) []byte {
	if ch.stop == "" || !ch.whole(r) {
		return append(b, "null"...)
	}
	return appendJSONString(b, ch.stop)
}

// appendToolUseBlock appends a tool_use content block whose input is
// input; nil gives {} (the block as a stream starts it, and a tool call
// cut before its end).
func appendToolUseBlock(b []byte, c *call, input []byte) []byte {
	cr := c.content
	if input == nil {
		input = []byte("{}")
	}
	b = append(b, `{"type":"content_block_start","index":0,"content_block":`...)
	b = appendToolUse(b, cr, 0, input)
	return append(b, '}')
}

// appendToolUse appends choice k's tool_use block.
func appendToolUse(b []byte, cr *contentReq, k int, input []byte) []byte {
	b = append(b, `{"type":"tool_use","id":`...)
	b = appendJSONString(b, cr.ids[k])
	b = append(b, `,"name":`...)
	b = appendJSONString(b, cr.tools[cr.toolIdx].name)
	b = append(b, `,"input":`...)
	b = append(b, input...)
	return append(b, `,"caller":{"type":"direct"}}`...)
}

// anthropicContentBody is body for a request with content fields.
func anthropicContentBody(b []byte, c *call, r *result) []byte {
	cr := c.content
	ch := &cr.ans[0]
	b = append(b, `{"id":"`...)
	b = append(b, r.id...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, c.model)
	b = append(b, `,"content":[`...)
	if ch.tool {
		input := []byte("{}") // a call cut before its end
		if ch.whole(r) {
			input = ch.doc
		}
		b = appendToolUse(b, cr, 0, input)
	} else {
		b = append(b, `{"type":"text","text":"`...)
		b = ch.appendTokens(b, 0, r.n)
		b = append(b, `"}`...)
	}
	b = append(b, `],"container":null,"stop_reason":"`...)
	b = append(b, ch.anthropicStopReason(r)...)
	b = append(b, `","stop_sequence":`...)
	b = ch.appendStopSequence(b, r)
	b = append(b, `,"stop_details":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.input-c.cacheRead-c.cacheWrite), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(ch.emitted(r)), 10)
	return appendUsageTail(b, c)
}

// appendUsageTail appends the rest of a Message's usage after
// output_tokens, closes it, appends the fields that follow it and closes
// the Message.
func appendUsageTail(b []byte, c *call) []byte {
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.cacheWrite), 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.cacheRead), 10)
	long := cacheWriteLong(c)
	b = append(b, `,"cache_creation":{"ephemeral_5m_input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.cacheWrite-long), 10)
	b = append(b, `,"ephemeral_1h_input_tokens":`...)
	b = strconv.AppendInt(b, int64(long), 10)
	b = append(b, `},"output_tokens_details":{"thinking_tokens":0},"server_tool_use":null,"service_tier":"standard","speed":"standard","inference_geo":`...)
	if c.inferenceGeo == "" {
		b = append(b, `"not_available"`...)
	} else {
		b = appendJSONString(b, c.inferenceGeo)
	}
	return append(b, `},"diagnostics":null}`...)
}

// cacheWriteLong is the part of c's cache write that goes to the one-hour
// cache, as the prompt-caching docs bill a request that mixes TTLs
// ("Mixing different TTLs", https://docs.claude.com/en/docs/build-with-claude/prompt-caching):
// A is the tokens read, B the highest one-hour breakpoint after A (A if
// none), C the last breakpoint; B−A tokens are written for an hour and
// C−B for five minutes. The mock's write is C−A.
func cacheWriteLong(c *call) int {
	if c.cacheWrite == 0 {
		return 0
	}
	a := c.cacheRead
	hi := a
	for _, p := range c.prefixes {
		if p.ttl == cacheTTLLong && p.tokens > hi && p.tokens <= a+c.cacheWrite {
			hi = p.tokens
		}
	}
	return hi - a
}
