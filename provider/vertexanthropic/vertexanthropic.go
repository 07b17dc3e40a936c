// Package vertexanthropic is Anthropic's Messages API on Vertex AI
// (docs/gemini.md): POST
// {base}/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict,
// or :streamRawPredict, with a bearer token.
//
// The body is a Messages request without model (the path names it) and with
// anthropic_version vertex-2023-10-16; the answer and its stream are the
// Messages API's (package anthropic). Errors come in two envelopes: Vertex
// AI's front end answers authentication, quota and unknown models in Google's
// (package gemini), the model its own errors (invalid requests, 529
// overloaded) in Anthropic's.
package vertexanthropic

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/ratelab/ratelab/provider/anthropic"
	"github.com/ratelab/ratelab/provider/gemini"
	"github.com/ratelab/ratelab/provider/vertex"
	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// Version is the anthropic_version Vertex AI takes, in the body.
const Version = "vertex-2023-10-16"

// Format is Anthropic on Vertex AI; Project and Location as vertex.Format's.
type Format struct {
	Project, Location string
}

var _ wire.Format = Format{}

// Name returns "vertex-anthropic".
func (Format) Name() string { return "vertex-anthropic" }

// DefaultBaseURL is the location's Vertex AI endpoint.
func (f Format) DefaultBaseURL() string { return f.vertex().DefaultBaseURL() }

// KeyEnv returns GOOGLE_CLOUD_ACCESS_TOKEN, as vertex.Format's.
func (Format) KeyEnv() string { return "GOOGLE_CLOUD_ACCESS_TOKEN" }

func (f Format) vertex() vertex.Format {
	return vertex.Format{Project: f.Project, Location: f.Location}
}

// CacheReadsUncounted: Claude's cache reads are not counted toward its
// input-tokens limit on Vertex AI either.
func (Format) CacheReadsUncounted() {}

type body struct {
	AnthropicVersion string         `json:"anthropic_version"`
	MaxTokens        int            `json:"max_tokens"`
	System           any            `json:"system,omitempty"`
	Messages         []wire.Message `json:"messages"`
	Stream           bool           `json:"stream,omitempty"`
}

// NewRequest builds POST …/publishers/anthropic/models/{model}:rawPredict
// (or :streamRawPredict) with Authorization: Bearer.
func (f Format) NewRequest(ctx context.Context, baseURL, apiKey string, r wire.Request, attempt int) (*http.Request, error) {
	system, err := anthropic.System(r)
	if err != nil {
		return nil, err
	}
	res, err := f.vertex().Resource(baseURL)
	if err != nil {
		return nil, err
	}
	method := ":rawPredict"
	if r.Stream {
		method = ":streamRawPredict"
	}
	u := wire.JoinURL(baseURL, f.DefaultBaseURL(), res+"/publishers/anthropic/models/"+url.PathEscape(r.Model)+method)
	req, h, err := wire.NewPost(ctx, "vertex-anthropic", u, body{
		AnthropicVersion: Version, MaxTokens: r.MaxTokens, System: system,
		Messages: wire.NonNil(r.Messages), Stream: r.Stream,
	}, r, attempt)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		h["Authorization"] = []string{"Bearer " + apiKey}
	}
	return req, nil
}

// Decode reads a Messages response, or an error in either envelope.
func (Format) Decode(resp *http.Response, sent time.Time) (out wire.Response, o strategies.Outcome) {
	wire.Decode(resp, sent, &spec, &out, &o)
	return out, o
}

// Spec returns Anthropic on Vertex AI's part of wire.Decode.
func (Format) Spec() *wire.Spec { return &spec }

var spec = func() wire.Spec {
	a := anthropic.Format{}.Spec()
	return wire.Spec{
		RequestID:  a.RequestID,
		Limits:     func(http.Header, time.Time) strategies.Limits { return strategies.Limits{} },
		ParseError: parseError,
		Quota:      quota,
		Event:      a.Event,
		Body:       a.Body,
	}
}()

// parseError reads Google's envelope, else Anthropic's.
func parseError(b []byte) (wire.ErrorBody, bool) {
	if e, ok := gemini.ParseError(b); ok {
		return e, true
	}
	return anthropic.Format{}.Spec().ParseError(b)
}

// quota is Google's quota test for Vertex AI's 429s, Anthropic's for the
// model's own errors.
func quota(e *wire.APIError) bool {
	return gemini.Quota(e) || anthropic.Format{}.Spec().Quota(e)
}
