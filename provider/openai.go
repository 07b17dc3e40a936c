package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// OpenAI is the OpenAI Chat Completions API: POST {base}/chat/completions,
// where the base includes /v1 (https://api.openai.com/v1). The zero value
// sends max_completion_tokens, as current models require.
type OpenAI struct {
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens, for
	// OpenAI-compatible servers that only know the older field.
	LegacyMaxTokens bool
}

var _ Provider = OpenAI{}

// Name returns "openai".
func (OpenAI) Name() string { return "openai" }

// DefaultBaseURL returns https://api.openai.com/v1.
func (OpenAI) DefaultBaseURL() string { return "https://api.openai.com/v1" }

// KeyEnv returns OPENAI_API_KEY.
func (OpenAI) KeyEnv() string { return "OPENAI_API_KEY" }

type openAIRequest struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// NewRequest builds POST {base}/chat/completions with a bearer token and
// X-Stainless-Retry-Count. The system prompt becomes the first message; a
// streaming request asks for the usage chunk (stream_options.include_usage).
func (p OpenAI) NewRequest(ctx context.Context, baseURL, apiKey string, r Request, attempt int) (*http.Request, error) {
	msgs := make([]Message, 0, len(r.Messages)+1)
	if r.System != "" {
		msgs = append(msgs, Message{Role: "system", Content: r.System})
	}
	msgs = append(msgs, r.Messages...)
	body := openAIRequest{Model: r.Model, Messages: msgs, Stream: r.Stream}
	if p.LegacyMaxTokens {
		body.MaxTokens = r.MaxTokens
	} else {
		body.MaxCompletionTokens = r.MaxTokens
	}
	if r.Stream {
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("provider: encode openai request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(baseURL, p.DefaultBaseURL(), "/chat/completions"), bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("provider: openai request: %w", err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	if r.Stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
	h.Set("X-Stainless-Retry-Count", strconv.Itoa(attempt))
	if r.IdempotencyKey != "" {
		h.Set("Idempotency-Key", r.IdempotencyKey)
	}
	return req, nil
}

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func (u *openAIUsage) usage() strategies.Usage {
	return strategies.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
}

type openAICompletion struct {
	ID      string `json:"id"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openAIUsage `json:"usage"`
	// Error is set on an error frame inside a stream.
	Error *openAIErrorBody `json:"error"`
}

type openAIErrorBody struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"` // a string, a number or null
}

func (e *openAIErrorBody) typ() string {
	if e.Type != "" {
		return e.Type
	}
	var s string
	if json.Unmarshal(e.Code, &s) == nil {
		return s
	}
	return strings.Trim(string(e.Code), `"`)
}

// Decode reads a chat completion: JSON, or the data-only event stream when
// the response is text/event-stream.
func (p OpenAI) Decode(resp *http.Response, sent time.Time) (Response, strategies.Outcome) {
	o := headerOutcome(resp, time.Now(), OpenAILimits)
	out := Response{RequestID: resp.Header.Get("X-Request-Id")}
	if o.Kind != strategies.Success {
		o.Err = readAPIError(resp, out.RequestID, parseOpenAIError)
		return finish(resp, sent, out, o)
	}
	if isEventStream(resp) {
		out, o = p.decodeStream(resp, sent, out, o)
		return finish(resp, sent, out, o)
	}
	var c openAICompletion
	if err := decodeJSON(resp.Body, &c); err != nil {
		return finish(resp, sent, out, invalid(o, err))
	}
	out.ID = c.ID
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.Message.Content != nil {
			out.Text = *ch.Message.Content
		}
		if ch.FinishReason != nil {
			out.StopReason = *ch.FinishReason
		}
	}
	if c.Usage != nil {
		out.Usage = c.Usage.usage()
	}
	o.Usage = out.Usage
	return finish(resp, sent, out, o)
}

// decodeStream reads data-only chunks to data: [DONE]. The usage chunk
// (choices: []) comes just before [DONE] when the request asked for it; a
// frame with a top-level "error" ends the attempt as Failed with the 200 the
// stream started with.
func (OpenAI) decodeStream(resp *http.Response, sent time.Time, out Response, o strategies.Outcome) (Response, strategies.Outcome) {
	sr := NewSSEReader(resp.Body)
	var text strings.Builder
	for {
		ev, err := sr.Next()
		if err != nil {
			out.Text = text.String()
			o.Usage = out.Usage
			return out, streamCut(resp, o, err)
		}
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			out.Text = text.String()
			o.Usage = out.Usage
			return out, o
		}
		var c openAICompletion
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			out.Text = text.String()
			o.Usage = out.Usage
			return out, invalid(o, fmt.Errorf("chunk: %w", err))
		}
		if c.Error != nil {
			out.Text = text.String()
			o.Usage = out.Usage
			o.Kind = strategies.Failed
			o.Err = &APIError{Status: resp.StatusCode, Type: c.Error.typ(), Message: c.Error.Message, RequestID: out.RequestID}
			return out, o
		}
		if out.ID == "" {
			out.ID = c.ID
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue
			}
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				if out.TTFT == 0 {
					out.TTFT = max(time.Since(sent), 1)
				}
				text.WriteString(*ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				out.StopReason = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			out.Usage = c.Usage.usage()
		}
	}
}

func parseOpenAIError(body []byte) (typ, msg string, ok bool) {
	var e struct {
		Error *openAIErrorBody `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		return "", "", false
	}
	return e.Error.typ(), e.Error.Message, true
}

// OpenAILimits parses x-ratelimit-{limit,remaining,reset}-{requests,tokens};
// resets are Go-style durations ("1s", "6m0s", "12ms") counted from received.
func OpenAILimits(h http.Header, received time.Time) strategies.Limits {
	dim := func(name string) strategies.Limit {
		l := strategies.Limit{
			Limit:     parseInt(h, "X-Ratelimit-Limit-"+name),
			Remaining: parseInt(h, "X-Ratelimit-Remaining-"+name),
		}
		if v := strings.TrimSpace(h.Get("X-Ratelimit-Reset-" + name)); v != "" {
			if d, err := time.ParseDuration(v); err == nil && d >= 0 {
				l.Reset = received.Add(d)
			}
		}
		return l
	}
	return strategies.Limits{Requests: dim("Requests"), Tokens: dim("Tokens")}
}
