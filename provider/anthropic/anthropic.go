package anthropic

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// Version is the anthropic-version header the official SDKs send.
const Version = "2023-06-01"

// versionHeader is Version as a header value, shared by every request.
var versionHeader = []string{Version}

// Format is the Anthropic Messages API: POST {base}/v1/messages, where the
// base has no /v1 (https://api.anthropic.com). The zero value is ready to
// use; provider.Anthropic is this type.
type Format struct{}

var _ wire.Format = Format{}

// Name returns "anthropic".
func (Format) Name() string { return "anthropic" }

// DefaultBaseURL returns https://api.anthropic.com.
func (Format) DefaultBaseURL() string { return "https://api.anthropic.com" }

// KeyEnv returns ANTHROPIC_API_KEY.
func (Format) KeyEnv() string { return "ANTHROPIC_API_KEY" }

type anthropicRequest struct {
	Model     string         `json:"model"`
	MaxTokens int            `json:"max_tokens"`
	System    any            `json:"system,omitempty"` // a string, or []anthropicTextBlock with cache_control
	Messages  []wire.Message `json:"messages"`
	Stream    bool           `json:"stream,omitempty"`
}

// anthropicTextBlock is a text content block; its CacheControl marks a
// prompt-cache breakpoint.
type anthropicTextBlock struct {
	Type         string        `json:"type"`
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

// cacheControl is Anthropic's cache_control: {"type": "ephemeral"} caches
// for 5 minutes, with "ttl": "1h" for an hour
// (https://docs.claude.com/en/docs/build-with-claude/prompt-caching).
type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// anthropicSystem is the system field for r: absent, the prompt as a
// string, or, to cache it, one text block with cache_control.
func anthropicSystem(r wire.Request) (any, error) {
	switch {
	case r.System == "" && r.SystemCache != "":
		return nil, fmt.Errorf("provider: anthropic request: SystemCache %q without a system prompt to cache", r.SystemCache)
	case r.System == "":
		return nil, nil
	case r.SystemCache == "":
		return r.System, nil
	}
	cc := &cacheControl{Type: "ephemeral"}
	switch r.SystemCache {
	case "5m":
	case "1h":
		cc.TTL = "1h"
	default:
		return nil, fmt.Errorf("provider: anthropic request: SystemCache %q (want 5m or 1h)", r.SystemCache)
	}
	return []anthropicTextBlock{{Type: "text", Text: r.System, CacheControl: cc}}, nil
}

// CacheReadsUncounted marks Anthropic as a provider whose limits leave
// prompt-cache reads out of its input-tokens limit (for current models,
// per https://docs.claude.com/en/api/rate-limits), so that a Client
// takes them out of a call's Cost.
func (Format) CacheReadsUncounted() {}

// NewRequest builds POST {base}/v1/messages with x-api-key, anthropic-version
// and X-Stainless-Retry-Count, as the official SDKs send them.
func (a Format) NewRequest(ctx context.Context, baseURL, apiKey string, r wire.Request, attempt int) (*http.Request, error) {
	system, err := anthropicSystem(r)
	if err != nil {
		return nil, err
	}
	req, h, err := wire.NewPost(ctx, "anthropic", wire.JoinURL(baseURL, a.DefaultBaseURL(), "/v1/messages"), anthropicRequest{
		Model:     r.Model,
		MaxTokens: r.MaxTokens,
		System:    system,
		Messages:  wire.NonNil(r.Messages),
		Stream:    r.Stream,
	}, r, attempt)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		h["X-Api-Key"] = []string{apiKey}
	}
	h["Anthropic-Version"] = versionHeader
	return req, nil
}

// Decode reads a Messages response: JSON, or the event stream when the
// response is text/event-stream.
func (Format) Decode(resp *http.Response, sent time.Time) (out wire.Response, o strategies.Outcome) {
	wire.Decode(resp, sent, &spec, &out, &o)
	return out, o
}

// Spec returns the Messages API's part of wire.Decode.
func (Format) Spec() *wire.Spec { return &spec }

var spec = wire.Spec{
	RequestID:  "Request-Id",
	Limits:     Limits,
	ParseError: parseError,
	Quota:      quota,
	Event:      event,
	Body:       decodeBody,
}

// decodeBody reads a Messages response in one pass over its top-level keys:
// this is every call's hot path. Its content and usage are read after that
// pass, not inside it, which keeps a call in flight within an 8 KiB stack
// (see wire.Decode).
func decodeBody(msg gjson.Result, out wire.Response) wire.Response {
	var content, usage gjson.Result
	msg.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			out.ID = v.String()
		case "stop_reason":
			out.StopReason = v.String()
		case "usage":
			usage = v
		case "content":
			content = v
		}
		return true
	})
	usage.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			out.Usage.InputTokens = int(v.Int())
		case "output_tokens":
			out.Usage.OutputTokens = int(v.Int())
		case "cache_read_input_tokens":
			out.Usage.CacheReadInputTokens = int(v.Int())
		case "cache_creation_input_tokens":
			out.Usage.CacheCreationInputTokens = int(v.Int())
		}
		return true
	})
	if content.Exists() {
		out.Text = anthropicText(content)
	}
	return out
}

