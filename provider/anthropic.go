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

	"github.com/ratelab/ratelab/strategies"
)

// AnthropicVersion is the anthropic-version header the official SDKs send.
const AnthropicVersion = "2023-06-01"

// Anthropic is the Anthropic Messages API: POST {base}/v1/messages, where the
// base has no /v1 (https://api.anthropic.com). The zero value is ready to use.
type Anthropic struct{}

var _ Provider = Anthropic{}

// Name returns "anthropic".
func (Anthropic) Name() string { return "anthropic" }

// DefaultBaseURL returns https://api.anthropic.com.
func (Anthropic) DefaultBaseURL() string { return "https://api.anthropic.com" }

// KeyEnv returns ANTHROPIC_API_KEY.
func (Anthropic) KeyEnv() string { return "ANTHROPIC_API_KEY" }

type anthropicRequest struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	System    string    `json:"system,omitempty"`
	Messages  []Message `json:"messages"`
	Stream    bool      `json:"stream,omitempty"`
}

// NewRequest builds POST {base}/v1/messages with x-api-key, anthropic-version
// and X-Stainless-Retry-Count, as the official SDKs send them.
func (a Anthropic) NewRequest(ctx context.Context, baseURL, apiKey string, r Request, attempt int) (*http.Request, error) {
	body, err := json.Marshal(anthropicRequest{
		Model:     r.Model,
		MaxTokens: r.MaxTokens,
		System:    r.System,
		Messages:  nonNil(r.Messages),
		Stream:    r.Stream,
	})
	if err != nil {
		return nil, fmt.Errorf("provider: encode anthropic request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(baseURL, a.DefaultBaseURL(), "/v1/messages"), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("provider: anthropic request: %w", err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	if r.Stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	if apiKey != "" {
		h.Set("X-Api-Key", apiKey)
	}
	h.Set("Anthropic-Version", AnthropicVersion)
	h.Set("X-Stainless-Retry-Count", strconv.Itoa(attempt))
	if r.IdempotencyKey != "" {
		h.Set("Idempotency-Key", r.IdempotencyKey)
	}
	return req, nil
}

// Decode reads a Messages response: JSON, or the event stream when the
// response is text/event-stream.
func (a Anthropic) Decode(resp *http.Response, sent time.Time) (Response, strategies.Outcome) {
	o := headerOutcome(resp, time.Now(), AnthropicLimits)
	out := Response{RequestID: resp.Header.Get("Request-Id")}
	if o.Kind != strategies.Success {
		o.Err = readAPIError(resp, out.RequestID, parseAnthropicError)
		return finish(resp, sent, out, o)
	}
	if isEventStream(resp) {
		out, o = a.decodeStream(resp, sent, out, o)
		return finish(resp, sent, out, o)
	}
	var m anthropicMessage
	if err := decodeJSON(resp.Body, &m); err != nil {
		return finish(resp, sent, out, invalid(o, err))
	}
	out.ID, out.StopReason = m.ID, m.StopReason
	out.Text = m.text()
	out.Usage = strategies.Usage{InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens}
	o.Usage = out.Usage
	return finish(resp, sent, out, o)
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type anthropicMessage struct {
	ID      string `json:"id"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      anthropicUsage `json:"usage"`
}

func (m *anthropicMessage) text() string {
	if len(m.Content) == 1 {
		return m.Content[0].Text
	}
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// anthropicEvent is the union of the stream's event payloads.
type anthropicEvent struct {
	Type    string           `json:"type"`
	Message anthropicMessage `json:"message"` // message_start
	Delta   struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		StopReason string `json:"stop_reason"`
	} `json:"delta"` // content_block_delta, message_delta
	Usage *anthropicUsage `json:"usage"` // message_delta: cumulative
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"` // error
}

// decodeStream reads the Messages event stream to message_stop. Usage in
// message_delta is cumulative, so it replaces rather than adds. An error
// event ends the attempt as Failed with the 200 it started with: no SDK
// retries once a stream has begun.
func (Anthropic) decodeStream(resp *http.Response, sent time.Time, out Response, o strategies.Outcome) (Response, strategies.Outcome) {
	sr := NewSSEReader(resp.Body)
	var text strings.Builder
	for {
		ev, err := sr.Next()
		if err != nil {
			out.Text = text.String()
			o.Usage = out.Usage
			return out, streamCut(resp, o, err)
		}
		var e anthropicEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			out.Text = text.String()
			o.Usage = out.Usage
			return out, invalid(o, fmt.Errorf("event %q: %w", ev.Event, err))
		}
		typ := ev.Event
		if typ == "" {
			typ = e.Type
		}
		switch typ {
		case "message_start":
			out.ID = e.Message.ID
			out.Usage = strategies.Usage{InputTokens: e.Message.Usage.InputTokens, OutputTokens: e.Message.Usage.OutputTokens}
		case "content_block_delta":
			if e.Delta.Type == "text_delta" && e.Delta.Text != "" {
				if out.TTFT == 0 {
					out.TTFT = max(time.Since(sent), 1)
				}
				text.WriteString(e.Delta.Text)
			}
		case "message_delta":
			if e.Delta.StopReason != "" {
				out.StopReason = e.Delta.StopReason
			}
			if e.Usage != nil {
				out.Usage.OutputTokens = e.Usage.OutputTokens
				if e.Usage.InputTokens > 0 {
					out.Usage.InputTokens = e.Usage.InputTokens
				}
			}
		case "message_stop":
			out.Text = text.String()
			o.Usage = out.Usage
			return out, o
		case "error":
			out.Text = text.String()
			o.Usage = out.Usage
			o.Kind = strategies.Failed
			o.Err = &APIError{Status: resp.StatusCode, Type: e.Error.Type, Message: e.Error.Message, RequestID: out.RequestID}
			return out, o
		}
	}
}

func parseAnthropicError(body []byte) (typ, msg string, ok bool) {
	var e struct {
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		return "", "", false
	}
	return e.Error.Type, e.Error.Message, true
}

// AnthropicLimits parses anthropic-ratelimit-{requests,tokens,input-tokens,
// output-tokens}-{limit,remaining,reset}; resets are RFC 3339 instants.
func AnthropicLimits(h http.Header, _ time.Time) strategies.Limits {
	dim := func(name string) strategies.Limit {
		p := "Anthropic-Ratelimit-" + name + "-"
		l := strategies.Limit{Limit: parseInt(h, p+"Limit"), Remaining: parseInt(h, p+"Remaining")}
		if v := strings.TrimSpace(h.Get(p + "Reset")); v != "" {
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				l.Reset = t
			}
		}
		return l
	}
	return strategies.Limits{
		Requests:     dim("Requests"),
		Tokens:       dim("Tokens"),
		InputTokens:  dim("Input-Tokens"),
		OutputTokens: dim("Output-Tokens"),
	}
}

