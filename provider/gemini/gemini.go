// Package gemini is the Gemini API's generateContent wire format on Google
// AI Studio (docs/gemini.md): POST
// {base}/v1beta/models/{model}:generateContent, or
// :streamGenerateContent?alt=sse, with the key in x-goog-api-key. Its
// response, stream and error decoding is shared with Vertex AI's Gemini
// endpoints (package vertex) and, for errors, with Anthropic on Vertex AI
// (package vertexanthropic).
package gemini

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// Format is the Gemini API on AI Studio. The zero value is ready to use.
type Format struct{}

var _ wire.Format = Format{}

// Name returns "gemini".
func (Format) Name() string { return "gemini" }

// DefaultBaseURL returns https://generativelanguage.googleapis.com.
func (Format) DefaultBaseURL() string { return "https://generativelanguage.googleapis.com" }

// KeyEnv returns GEMINI_API_KEY, which the SDKs read (after
// GOOGLE_API_KEY).
func (Format) KeyEnv() string { return "GEMINI_API_KEY" }

// Part is one part of a Content; only text is sent.
type Part struct {
	Text string `json:"text"`
}

// Content is a turn: role user or model.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// GenerationConfig holds the one generation setting a Request carries.
type GenerationConfig struct {
	MaxOutputTokens int `json:"maxOutputTokens,omitempty"`
}

// Body is a GenerateContentRequest.
type Body struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
}

// NewBody is r as a GenerateContentRequest: assistant turns are role
// model, the system prompt is systemInstruction. SystemCache is ignored:
// Gemini caches implicitly, or through a cachedContents resource, not at
// a breakpoint.
func NewBody(r wire.Request) Body {
	b := Body{Contents: make([]Content, 0, len(r.Messages))}
	for _, m := range r.Messages {
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		b.Contents = append(b.Contents, Content{Role: role, Parts: []Part{{Text: m.Content}}})
	}
	if r.System != "" {
		b.SystemInstruction = &Content{Parts: []Part{{Text: r.System}}}
	}
	if r.MaxTokens > 0 {
		b.GenerationConfig = &GenerationConfig{MaxOutputTokens: r.MaxTokens}
	}
	return b
}

// Method is the path suffix of a call: :generateContent, or
// :streamGenerateContent?alt=sse for a stream (the only streaming form
// the SDKs use).
func Method(stream bool) string {
	if stream {
		return ":streamGenerateContent?alt=sse"
	}
	return ":generateContent"
}

// NewRequest builds POST {base}/v1beta/models/{model}:generateContent with
// x-goog-api-key.
func (f Format) NewRequest(ctx context.Context, baseURL, apiKey string, r wire.Request, attempt int) (*http.Request, error) {
	u := wire.JoinURL(baseURL, f.DefaultBaseURL(), "/v1beta/models/"+url.PathEscape(r.Model)+Method(r.Stream))
	req, h, err := wire.NewPost(ctx, "gemini", u, NewBody(r), r, attempt)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		h["X-Goog-Api-Key"] = []string{apiKey}
	}
	return req, nil
}

// Decode reads a GenerateContentResponse, or the chunks of a stream.
func (Format) Decode(resp *http.Response, sent time.Time) (out wire.Response, o strategies.Outcome) {
	wire.Decode(resp, sent, &Spec, &out, &o)
	return out, o
}

// Spec returns the Gemini API's part of wire.Decode.
func (Format) Spec() *wire.Spec { return &Spec }

// Spec is the Gemini API's part of wire.Decode, on AI Studio and Vertex
// AI alike.
var Spec = wire.Spec{
	RequestID:  "X-Request-Id",
	Limits:     noLimits,
	ParseError: ParseError,
	Quota:      Quota,
	Event:      event,
	Body:       decodeBody,
}

// noLimits: neither AI Studio nor Vertex AI sends rate-limit headers.
func noLimits(http.Header, time.Time) strategies.Limits { return strategies.Limits{} }

// decodeBody reads a GenerateContentResponse: the first candidate's text
// parts, its finishReason, usageMetadata and responseId.
func decodeBody(v gjson.Result, out wire.Response) wire.Response {
	read(v, &out)
	return out
}