// anthropicText concatenates the text blocks of a content array.
func anthropicText(content gjson.Result) string {
	var b strings.Builder
	content.ForEach(func(_, block gjson.Result) bool {
		if block.Get("type").String() == "text" {
			b.WriteString(block.Get("text").String())
		}
		return true
	})
	return b.String()
}

// event reads one event of the Messages stream, which ends at
// message_stop. Usage in message_delta is cumulative, so it replaces rather
// than adds. An error event ends the attempt as Failed.
func event(s *wire.Stream, ev wire.SSEEvent) bool {
	typ, ok := s.Typed(ev)
	if !ok {
		return true
	}
	switch typ {
	case "message_start":
		f := gjson.GetManyBytes(ev.Data, "message.id", "message.usage.input_tokens", "message.usage.output_tokens",
			"message.usage.cache_read_input_tokens", "message.usage.cache_creation_input_tokens")
		s.Out.ID = f[0].String()
		s.Out.Usage = strategies.Usage{InputTokens: int(f[1].Int()), OutputTokens: int(f[2].Int()),
			CacheReadInputTokens: int(f[3].Int()), CacheCreationInputTokens: int(f[4].Int())}
	case "content_block_delta":
		f := gjson.GetManyBytes(ev.Data, "delta.type", "delta.text")
		if f[0].String() == "text_delta" {
			s.Delta(f[1].String())
		}
	case "message_delta":
		f := gjson.GetManyBytes(ev.Data, "delta.stop_reason", "usage.output_tokens", "usage.input_tokens",
			"usage.cache_read_input_tokens", "usage.cache_creation_input_tokens")
		if v := f[0].String(); v != "" {
			s.Out.StopReason = v
		}
		if f[1].Exists() {
			s.Out.Usage.OutputTokens = int(f[1].Int())
		}
		if v := f[2].Int(); v > 0 {
			s.Out.Usage.InputTokens = int(v)
		}
		if v := f[3].Int(); v > 0 {
			s.Out.Usage.CacheReadInputTokens = int(v)
		}
		if v := f[4].Int(); v > 0 {
			s.Out.Usage.CacheCreationInputTokens = int(v)
		}
	case "message_stop":
		return true
	case "error":
		f := gjson.GetManyBytes(ev.Data, "error.type", "error.message")
		s.Fail(f[0].String(), f[1].String())
		return true
	}
	return false
}

// parseError reads an error body, {"type": "error", "error": {...}},
// with gjson as the rest of a response is read.
func parseError(body []byte) (wire.ErrorBody, bool) {
	if !gjson.ValidBytes(body) {
		return wire.ErrorBody{}, false
	}
	e := gjson.GetBytes(body, "error")
	if !e.IsObject() {
		return wire.ErrorBody{}, false
	}
	f := gjson.GetMany(e.Raw, "type", "details.error_code", "message")
	return wire.ErrorBody{Type: f[0].String(), Code: f[1].String(), Message: f[2].String()}, true
}

// quota reports whether an error is a refusal for a spent spend
// limit (https://platform.claude.com/docs/en/api/rate-limits and
// https://platform.claude.com/docs/en/api/errors): the tier's monthly cap,
// a 429 rate_limit_error with details.error_code
// enforced_spend_limit_reached and no retry-after; or a spend limit the
// organization or workspace set, a 400 invalid_request_error whose message
// begins "You have reached your specified" (the docs give no code for it).
func quota(e *wire.APIError) bool {
	switch e.Status {
	case http.StatusTooManyRequests:
		return e.Code == "enforced_spend_limit_reached"
	case http.StatusBadRequest:
		return e.Type == "invalid_request_error" && strings.HasPrefix(e.Message, "You have reached your specified")
	}
	return false
}

// anthropicLimitHeaders are the canonical header names of each dimension:
// limit, remaining, reset.
var anthropicLimitHeaders = func() (h [4][3]string) {
	for i, dim := range [4]string{"Requests", "Tokens", "Input-Tokens", "Output-Tokens"} {
		p := "Anthropic-Ratelimit-" + dim + "-"
		h[i] = [3]string{p + "Limit", p + "Remaining", p + "Reset"}
	}
	return h
}()

// Limits parses anthropic-ratelimit-{requests,tokens,input-tokens,
// output-tokens}-{limit,remaining,reset}; resets are RFC 3339 instants.
func Limits(h http.Header, _ time.Time) strategies.Limits {
	var l [4]strategies.Limit
	for i, names := range anthropicLimitHeaders {
		if len(h[names[0]]) == 0 { // no limit: not Known, whatever else is sent
			continue
		}
		l[i] = strategies.Limit{Limit: wire.ParseInt(h, names[0]), Remaining: wire.ParseInt(h, names[1])}
		if v := strings.TrimSpace(h.Get(names[2])); v != "" {
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				l[i].Reset = t
			}
		}
	}
	return strategies.Limits{Requests: l[0], Tokens: l[1], InputTokens: l[2], OutputTokens: l[3]}
}

// System is the system field of a Messages request for r: absent (nil),
// the prompt as a string, or one text block with cache_control for
// SystemCache. Anthropic on Vertex AI (package vertexanthropic) sends the
// same body.
func System(r wire.Request) (any, error) { return anthropicSystem(r) }