// Shared decoding helpers.

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

func isEventStream(resp *http.Response) bool {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	return strings.HasPrefix(strings.TrimSpace(ct), "text/event-stream")
}

// maxBody bounds a JSON body read into memory.
const maxBody = 64 << 20

func decodeJSON(r io.Reader, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, maxBody))
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// readAPIError reads an error response's body and returns it as an APIError,
// with type and message when the body has the provider's error shape.
func readAPIError(resp *http.Response, requestID string, parse func([]byte) (typ, msg string, ok bool)) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &APIError{Status: resp.StatusCode, RequestID: requestID}
	if typ, msg, ok := parse(body); ok {
		e.Type, e.Message = typ, msg
	} else if err == nil {
		e.Message = strings.TrimSpace(string(bytes.ToValidUTF8(body[:min(len(body), 512)], nil)))
	}
	return e
}

// invalid marks an attempt whose 2xx body could not be decoded.
func invalid(o strategies.Outcome, err error) strategies.Outcome {
	o.Kind = strategies.Failed
	o.Err = fmt.Errorf("%w: %w", ErrInvalidResponse, err)
	return o
}

// streamCut classifies a stream that ended before its final event: Canceled
// when the request's context ended it, Failed otherwise.
func streamCut(resp *http.Response, o strategies.Outcome, err error) strategies.Outcome {
	if resp.Request != nil {
		if cerr := resp.Request.Context().Err(); cerr != nil {
			o.Kind = strategies.Canceled
			o.Err = cerr
			return o
		}
	}
	o.Kind = strategies.Failed
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		o.Err = ErrIncompleteStream
	} else {
		o.Err = fmt.Errorf("%w: %w", ErrIncompleteStream, err)
	}
	return o
}

// finish drains what is left of the body (so the connection can be reused),
// sets the latency, and turns a read cut by the caller's context into
// Canceled.
func finish(resp *http.Response, sent time.Time, out Response, o strategies.Outcome) (Response, strategies.Outcome) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 256<<10)) //nolint:errcheck // best effort
	o.Latency = time.Since(sent)
	var apiErr *APIError
	if o.Kind == strategies.Failed && !errors.As(o.Err, &apiErr) && resp.Request != nil {
		if cerr := resp.Request.Context().Err(); cerr != nil {
			o.Kind, o.Err = strategies.Canceled, cerr
		}
	}
	return out, o
}
