package openairesponses

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ratelab/ratelab/provider/openaichat"
	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// Format is the OpenAI Responses API: POST {base}/responses, where
// the base includes /v1 (https://api.openai.com/v1), as openai-go's
// client.Responses.New sends it. Its errors and rate-limit headers are the
// Chat Completions API's (openaichat.Limits, the same error envelope); its
// request and response shapes are its own. The zero value is ready to use;
// provider.OpenAIResponses is this type.
//
// The system prompt is sent as instructions and the messages as input
// message items; MaxTokens is max_output_tokens, which the API requires to
// be at least 16. wire.Response.StopReason is "completed", or the
// incomplete_details reason (max_output_tokens, content_filter) of a
// response that stopped early. A stream is read to response.completed or
// response.incomplete; response.failed and error events end the attempt as
// Failed with the 200 it started with.
type Format struct{}

var _ wire.Format = Format{}

// Name returns "openai-responses".
func (Format) Name() string { return "openai-responses" }

// DefaultBaseURL returns https://api.openai.com/v1.
func (Format) DefaultBaseURL() string { return "https://api.openai.com/v1" }

// KeyEnv returns OPENAI_API_KEY.
func (Format) KeyEnv() string { return "OPENAI_API_KEY" }

type responsesRequest struct {
	Model           string         `json:"model"`
	Instructions    string         `json:"instructions,omitempty"`
	Input           []responseItem `json:"input"`
	MaxOutputTokens int            `json:"max_output_tokens,omitempty"`
	Stream          bool           `json:"stream,omitempty"`
}

// responseItem is an input message item with string content.
type responseItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

// NewRequest builds POST {base}/responses with a bearer token and
// X-Stainless-Retry-Count.
func (p Format) NewRequest(ctx context.Context, baseURL, apiKey string, r wire.Request, attempt int) (*http.Request, error) {
	body := responsesRequest{
		Model:           r.Model,
		Instructions:    r.System,
		Input:           make([]responseItem, len(r.Messages)),
		MaxOutputTokens: r.MaxTokens,
		Stream:          r.Stream,
	}
	for i, m := range r.Messages {
		body.Input[i] = responseItem{Type: "message", Role: m.Role, Content: m.Content}
	}
	req, h, err := wire.NewPost(ctx, "openai-responses", wire.JoinURL(baseURL, p.DefaultBaseURL(), "/responses"), body, r, attempt)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		h["Authorization"] = []string{"Bearer " + apiKey}
	}
	return req, nil
}

// Decode reads a wire.Response: JSON, or the event stream when the response is
// text/event-stream.
func (Format) Decode(resp *http.Response, sent time.Time) (out wire.Response, o strategies.Outcome) {
	wire.Decode(resp, sent, &spec, &out, &o)
	return out, o
}

// Spec returns the Responses API's part of wire.Decode: its errors and
// rate-limit headers are the Chat Completions API's.
func (Format) Spec() *wire.Spec { return &spec }

var spec = wire.Spec{
	RequestID:  "X-Request-Id",
	Limits:     openaichat.Limits,
	ParseError: openaichat.ParseError,
	Quota:      openaichat.Quota,
	Event:      event,
	Body:       decodeBody,
}

// decodeBody reads a wire.Response object's id, text, stop reason and
// usage.
func decodeBody(r gjson.Result, out wire.Response) wire.Response {
	// The output and usage are read after the pass over the top-level
	// keys, not inside it, as anthropic's decodeBody does (see wire.Decode).
	var output, usage gjson.Result
	r.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			out.ID = v.String()
		case "output":
			output = v
		case "usage":
			usage = v
		}
		return true
	})
	if output.Exists() {
		out.Text = responsesText(output)
	}
	if usage.Exists() {
		out.Usage = responsesUsage(usage)
	}
	out.StopReason = responsesStopReason(r)
	return out
}

// responsesText concatenates the output_text parts of the message items of
// an output array.
func responsesText(output gjson.Result) string {
	var b strings.Builder
	output.ForEach(func(_, item gjson.Result) bool {
		if item.Get("type").String() != "message" {
			return true
		}
		item.Get("content").ForEach(func(_, part gjson.Result) bool {
			if part.Get("type").String() == "output_text" {
				b.WriteString(part.Get("text").String())
			}
			return true
		})
		return true
	})
	return b.String()
}

// responsesStopReason is "completed", the reason of an incomplete
// response, or its status otherwise.
func responsesStopReason(r gjson.Result) string {
	f := gjson.GetMany(r.Raw, "status", "incomplete_details.reason")
	if f[0].String() == "incomplete" && f[1].String() != "" {
		return f[1].String()
	}
	return f[0].String()
}

// responsesUsage reads a usage object; zero for null or absent.
func responsesUsage(u gjson.Result) strategies.Usage {
	if !u.IsObject() {
		return strategies.Usage{}
	}
	f := gjson.GetMany(u.Raw, "input_tokens", "output_tokens", "input_tokens_details.cached_tokens")
	return strategies.Usage{InputTokens: int(f[0].Int()), OutputTokens: int(f[1].Int()), CacheReadInputTokens: int(f[2].Int())}
}

// event reads one event of the Responses stream, which ends at
// response.completed or response.incomplete (a success, with the final
// usage), or response.failed or error (Failed).
func event(s *wire.Stream, ev wire.SSEEvent) bool {
	typ, ok := s.Typed(ev)
	if !ok {
		return true
	}
	switch typ {
	case "response.created":
		s.Out.ID = gjson.GetBytes(ev.Data, "response.id").String()
	case "response.output_text.delta":
		s.Delta(gjson.GetBytes(ev.Data, "delta").String())
	case "response.completed", "response.incomplete":
		r := gjson.GetBytes(ev.Data, "response")
		if id := r.Get("id").String(); id != "" {
			s.Out.ID = id
		}
		s.Out.Usage = responsesUsage(r.Get("usage"))
		s.Out.StopReason = responsesStopReason(r)
		return true
	case "response.failed":
		f := gjson.GetManyBytes(ev.Data, "response.error.code", "response.error.message")
		s.Fail(f[0].String(), f[1].String())
		return true
	case "error":
		// The documented event has code and message at the top level;
		// some servers nest them under "error" as Chat Completions does.
		f := gjson.GetManyBytes(ev.Data, "code", "message", "error.code", "error.message", "error.type")
		typ, msg := f[0].String(), f[1].String()
		if typ == "" {
			typ = f[2].String()
		}
		if typ == "" {
			typ = f[4].String()
		}
		if msg == "" {
			msg = f[3].String()
		}
		s.Fail(typ, msg)
		return true
	}
	return false
}
