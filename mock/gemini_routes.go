package mock

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"
)

// geminiCatalog is the text models google.golang.org/genai v1.79.1 names
// (interactions/models/interactions/model.go, the Model* constants), so
// that a model an SDK user picks from them is known.
var geminiCatalog = catalog("gemini", strings.Fields(`gemini-flash-latest gemini-flash-lite-latest
	gemini-pro-latest gemini-2.5-flash gemini-2.5-pro gemini-2.5-flash-lite gemini-3.5-flash-lite
	gemini-3-flash-preview gemini-3.1-pro-preview gemini-3.1-pro-preview-customtools gemini-3.1-flash-lite
	gemini-3.5-flash gemini-3.6-flash gemini-3.7-flash gemini-3.8-flash gemini-4-argon gemini-4-carbon
	gemini-4-hydrogen gemini-4-neon gemma-4-26b-a4b-it gemma-4-31b-it gemini-2.0-flash gemini-2.0-flash-lite`))

// geminiRoutes are the Gemini API's paths on AI Studio and Vertex AI and
// Anthropic's models on Vertex AI (docs/gemini.md, Paths).
func (s *Server) geminiRoutes() []route {
	post := []string{http.MethodPost}
	get := []string{http.MethodGet}
	const studio = "/{version:v1beta|v1alpha|v1}/models"
	const vertex = "/{version:v1|v1beta1}/projects/{project}/locations/{location}/publishers/{publisher}/models"
	return []route{
		{"/{version:v1beta|v1alpha}/models", get, http.HandlerFunc(s.geminiListModels)},
		// {model}:{method}: a POST to /v1/models/{id} without a method
		// stays the OpenAI and Anthropic models route's 405.
		{studio + "/{call:[^/:]+:[A-Za-z:-]+}", post, http.HandlerFunc(s.geminiCall)},
		{"/{version:v1beta|v1alpha}/models/{call}", get, http.HandlerFunc(s.geminiGetModel)},
		{vertex + "/{call}", post, http.HandlerFunc(s.geminiCall)},
	}
}

// isGoogle reports whether wr is served by Google's front end: the Gemini
// API on either platform, or Anthropic on Vertex AI. None sends the
// Anthropic or OpenAI headers on every response.
func isGoogle(wr wire) bool {
	switch wr.(type) {
	case gemini, vertexAnthropic:
		return true
	}
	return false
}

// googleWireOf is the wire of a request to one of the Google paths that
// matched no route (404, 405), or of a GET /v1/models request with a
// Google API key (genai's Models.Get asks /v1/models/{model}): nil when it
// is neither.
func googleWireOf(req *http.Request) wire {
	p := req.URL.Path
	switch {
	case strings.HasPrefix(p, "/v1/models") && (req.Header.Get("X-Goog-Api-Key") != "" || req.URL.Query().Get("key") != ""):
		return gemini{}
	case strings.HasPrefix(p, "/v1beta/"), strings.HasPrefix(p, "/v1alpha/"):
		return gemini{}
	case strings.Contains(p, "/publishers/anthropic/"):
		return vertexAnthropic{}
	case strings.HasPrefix(p, "/v1beta1/"), strings.Contains(p, "/projects/") && strings.Contains(p, "/locations/"):
		return gemini{vertex: true}
	case strings.HasPrefix(p, "/v1/models/") && strings.Contains(p, ":"):
		return gemini{}
	}
	return nil
}

