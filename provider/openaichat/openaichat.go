package openaichat

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// Format is the OpenAI Chat Completions API: POST {base}/chat/completions,
// where the base includes /v1 (https://api.openai.com/v1). The zero value
// sends max_completion_tokens, as current models require; provider.OpenAI
// is this type.
type Format struct {
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens, for
	// OpenAI-compatible servers that only know the older field.
	LegacyMaxTokens bool
}

var _ wire.Format = Format{}

// Name returns "openai".
func (Format) Name() string { return "openai" }

// DefaultBaseURL returns https://api.openai.com/v1.
func (Format) DefaultBaseURL() string { return "https://api.openai.com/v1" }

// KeyEnv returns OPENAI_API_KEY.
func (Format) KeyEnv() string { return "OPENAI_API_KEY" }

type openAIRequest struct {
	Model               string         `json:"model"`
	Messages            []wire.Message `json:"messages"`
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
func (p Format) NewRequest(ctx context.Context, baseURL, apiKey string, r wire.Request, attempt int) (*http.Request, error) {
	msgs := make([]wire.Message, 0, len(r.Messages)+1)
	if r.System != "" {
		msgs = append(msgs, wire.Message{Role: "system", Content: r.System})
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
	req, h, err := wire.NewPost(ctx, "openai", wire.JoinURL(baseURL, p.DefaultBaseURL(), "/chat/completions"), body, r, attempt)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		h["Authorization"] = []string{"Bearer " + apiKey}
	}
	return req, nil
}

// ErrorObject reads an OpenAI error object: its type (its code when it has
// none), its code as a string ("" for null or absent; code may be a string,
// a number or null) and its message.
func ErrorObject(e gjson.Result) wire.ErrorBody {
	f := gjson.GetMany(e.Raw, "type", "code", "message")
	b := wire.ErrorBody{Type: f[0].String(), Code: f[1].String(), Message: f[2].String()}
	if b.Type == "" {
		b.Type = b.Code
	}
	return b
}

// Decode reads a chat completion: JSON, or the data-only event stream when
// the response is text/event-stream.
func (Format) Decode(resp *http.Response, sent time.Time) (out wire.Response, o strategies.Outcome) {
	wire.Decode(resp, sent, &spec, &out, &o)
	return out, o
}

// Spec returns the Chat Completions API's part of wire.Decode.
func (Format) Spec() *wire.Spec { return &spec }

var spec = wire.Spec{
	RequestID:  "X-Request-Id",
	Limits:     Limits,
	ParseError: ParseError,
	Quota:      Quota,
	Event:      event,
	Body:       decodeBody,
}

// decodeBody reads a chat completion's first choice and usage.
func decodeBody(completion gjson.Result, out wire.Response) wire.Response {
	// The choices and usage are read after the pass over the top-level
	// keys, not inside it, as anthropic's decodeBody does (see wire.Decode).
	var choices, usage gjson.Result
	completion.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			out.ID = v.String()
		case "choices":
			choices = v
		case "usage":
			usage = v
		}
		return true
	})
	choices.ForEach(func(_, ch gjson.Result) bool {
		if ch.Get("index").Int() != 0 {
			return true
		}
		c := gjson.GetMany(ch.Raw, "message.content", "finish_reason")
		out.Text, out.StopReason = c[0].String(), c[1].String()
		return false
	})
	if usage.Exists() {
		out.Usage = openAIUsage(usage)
	}
	return out
}

// openAIUsage reads a usage object; zero for null or absent.
func openAIUsage(u gjson.Result) strategies.Usage {
	if !u.IsObject() {
		return strategies.Usage{}
	}
	f := gjson.GetMany(u.Raw, "prompt_tokens", "completion_tokens", "prompt_tokens_details.cached_tokens")
	return strategies.Usage{InputTokens: int(f[0].Int()), OutputTokens: int(f[1].Int()), CacheReadInputTokens: int(f[2].Int())}
}

// event reads one chunk of the data-only stream, which ends at
// data: [DONE]. The usage chunk (choices: []) comes just before [DONE] when
// the request asked for it; a chunk with a top-level "error" ends the
// attempt as Failed.
func event(s *wire.Stream, ev wire.SSEEvent) bool {
	if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
		return true
	}
	if !gjson.ValidBytes(ev.Data) {
		s.Invalid(fmt.Errorf("chunk: %w", wire.ErrNotJSON))
		return true
	}
	f := gjson.GetManyBytes(ev.Data, "error", "id", "choices", "usage")
	if f[0].IsObject() {
		e := ErrorObject(f[0])
		s.Fail(e.Type, e.Message)
		return true
	}
	if s.Out.ID == "" {
		s.Out.ID = f[1].String()
	}
	f[2].ForEach(func(_, ch gjson.Result) bool {
		if ch.Get("index").Int() != 0 {
			return true
		}
		c := gjson.GetMany(ch.Raw, "delta.content", "finish_reason")
		s.Delta(c[0].String())
		if v := c[1].String(); v != "" {
			s.Out.StopReason = v
		}
		return false
	})
	if f[3].IsObject() {
		s.Out.Usage = openAIUsage(f[3])
	}
	return false
}

// ParseError reads an error body (the Responses API shares it), {"error": {...}}, with gjson as the rest
// of a response is read (encoding/json's reflection took a third of a
// worker's stack here).
func ParseError(body []byte) (wire.ErrorBody, bool) {
	if !gjson.ValidBytes(body) {
		return wire.ErrorBody{}, false
	}
	e := gjson.GetBytes(body, "error")
	if !e.IsObject() {
		return wire.ErrorBody{}, false
	}
	return ErrorObject(e), true
}

// openAIQuotaCodes are the error codes of OpenAI's 429s for a spent quota,
// balance or spend limit, which retrying does not fix
// (https://help.openai.com/en/articles/6614457 and
// https://developers.openai.com/api/docs/guides/spend-limits); their
// error.type may be the broader insufficient_quota.
var openAIQuotaCodes = map[string]bool{
	"insufficient_quota":                true,
	"credit_balance_exhausted":          true,
	"organization_usage_limit_exceeded": true,
	"organization_spend_limit_exceeded": true,
	"project_spend_limit_exceeded":      true,
}

// Quota reports whether an error (of either OpenAI API) is a 429 for a spent quota: its type
// insufficient_quota or its code one of openAIQuotaCodes.
func Quota(e *wire.APIError) bool {
	return e.Status == http.StatusTooManyRequests && (e.Type == "insufficient_quota" || openAIQuotaCodes[e.Code])
}

// openAILimitHeaders are the canonical header names of each dimension:
// limit, remaining, reset.
var openAILimitHeaders = [2][3]string{
	{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"},
	{"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"},
}

// Limits parses (for both OpenAI APIs) x-ratelimit-{limit,remaining,reset}-{requests,tokens};
// resets are Go-style durations ("1s", "6m0s", "12ms") counted from received.
func Limits(h http.Header, received time.Time) strategies.Limits {
	var l [2]strategies.Limit
	for i, names := range openAILimitHeaders {
		if len(h[names[0]]) == 0 { // no limit: not Known, whatever else is sent
			continue
		}
		l[i] = strategies.Limit{Limit: wire.ParseInt(h, names[0]), Remaining: wire.ParseInt(h, names[1])}
		if v := strings.TrimSpace(h.Get(names[2])); v != "" {
			if d, err := time.ParseDuration(v); err == nil && d >= 0 {
				l[i].Reset = received.Add(d)
			}
		}
	}
	return strategies.Limits{Requests: l[0], Tokens: l[1]}
}
