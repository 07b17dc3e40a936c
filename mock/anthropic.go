package mock

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// anthropic is the Messages API wire format (WIRE.md §1).
type anthropic struct{}

func (anthropic) name() string            { return "anthropic" }
func (anthropic) requestIDHeader() string { return "request-id" }
func (anthropic) overloadStatus() int     { return 529 }

type anthropicRequest struct {
	Model     *string            `json:"model"`
	MaxTokens *int64             `json:"max_tokens"`
	Messages  *[]json.RawMessage `json:"messages"`
	System    json.RawMessage    `json:"system"`
	Tools     json.RawMessage    `json:"tools"`
	Stream    *bool              `json:"stream"`
}

type anthropicMessage struct {
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (anthropic) decode(body []byte, _ int) (*call, error) {
	return decodeAnthropic(body, true)
}

// decodeAnthropic decodes a Messages request; count_tokens requests have no
// max_tokens (needMax false).
func decodeAnthropic(body []byte, needMax bool) (*call, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, describeJSONError(err)
	}
	c := &call{}
	switch {
	case req.Model == nil:
		return nil, invalid("model", "field required")
	case *req.Model == "":
		return nil, invalid("model", "must not be empty")
	}
	c.model = *req.Model
	c.modelJSON, _ = json.Marshal(c.model)
	if needMax {
		switch {
		case req.MaxTokens == nil:
			return nil, invalid("max_tokens", "field required")
		case *req.MaxTokens < 1:
			return nil, invalid("max_tokens", "must be at least 1, got %d", *req.MaxTokens)
		case *req.MaxTokens > MaxOutputTokens:
			return nil, invalid("max_tokens", "%d is above the maximum of %d", *req.MaxTokens, MaxOutputTokens)
		}
		c.maxTokens = int(*req.MaxTokens)
	}
	if req.Messages == nil {
		return nil, invalid("messages", "field required")
	}
	if len(*req.Messages) == 0 {
		return nil, invalid("messages", "at least one message is required")
	}
	for i, raw := range *req.Messages {
		var m anthropicMessage
		p := fmt.Sprintf("messages.%d", i)
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, invalid(p, "want a message object with role and content")
		}
		switch {
		case m.Role == nil:
			return nil, invalid(p+".role", "field required")
		case *m.Role != "user" && *m.Role != "assistant":
			return nil, invalid(p+".role", "want user or assistant, got %q", *m.Role)
		}
		text, err := messageText(m.Content, p+".content")
		if err != nil {
			return nil, err
		}
		c.input += messageTokens(text)
	}
	if len(req.System) > 0 && string(req.System) != "null" {
		text, err := messageText(req.System, "system")
		if err != nil {
			return nil, err
		}
		c.input += messageTokens(text)
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		c.input += EstimateTokens(string(req.Tools))
	}
	c.stream = req.Stream != nil && *req.Stream
	return c, nil
}

type anthropicErrorBody struct {
	Type      string `json:"type"`
	Error     detail `json:"error"`
	RequestID string `json:"request_id"`
}

type detail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (anthropic) writeError(w http.ResponseWriter, status int, e apiError, reqID string) {
	writeJSONBody(w, status, anthropicErrorBody{
		Type:      "error",
		Error:     detail{Type: anthropicErrorType(status), Message: e.msg},
		RequestID: reqID,
	})
}

// roundThousand rounds a remaining token count to the nearest 1000, as the
// Anthropic headers do, without exceeding the limit.
func roundThousand(v, limit int64) int64 {
	return min(limit, int64(math.Round(float64(v)/1000))*1000)
}

// resetTime is the RFC 3339 instant, rounded up to the second, at which a
// bucket is full again.
func resetTime(now time.Time, d time.Duration) string {
	t := now.Add(d)
	if r := t.Truncate(time.Second); r.Before(t) {
		t = r.Add(time.Second)
	}
	return t.UTC().Format(time.RFC3339)
}

func (anthropic) setLimitHeaders(h http.Header, s snapshot, now time.Time) {
	set := func(name string, d dimension, round bool) {
		if d.limit <= 0 {
			return
		}
		rem := d.remaining
		if round {
			rem = roundThousand(rem, d.limit)
		}
		h["Anthropic-Ratelimit-"+name+"-Limit"] = []string{strconv.FormatInt(d.limit, 10)}
		h["Anthropic-Ratelimit-"+name+"-Remaining"] = []string{strconv.FormatInt(rem, 10)}
		h["Anthropic-Ratelimit-"+name+"-Reset"] = []string{resetTime(now, d.reset)}
	}
	set("Requests", s.requests, false)
	set("Input-Tokens", s.input, true)
	set("Output-Tokens", s.output, true)
	tokens := s.tokens
	if tokens.limit == 0 && s.input.limit > 0 && s.output.limit > 0 {
		// Real responses report input + output as the combined limit.
		tokens = dimension{
			limit:     s.input.limit + s.output.limit,
			remaining: s.input.remaining + s.output.remaining,
			reset:     max(s.input.reset, s.output.reset),
		}
	}
	set("Tokens", tokens, true)
}

type anthropicUsage struct {
	InputTokens              int    `json:"input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	ServiceTier              string `json:"service_tier"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicMessageBody struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []textBlock    `json:"content"`
	StopReason   string         `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

func anthropicStopReason(r *result) string {
	if r.capped {
		return "max_tokens"
	}
	return "end_turn"
}

func (anthropic) body(c *call, r *result) ([]byte, error) {
	return json.Marshal(anthropicMessageBody{
		ID:         r.id,
		Type:       "message",
		Role:       "assistant",
		Model:      c.model,
		Content:    []textBlock{{Type: "text", Text: Filler(r.n)}},
		StopReason: anthropicStopReason(r),
		Usage: anthropicUsage{
			InputTokens:  c.input,
			OutputTokens: r.n,
			ServiceTier:  "standard",
		},
	})
}

func (anthropic) streamStart(b []byte, c *call, r *result) []byte {
	b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\""...)
	b = append(b, r.id...)
	b = append(b, `","type":"message","role":"assistant","content":[],"model":`...)
	b = append(b, c.modelJSON...)
	b = append(b, `,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(c.input), 10)
	b = append(b, `,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"service_tier":"standard"}}}`+"\n\n"...)
	b = appendSSE(b, "content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
	return appendSSE(b, "ping", []byte(`{"type": "ping"}`))
}

func (anthropic) streamDelta(b []byte, _ *call, _ *result, from, to int) []byte {
	b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""...)
	b = appendFillerJSON(b, from, to)
	return append(b, "\"}}\n\n"...)
}

func (anthropic) streamEnd(b []byte, _ *call, r *result) []byte {
	b = appendSSE(b, "content_block_stop", []byte(`{"type":"content_block_stop","index":0}`))
	b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	b = append(b, anthropicStopReason(r)...)
	b = append(b, `","stop_sequence":null},"usage":{"output_tokens":`...)
	b = strconv.AppendInt(b, int64(r.n), 10)
	b = append(b, "}}\n\n"...)
	return appendSSE(b, "message_stop", []byte(`{"type":"message_stop"}`))
}

func (anthropic) streamError(b []byte, _ *call, _ *result) []byte {
	return appendSSE(b, "error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
}
