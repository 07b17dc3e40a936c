package gemini

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// CatalogGemini names the Gemini models' catalogue (wire.Spec.Catalog),
// which both platforms serve.
const CatalogGemini = "gemini"

// catalogModels are the text models google.golang.org/genai v1.79.1 names
// (interactions/models/interactions/model.go, the Model* constants), so
// that a model an SDK user picks from them is known.
var catalogModels = strings.Fields(`gemini-flash-latest gemini-flash-lite-latest
	gemini-pro-latest gemini-2.5-flash gemini-2.5-pro gemini-2.5-flash-lite gemini-3.5-flash-lite
	gemini-3-flash-preview gemini-3.1-pro-preview gemini-3.1-pro-preview-customtools gemini-3.1-flash-lite
	gemini-3.5-flash gemini-3.6-flash gemini-3.7-flash gemini-3.8-flash gemini-4-argon gemini-4-carbon
	gemini-4-hydrogen gemini-4-neon gemma-4-26b-a4b-it gemma-4-31b-it gemini-2.0-flash gemini-2.0-flash-lite`)

// The Gemini API's paths (docs/gemini.md, Paths). {model}:{method}: a POST
// to /v1/models/{id} without a method stays the OpenAI and Anthropic
// models route's 405.
const (
	studioModels = "/{version:v1beta|v1alpha|v1}/models"
	vertexModels = "/{version:v1|v1beta1}/projects/{project}/locations/{location}/publishers/google/models"
)