// geminiCall serves POST …/models/{model}:{method}.
func (s *Server) geminiCall(w http.ResponseWriter, req *http.Request) {
	v := mux.Vars(req)
	i := strings.LastIndexByte(v["call"], ':')
	vertex := v["project"] != ""
	if i < 0 {
		s.googleNotFound(w, req, vertex, fmt.Sprintf("not found: %s %s: want …/models/{model}:{method}", req.Method, req.URL.Path))
		return
	}
	model, method := v["call"][:i], v["call"][i+1:]
	switch v["publisher"] {
	case "", "google":
	case "anthropic":
		switch {
		case model == "count-tokens" && method == "rawPredict":
			s.vertexAnthropicCountTokens(w, req)
		case method == "rawPredict", method == "streamRawPredict":
			s.serveModel(w, req, vertexAnthropic{model: model})
		default:
			s.googleNotFound(w, req, true, fmt.Sprintf("method %q not found for publisher anthropic: want rawPredict or streamRawPredict", method))
		}
		return
	default:
		s.googleNotFound(w, req, true, fmt.Sprintf("Publisher %q not found: the mock serves publishers google and anthropic", v["publisher"]))
		return
	}
	g := gemini{vertex: vertex, model: model}
	switch method {
	case "generateContent":
		s.serveModel(w, req, g)
	case "streamGenerateContent":
		if req.URL.Query().Get("alt") != "sse" {
			g.stream = true
			s.googleError(w, g, http.StatusBadRequest, apiError{msg: "alt: the mock streams streamGenerateContent only as server-sent events: send ?alt=sse, as the SDKs do", param: "alt"})
			return
		}
		g.stream = true
		s.serveModel(w, req, g)
	case "countTokens":
		s.geminiCountTokens(w, req, g)
	default:
		s.googleNotFound(w, req, vertex, fmt.Sprintf("method %q not found: want generateContent, streamGenerateContent or countTokens", method))
	}
}

// googleError answers e with a fresh request id, in wr's envelope.
func (s *Server) googleError(w http.ResponseWriter, wr wire, status int, e apiError) {
	s.writeError(w, wr, status, e)
}

func (s *Server) googleNotFound(w http.ResponseWriter, req *http.Request, vertex bool, msg string) {
	s.googleError(w, gemini{vertex: vertex}, http.StatusNotFound, apiError{msg: msg})
}

// googleKey is authenticate for the Google paths. AI Studio takes the key
// in x-goog-api-key or ?key= (and an OAuth bearer token); Vertex AI a
// bearer token (or, in express mode, x-goog-api-key).
func (s *Server) googleKey(req *http.Request, wr wire) (key string, ok bool, why string) {
	vertex := true
	if g, isGemini := wr.(gemini); isGemini {
		vertex = g.vertex
	}
	check := func(k, where string) (string, bool, string) {
		if s.keys[k] {
			return k, true, ""
		}
		return "", false, "invalid API key in " + where
	}
	if k := req.Header.Get("X-Goog-Api-Key"); k != "" {
		return check(k, "x-goog-api-key")
	}
	if k := req.URL.Query().Get("key"); k != "" && !vertex {
		return check(k, "?key=")
	}
	const bearer = "Bearer "
	if auth := req.Header.Get("Authorization"); len(auth) > len(bearer) && auth[:len(bearer)] == bearer {
		return check(auth[len(bearer):], "Authorization: Bearer")
	}
	if vertex {
		return "", false, "missing credentials: send Authorization: Bearer TOKEN"
	}
	return "", false, "missing API key: send x-goog-api-key or ?key="
}

// googleAccepts is acceptsModel for the Google wires; ok is false for the
// other APIs.
func (s *Server) googleAccepts(wr wire, id string) (accepted, ok bool) {
	switch wr.(type) {
	case gemini:
		return s.cfg.Models.Any || slices.ContainsFunc(geminiCatalog, func(m model) bool { return m.id == id }) || slices.Contains(s.cfg.Models.Extra, id), true
	case vertexAnthropic:
		// Vertex AI names Claude models with an @ before the date
		// (claude-sonnet-4-5@20250929); the name before it, or the name
		// with a hyphen for the @, is in Anthropic's catalogue.
		base, _, _ := strings.Cut(id, "@")
		return s.cfg.Models.Any || s.anthropicModels[id] || s.anthropicModels[base] || s.anthropicModels[strings.Replace(id, "@", "-", 1)], true
	}
	return false, false
}

