// Package vertexanthropic is Anthropic's Messages API on Vertex AI on the
// server side (docs/gemini.md, Anthropic on Vertex AI): the anthropic
// format's requests and answers under Vertex AI's paths, credentials and
// front-end errors (the gemini package's Google envelope).
package vertexanthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/gemini"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// Format is POST …/publishers/anthropic/models/{model}:rawPredict and
// :streamRawPredict. The body is a Messages request without model (the
// path names it) and with anthropic_version "vertex-2023-10-16"; the answer
// is the Messages API's, encoded as the anthropic format does. Errors from
// Vertex AI's front end (authentication, quota, an unknown model) take
// Google's envelope; the model's own (an invalid request, overload)
// Anthropic's. A value is made per request (Resolve) with the model of
// the path.
type Format struct {
	anthropic.Format
	Model string // from the path
}

func (Format) Name() string     { return "vertex-anthropic" }
func (Format) Spec() *wire.Spec { return &spec }

const models = "/{version:v1|v1beta1}/projects/{project}/locations/{location}/publishers/anthropic/models"

// spec: Vertex AI's credentials (a bearer token, or x-goog-api-key in
// express mode), none of Anthropic's headers on every response, and
// Anthropic's catalogue under Vertex AI's names for it.
var spec = wire.Spec{
	Routes:       []wire.Route{{Method: http.MethodPost, Path: models + "/{call}", Resolve: resolve}},
	OwnsRequest:  func(req *http.Request) bool { return strings.Contains(req.URL.Path, "/publishers/anthropic/") },
	IDPrefix:     "msg_",
	Catalog:      wire.CatalogAnthropic,
	ModelAliases: aliases,
	APIKeyHeader: "X-Goog-Api-Key",
	MissingKey:   "missing credentials: send Authorization: Bearer TOKEN",
	QuotaMessage: func(limit, dim string) string {
		return fmt.Sprintf("You exceeded your current quota, please check your plan and billing details: this API key's quota of %s is spent (mock quota.%s).", limit, dim)
	},
	// The Messages API's sampling ranges and first turn.
	CheckSampling: anthropic.Format{}.Spec().CheckSampling,
	ModelNotFound: func(id string) wire.APIError {
		return wire.APIError{Msg: fmt.Sprintf("Publisher Model `publishers/anthropic/models/%s` was not found or your project does not have access to it.", id)}
	},
	// count-tokens:rawPredict is a Messages count_tokens request whose
	// model is in the body.
	DecodeCount: anthropic.DecodeCount,
	CountBody:   anthropic.CountBody,
}

// aliases: Vertex AI names Claude models with an @ before the date
// (claude-sonnet-4-5@20250929); the name before it, or the name with a
// hyphen for the @, is in Anthropic's catalogue.
func aliases(id string) []string {
	base, _, _ := strings.Cut(id, "@")
	return []string{id, base, strings.Replace(id, "@", "-", 1)}
}

func resolve(req *http.Request, vars map[string]string, _ *wire.Env) wire.Target {
	call := vars["call"]
	i := strings.LastIndexByte(call, ':')
	if i < 0 {
		return notFound(fmt.Sprintf("not found: %s %s: want …/models/{model}:{method}", req.Method, req.URL.Path))
	}
	model, method := call[:i], call[i+1:]
	switch {
	case model == "count-tokens" && method == "rawPredict":
		return wire.Target{Format: Format{}, Endpoint: wire.EndpointCountTokens}
	case method == "rawPredict", method == "streamRawPredict":
		return wire.Target{Format: Format{Model: model}, Endpoint: wire.EndpointModel}
	}
	return notFound(fmt.Sprintf("method %q not found for publisher anthropic: want rawPredict or streamRawPredict", method))
}

func notFound(msg string) wire.Target {
	return wire.Target{Format: Format{}, Status: http.StatusNotFound, Err: &wire.APIError{Msg: msg}}
}

// version is the only anthropic_version Vertex AI accepts.
const version = "vertex-2023-10-16"

// AppendLimitHeaders appends nothing: Vertex AI sends no rate-limit
// headers for Claude.
func (Format) AppendLimitHeaders(b []byte, _ *wire.HeaderList, _ wire.Snapshot, _ time.Time) []byte {
	return b
}

func (v Format) Decode(body []byte, _ int, c *wire.Call) error {
	var head struct {
		Version *string         `json:"anthropic_version"`
		Model   json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return wire.DescribeBodyError(body, err)
	}
	switch {
	case head.Version == nil:
		return wire.Invalid("anthropic_version", "field required: Vertex AI needs anthropic_version %q in the body", version)
	case *head.Version != version:
		return wire.Invalid("anthropic_version", "want %q, got %q", version, *head.Version)
	case wire.Present(head.Model):
		return wire.Invalid("model", "Vertex AI takes the model from the path (…/models/%s:rawPredict), not the body", v.Model)
	}
	// The model from the path, put where the Messages decoder reads it.
	i := bytes.IndexByte(body, '{')
	withModel := make([]byte, 0, len(body)+len(v.Model)+16)
	withModel = append(withModel, body[:i+1]...)
	withModel = append(withModel, `"model":`...)
	withModel = wire.AppendJSONString(withModel, v.Model)
	rest := bytes.TrimSpace(body[i+1:])
	if len(rest) > 0 && rest[0] != '}' {
		withModel = append(withModel, ',')
	}
	withModel = append(withModel, rest...)
	return anthropic.DecodeMessages(withModel, true, c)
}

// WriteError: 400s and overload in Anthropic's envelope, as the model
// answers them; the rest as Vertex AI's front end does.
func (v Format) WriteError(w http.ResponseWriter, status int, e wire.APIError, reqID string) {
	switch {
	case status == http.StatusBadRequest, status == 529, status == http.StatusServiceUnavailable, status == http.StatusInternalServerError:
		v.Format.WriteError(w, status, e, reqID)
	default:
		gemini.WriteGoogleError(w, true, v.Model, status, e)
	}
}