// studioSpec is AI Studio's: a key in x-goog-api-key or ?key= (or an
// OAuth bearer token), no headers of its own on every response (Google's
// front end sends neither Anthropic's nor OpenAI's), no rate-limit headers,
// and its own models list.
var studioSpec = wire.Spec{
	Routes: []wire.Route{
		{Method: http.MethodPost, Path: studioModels + "/{call:[^/:]+:[A-Za-z:-]+}", Resolve: resolve(false)},
		{Method: http.MethodGet, Path: "/{version:v1beta|v1alpha}/models", Endpoint: wire.EndpointListModels},
		{Method: http.MethodGet, Path: "/{version:v1beta|v1alpha}/models/{id}", Endpoint: wire.EndpointGetModel},
	},
	OwnsRequest:    ownsStudio,
	Catalog:        CatalogGemini,
	CatalogModels:  catalogModels,
	ListModelsBody: listModelsBody,
	ModelBody:      func(m wire.Model) any { return newModel(m) },
	APIKeyHeader:   "X-Goog-Api-Key",
	APIKeyQuery:    "key",
	MissingKey:     "missing API key: send x-goog-api-key or ?key=",
	QuotaMessage:   quotaMessage,
	ModelNotFound: func(id string) wire.APIError {
		return wire.APIError{Msg: fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", id)}
	},
	DecodeCount: decodeCount,
	CountBody: func(c *wire.Call) any {
		return struct {
			TotalTokens         int   `json:"totalTokens"`
			PromptTokensDetails []any `json:"promptTokensDetails"`
		}{c.Input, []any{map[string]any{"modality": "TEXT", "tokenCount": c.Input}}}
	},
}

// vertexSpec is Vertex AI's: a bearer token (or, in express mode,
// x-goog-api-key), no ?key=.
var vertexSpec = wire.Spec{
	Routes: []wire.Route{
		{Method: http.MethodPost, Path: vertexModels + "/{call}", Resolve: resolve(true)},
	},
	OwnsRequest:   ownsVertex,
	Catalog:       CatalogGemini,
	CatalogModels: catalogModels,
	APIKeyHeader:  "X-Goog-Api-Key",
	MissingKey:    "missing credentials: send Authorization: Bearer TOKEN",
	QuotaMessage:  quotaMessage,
	ModelNotFound: func(id string) wire.APIError {
		return wire.APIError{Msg: fmt.Sprintf("Publisher Model `publishers/google/models/%s` was not found or your project does not have access to it. Please ensure you are using a valid model version.", id)}
	},
	DecodeCount: decodeCount,
	CountBody: func(c *wire.Call) any {
		return struct {
			TotalTokens             int `json:"totalTokens"`
			TotalBillableCharacters int `json:"totalBillableCharacters"`
		}{c.Input, 4 * c.Input}
	},
}

// quotaMessage is the core's part of a spent quota's 429 message, which
// WriteGoogleError puts after Google's own words.
func quotaMessage(limit, dim string) string {
	return fmt.Sprintf("You exceeded your current quota, please check your plan and billing details: this API key's quota of %s is spent (mock quota.%s).", limit, dim)
}

// ownsStudio claims a request to an AI Studio path that matched no route
// (404, 405), and a GET /v1/models request with a Google API key
// (genai's Models.Get asks /v1/models/{model}).
func ownsStudio(req *http.Request) bool {
	p := req.URL.Path
	switch {
	case strings.HasPrefix(p, "/v1/models") && (req.Header.Get("X-Goog-Api-Key") != "" || req.URL.Query().Get("key") != ""):
		return true
	case strings.HasPrefix(p, "/v1beta/"), strings.HasPrefix(p, "/v1alpha/"):
		return true
	case strings.HasPrefix(p, "/v1/models/") && strings.Contains(p, ":"):
		return true
	}
	return false
}

// ownsVertex claims a request to a Vertex AI path that matched no route,
// but Anthropic's publisher's (the vertex-anthropic format's).
func ownsVertex(req *http.Request) bool {
	p := req.URL.Path
	if strings.Contains(p, "/publishers/anthropic/") {
		return false
	}
	return strings.HasPrefix(p, "/v1beta1/") || strings.Contains(p, "/projects/") && strings.Contains(p, "/locations/")
}

// resolve serves POST …/models/{model}:{method}: generateContent,
// streamGenerateContent (as server-sent events, ?alt=sse) or countTokens.
func resolve(vertex bool) func(req *http.Request, vars map[string]string, env *wire.Env) wire.Target {
	return func(req *http.Request, vars map[string]string, _ *wire.Env) wire.Target {
		call := vars["call"]
		i := strings.LastIndexByte(call, ':')
		if i < 0 {
			return notFound(vertex, fmt.Sprintf("not found: %s %s: want …/models/{model}:{method}", req.Method, req.URL.Path))
		}
		g := Format{Vertex: vertex, Model: call[:i]}
		switch method := call[i+1:]; method {
		case "generateContent":
			return wire.Target{Format: g, Endpoint: wire.EndpointModel}
		case "streamGenerateContent":
			g.Stream = true
			if req.URL.Query().Get("alt") != "sse" {
				return wire.Target{Format: g, Status: http.StatusBadRequest, Err: &wire.APIError{
					Msg: "alt: the mock streams streamGenerateContent only as server-sent events: send ?alt=sse, as the SDKs do", Param: "alt"}}
			}
			return wire.Target{Format: g, Endpoint: wire.EndpointModel}
		case "countTokens":
			return wire.Target{Format: g, Endpoint: wire.EndpointCountTokens}
		default:
			return notFound(vertex, fmt.Sprintf("method %q not found: want generateContent, streamGenerateContent or countTokens", method))
		}
	}
}

func notFound(vertex bool, msg string) wire.Target {
	return wire.Target{Format: Format{Vertex: vertex}, Status: http.StatusNotFound, Err: &wire.APIError{Msg: msg}}
}

// decodeCount decodes a :countTokens request: {contents} or
// {generateContentRequest: {contents, …}}, for the model of the path.
func decodeCount(f wire.Format, body []byte, c *wire.Call) error {
	var wrapped struct {
		GenerateContentRequest jsonRaw `json:"generateContentRequest"`
	}
	if wire.DecodeRequest(body, &wrapped) == nil && wire.Present(wrapped.GenerateContentRequest.raw) {
		body = wrapped.GenerateContentRequest.raw
	}
	g, _ := f.(Format)
	return decodeGemini(body, g.Model, 0, false, c)
}

// jsonRaw is a json.RawMessage field that wire.DecodeRequest can fill.
type jsonRaw struct{ raw []byte }

func (j *jsonRaw) UnmarshalJSON(b []byte) error {
	j.raw = append([]byte(nil), b...)
	return nil
}

// model is a Model of the Gemini API's models.list and models.get.
type model struct {
	Name                       string   `json:"name"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	Description                string   `json:"description"`
	InputTokenLimit            int      `json:"inputTokenLimit"`
	OutputTokenLimit           int      `json:"outputTokenLimit"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
	Temperature                float64  `json:"temperature"`
	TopP                       float64  `json:"topP"`
	TopK                       int      `json:"topK"`
	MaxTemperature             float64  `json:"maxTemperature"`
}

func newModel(m wire.Model) model {
	return model{
		Name: "models/" + m.ID, Version: "001", DisplayName: m.DisplayName,
		Description:     "A model of mockllm: it answers as the mock's configuration says, not as the real model does.",
		InputTokenLimit: 1048576, OutputTokenLimit: wire.MaxOutputTokens,
		SupportedGenerationMethods: []string{"generateContent", "countTokens"},
		Temperature:                1, TopP: 0.95, TopK: 64, MaxTemperature: 2,
	}
}

func listModelsBody(ms []wire.Model) any {
	out := make([]model, len(ms))
	for i, m := range ms {
		out[i] = newModel(m)
	}
	return struct {
		Models []model `json:"models"`
	}{out}
}