// googleModelNotFound is the 404 of a model Google does not serve.
func googleModelNotFound(wr wire, id string) (apiError, bool) {
	switch g := wr.(type) {
	case gemini:
		if g.vertex {
			return apiError{msg: fmt.Sprintf("Publisher Model `publishers/google/models/%s` was not found or your project does not have access to it. Please ensure you are using a valid model version.", id)}, true
		}
		return apiError{msg: fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", id)}, true
	case vertexAnthropic:
		return apiError{msg: fmt.Sprintf("Publisher Model `publishers/anthropic/models/%s` was not found or your project does not have access to it.", id)}, true
	}
	return apiError{}, false
}

// geminiCountTokens answers :countTokens with the estimate usageMetadata's
// promptTokenCount uses: {"totalTokens", "promptTokensDetails"}. The
// request is {contents} or {generateContentRequest: {contents, …}}.
func (s *Server) geminiCountTokens(w http.ResponseWriter, req *http.Request, g gemini) {
	id := s.newID("req_")
	w.Header().Set(g.requestIDHeader(), id)
	if _, ok, why := s.authenticate(req, g); !ok {
		g.writeError(w, http.StatusUnauthorized, apiError{msg: why}, id)
		return
	}
	body, held, status, err := s.readBody(w, req, nil)
	var c call
	if err == nil {
		status = http.StatusBadRequest
		var wrapped struct {
			GenerateContentRequest jsonRaw `json:"generateContentRequest"`
		}
		if decodeRequest(body, &wrapped) == nil && present(wrapped.GenerateContentRequest.raw) {
			body = wrapped.GenerateContentRequest.raw
		}
		err = decodeGemini(body, g.model, 0, false, &c)
		if err == nil {
			err = s.checkRequest(g, &c)
		}
		s.budget.release(held)
	}
	if err != nil {
		status, e := refusal(err, status)
		g.writeError(w, status, e, id)
		return
	}
	if g.vertex {
		writeJSONBody(w, http.StatusOK, struct {
			TotalTokens             int `json:"totalTokens"`
			TotalBillableCharacters int `json:"totalBillableCharacters"`
		}{c.input, 4 * c.input})
		return
	}
	writeJSONBody(w, http.StatusOK, struct {
		TotalTokens         int   `json:"totalTokens"`
		PromptTokensDetails []any `json:"promptTokensDetails"`
	}{c.input, []any{map[string]any{"modality": "TEXT", "tokenCount": c.input}}})
}

// jsonRaw is a json.RawMessage field that decodeRequest can fill.
type jsonRaw struct{ raw []byte }

func (j *jsonRaw) UnmarshalJSON(b []byte) error {
	j.raw = append([]byte(nil), b...)
	return nil
}

// geminiModel is a Model of the Gemini API's models.list and models.get.
type geminiModel struct {
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

func newGeminiModel(m model) geminiModel {
	return geminiModel{
		Name: "models/" + m.id, Version: "001", DisplayName: m.name,
		Description:     "A model of mockllm: it answers as the mock's configuration says, not as the real model does.",
		InputTokenLimit: 1048576, OutputTokenLimit: MaxOutputTokens,
		SupportedGenerationMethods: []string{"generateContent", "countTokens"},
		Temperature:                1, TopP: 0.95, TopK: 64, MaxTemperature: 2,
	}
}

func (s *Server) geminiCatalogOf() []model {
	cat := geminiCatalog
	for _, id := range s.cfg.Models.Extra {
		cat = append(slices.Clip(cat), model{id: id, name: id, created: catalogDate})
	}
	return cat
}

// geminiModelsRequest authenticates a models request: false when it
// answered an error.
func (s *Server) geminiModelsRequest(w http.ResponseWriter, req *http.Request) bool {
	g := gemini{}
	if _, ok, why := s.authenticate(req, g); !ok {
		s.writeError(w, g, http.StatusUnauthorized, apiError{msg: why})
		return false
	}
	w.Header().Set(g.requestIDHeader(), s.newID("req_"))
	return true
}

func (s *Server) geminiListModels(w http.ResponseWriter, req *http.Request) {
	if !s.geminiModelsRequest(w, req) {
		return
	}
	cat := s.geminiCatalogOf()
	out := make([]geminiModel, len(cat))
	for i, m := range cat {
		out[i] = newGeminiModel(m)
	}
	writeJSONBody(w, http.StatusOK, struct {
		Models []geminiModel `json:"models"`
	}{out})
}

func (s *Server) geminiGetModel(w http.ResponseWriter, req *http.Request) {
	if !s.geminiModelsRequest(w, req) {
		return
	}
	v := mux.Vars(req)
	id := v["call"]
	if id == "" {
		id = v["id"] // GET /v1/models/{id}
	}
	g := gemini{model: id}
	if ok, _ := s.googleAccepts(g, id); !ok {
		s.writeError(w, g, http.StatusNotFound, apiError{msg: fmt.Sprintf("models/%s is not found.", id)})
		return
	}
	m := model{id: id, name: id + " (mock)", created: catalogDate}
	writeJSONBody(w, http.StatusOK, newGeminiModel(m))
}