// read reads one response or chunk into out; it returns the chunk's text
// and whether it carried a finishReason.
func read(v gjson.Result, out *wire.Response) (text string, finished bool) {
	var b strings.Builder
	v.ForEach(func(k, x gjson.Result) bool {
		switch k.Str {
		case "responseId":
			out.ID = x.String()
		case "usageMetadata":
			f := gjson.GetMany(x.Raw, "promptTokenCount", "candidatesTokenCount", "cachedContentTokenCount", "thoughtsTokenCount")
			// promptTokenCount includes the cached tokens, as OpenAI's
			// prompt_tokens does; thinking tokens are billed as output.
			out.Usage = strategies.Usage{InputTokens: int(f[0].Int()), OutputTokens: int(f[1].Int() + f[3].Int()),
				CacheReadInputTokens: int(f[2].Int())}
		case "candidates":
			c := x.Get("0")
			c.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
				if t := p.Get("text"); t.Exists() && !p.Get("thought").Bool() {
					b.WriteString(t.String())
				}
				return true
			})
			if fr := c.Get("finishReason"); fr.Exists() && fr.String() != "" {
				out.StopReason, finished = fr.String(), true
			}
		}
		return true
	})
	text = b.String()
	out.Text += text
	return text, finished
}

// event reads one chunk of streamGenerateContent?alt=sse: each a whole
// GenerateContentResponse, the last one with a finishReason; an error
// chunk ({"error": {…}}) ends the attempt as Failed.
func event(s *wire.Stream, ev wire.SSEEvent) bool {
	if !gjson.ValidBytes(ev.Data) {
		s.Invalid(wire.ErrNotJSON)
		return true
	}
	v := gjson.ParseBytes(ev.Data)
	if e := v.Get("error"); e.IsObject() {
		f := gjson.GetMany(e.Raw, "status", "message")
		s.Fail(f[0].String(), f[1].String())
		return true
	}
	var out wire.Response
	out.ID, out.Usage, out.StopReason = s.Out.ID, s.Out.Usage, s.Out.StopReason
	text, finished := read(v, &out)
	s.Out.ID, s.Out.Usage, s.Out.StopReason = out.ID, out.Usage, out.StopReason
	s.Delta(text)
	return finished
}

// ParseError reads Google's error envelope, {"error": {"code", "message",
// "status", "details"}}: Type is the status (RESOURCE_EXHAUSTED, …), Code
// the quotaId of the first QuotaFailure violation, else the reason of an
// ErrorInfo; a RetryInfo's retryDelay is the retry delay. Some Google
// front ends wrap the envelope in a one-element array.
func ParseError(body []byte) (wire.ErrorBody, bool) {
	if !gjson.ValidBytes(body) {
		return wire.ErrorBody{}, false
	}
	v := gjson.ParseBytes(body)
	if v.IsArray() {
		v = v.Get("0")
	}
	e := v.Get("error")
	if !e.IsObject() || !e.Get("status").Exists() {
		return wire.ErrorBody{}, false
	}
	b := wire.ErrorBody{Type: e.Get("status").String(), Message: e.Get("message").String()}
	e.Get("details").ForEach(func(_, d gjson.Result) bool {
		switch d.Get("@type").String() {
		case "type.googleapis.com/google.rpc.QuotaFailure":
			if b.Code == "" {
				b.Code = d.Get("violations.0.quotaId").String()
			}
		case "type.googleapis.com/google.rpc.ErrorInfo":
			if b.Code == "" {
				b.Code = d.Get("reason").String()
			}
		case "type.googleapis.com/google.rpc.RetryInfo":
			if delay, ok := ParseDuration(d.Get("retryDelay").String()); ok {
				b.RetryAfter, b.HasRetryAfter = delay, true
			}
		}
		return true
	})
	return b, true
}

// ParseDuration reads google.protobuf.Duration's JSON form, "18s" or
// "0.250s"; false when it is not one or is absurdly long.
func ParseDuration(s string) (time.Duration, bool) {
	if !strings.HasSuffix(s, "s") {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > 100*365*24*time.Hour {
		return 0, false
	}
	return d, true
}

// Quota reports whether an error is a spent quota that no retry within
// the minute lifts, as Google tells it from a rate limit: a 429 whose
// QuotaFailure names a per-day quota (GenerateRequestsPerDayPerProjectPerModel,
// …PerDay…), or whose message says the prepaid credits are depleted. A
// per-minute quota, or Vertex AI's shared capacity ("Resource exhausted"),
// is a rate limit: Throttled.
func Quota(e *wire.APIError) bool {
	if e.Status != http.StatusTooManyRequests {
		return false
	}
	return strings.Contains(e.Code, "PerDay") || strings.Contains(strings.ToLower(e.Message), "prepayment credits are depleted")
}
