package mock

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// model is one catalogue entry.
type model struct {
	id, name string
	created  time.Time
	line     string // Anthropic's model line: haiku, sonnet, opus, …
}

// The catalogues: the model names anthropic-sdk-go v1.84.0 (Model*
// constants) and openai-go v3.99.0 (shared.ChatModel* constants) define,
// so that any model an SDK user picks from the constants is known.
var (
	anthropicCatalog = catalog("claude", strings.Fields(`claude-haiku-5-5 claude-sonnet-5-5 claude-fable-5-1
		claude-opus-5-5 claude-mythos-5-1 claude-sonnet-5 claude-fable-5 claude-mythos-5 claude-opus-5
		claude-opus-4-8 claude-opus-4-7 claude-mythos-preview claude-opus-4-6 claude-sonnet-4-6
		claude-haiku-4-5 claude-haiku-4-5-20251001 claude-opus-4-5 claude-opus-4-5-20251101
		claude-sonnet-4-5 claude-sonnet-4-5-20250929 claude-opus-4-1 claude-opus-4-1-20250805
		claude-sonnet-4-0 claude-sonnet-4-20250514 claude-opus-4-0 claude-opus-4-20250514`))
	openaiCatalog = catalog("gpt", strings.Fields(`gpt-6-astra gpt-6.1-sol gpt-6.1-terra gpt-6-sol gpt-6-luna
		gpt-5.6-sol gpt-5.6-terra gpt-5.6-luna gpt-5.5 gpt-5.5-2026-04-23 gpt-5.4 gpt-5.4-mini gpt-5.4-nano
		gpt-5.4-mini-2026-03-17 gpt-5.4-nano-2026-03-17 gpt-5.3-chat-latest gpt-5.2 gpt-5.2-2025-12-11
		gpt-5.2-chat-latest gpt-5.2-pro gpt-5.2-pro-2025-12-11 gpt-5.1 gpt-5.1-2025-11-13 gpt-5.1-codex
		gpt-5.1-mini gpt-5.1-chat-latest gpt-5 gpt-5-mini gpt-5-nano gpt-5-2025-08-07 gpt-5-mini-2025-08-07
		gpt-5-nano-2025-08-07 gpt-5-chat-latest gpt-4.1 gpt-4.1-mini gpt-4.1-nano gpt-4.1-2025-04-14
		gpt-4.1-mini-2025-04-14 gpt-4.1-nano-2025-04-14 o4-mini o4-mini-2025-04-16 o3 o3-2025-04-16 o3-mini
		o3-mini-2025-01-31 o1 o1-2024-12-17 o1-preview o1-preview-2024-09-12 o1-mini o1-mini-2024-09-12
		gpt-4o gpt-4o-2024-11-20 gpt-4o-2024-08-06 gpt-4o-2024-05-13 gpt-audio-mini
		gpt-audio-mini-2025-12-15 gpt-4o-audio-preview gpt-4o-audio-preview-2024-10-01
		gpt-4o-audio-preview-2024-12-17 gpt-4o-audio-preview-2025-06-03 gpt-4o-mini-audio-preview
		gpt-4o-mini-audio-preview-2024-12-17 gpt-4o-search-preview gpt-4o-mini-search-preview
		gpt-4o-search-preview-2025-03-11 gpt-4o-mini-search-preview-2025-03-11 chatgpt-4o-latest
		codex-mini-latest gpt-4o-mini gpt-4o-mini-2024-07-18 gpt-4-turbo gpt-4-turbo-2024-04-09
		gpt-4-0125-preview gpt-4-turbo-preview gpt-4-1106-preview gpt-4-vision-preview gpt-4 gpt-4-0314
		gpt-4-0613 gpt-3.5-turbo`))
)

// info is m as a format's models endpoints describe it.
func (m model) info() wire.Model {
	return wire.Model{ID: m.id, DisplayName: m.name, Created: m.created}
}

// catalogDate is every model's creation date: the mock makes none up.
var catalogDate = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func catalog(family string, ids []string) []model {
	out := make([]model, len(ids))
	for i, id := range ids {
		m := model{id: id, name: id + " (mock)", created: catalogDate}
		if family == "claude" {
			for _, line := range []string{"haiku", "sonnet", "opus", "fable", "mythos"} {
				if strings.Contains(id, line) {
					m.line = line
				}
			}
		}
		out[i] = m
	}
	return out
}

// KnownModels returns the model names the server accepts for api
// ("anthropic" or "openai") unless Config.Models says otherwise.
func KnownModels(api string) []string {
	cat := openaiCatalog
	if api == "anthropic" {
		cat = anthropicCatalog
	}
	ids := make([]string, len(cat))
	for i, m := range cat {
		ids[i] = m.id
	}
	return ids
}

// catalogOf is the catalogue of wr's API with the configured extras.
func (s *Server) catalogOf(wr wire.Format) []model {
	cat := openaiCatalog
	switch spec := wr.Spec(); {
	case spec.CatalogModels != nil:
		cat = catalog(spec.Catalog, spec.CatalogModels)
	case spec.Catalog == wire.CatalogAnthropic:
		cat = anthropicCatalog
	}
	for _, id := range s.cfg.Models.Extra {
		cat = append(slices.Clip(cat), model{id: id, name: id, created: catalogDate})
	}
	return cat
}

// findModel returns the entry for id, synthesized when Models.Any accepts
// a name outside the catalogue; ok is false when id is not accepted.
func (s *Server) findModel(wr wire.Format, id string) (model, bool) {
	if i := slices.IndexFunc(s.catalogOf(wr), func(m model) bool { return m.id == id }); i >= 0 {
		return s.catalogOf(wr)[i], true
	}
	if s.cfg.Models.Any {
		return model{id: id, name: id, created: catalogDate}, true
	}
	return model{}, false
}

// acceptsModel reports whether requests may name id, quickly: it is on
// every model request's path.
func (s *Server) acceptsModel(wr wire.Format, id string) bool {
	if s.cfg.Models.Any {
		return true
	}
	spec := wr.Spec()
	known := s.openaiModels
	switch {
	case spec.CatalogModels != nil:
		known = s.formatModels[spec.Catalog]
	case spec.Catalog == wire.CatalogAnthropic:
		known = s.anthropicModels
	}
	if spec.ModelAliases == nil {
		return known[id]
	}
	for _, name := range spec.ModelAliases(id) {
		if known[name] {
			return true
		}
	}
	return false
}

// formatModelIndex is the index of each format's own catalogue
// (wire.Spec.CatalogModels) with the configured extras, by catalogue name.
func formatModelIndex(extra []string) map[string]map[string]bool {
	idx := make(map[string]map[string]bool)
	for _, wr := range formats {
		if spec := wr.Spec(); spec.CatalogModels != nil {
			idx[spec.Catalog] = modelIndex(catalog(spec.Catalog, spec.CatalogModels), extra)
		}
	}
	return idx
}

// modelIndex is the set of ids in cat plus the configured extras.
func modelIndex(cat []model, extra []string) map[string]bool {
	m := make(map[string]bool, len(cat)+len(extra))
	for _, e := range cat {
		m[e.id] = true
	}
	for _, id := range extra {
		m[id] = true
	}
	return m
}

// modelNotFound is the 404 each API answers for a model it does not serve.
func modelNotFound(wr wire.Format, id string) wire.APIError { return wr.Spec().ModelNotFound(id) }

// modelRoutes are GET /v1/models and GET /v1/models/{id}. The API a
// request is for is told by its headers (wireOf): the Anthropic SDKs send
// anthropic-version, the OpenAI SDKs a bare bearer token. Each API lists
// its own models in its own shape.
func (s *Server) modelRoutes() []route {
	get := []string{http.MethodGet}
	return []route{
		{"/v1/models", get, http.HandlerFunc(s.listModels)},
		{"/v1/models/{id}", get, http.HandlerFunc(s.getModel)},
	}
}

// modelsRequest authenticates a models request and sets its headers; it
// answers the error itself and returns false when there is one.
func (s *Server) modelsRequest(w http.ResponseWriter, req *http.Request, wr wire.Format) (wire.Format, bool) {
	if _, ok, why := s.authenticate(req, wr); !ok {
		s.writeError(w, wr, http.StatusUnauthorized, wire.APIError{Msg: why})
		return wr, false
	}
	id := s.newID("req_")
	h := w.Header()
	h.Set(wr.RequestIDHeader(), id)
	setAPIHeaders(h, wr)
	return wr, true
}

func (s *Server) listModels(w http.ResponseWriter, req *http.Request) {
	s.listModelsOf(w, req, wireOf(req))
}

// listModelsOf answers a models list of wr's API.
func (s *Server) listModelsOf(w http.ResponseWriter, req *http.Request, wr wire.Format) {
	wr, ok := s.modelsRequest(w, req, wr)
	if !ok {
		return
	}
	cat := s.catalogOf(wr)
	if f := wr.Spec().ListModelsBody; f != nil {
		ms := make([]wire.Model, len(cat))
		for i, m := range cat {
			ms[i] = m.info()
		}
		wire.WriteJSONBody(w, http.StatusOK, f(ms))
		return
	}
	if wr.Spec().Catalog == wire.CatalogAnthropic {
		data := make([]anthropicModel, len(cat))
		for i, m := range cat {
			data[i] = newAnthropicModel(m, betaRequest(req))
		}
		wire.WriteJSONBody(w, http.StatusOK, struct {
			Data    []anthropicModel `json:"data"`
			HasMore bool             `json:"has_more"`
			FirstID string           `json:"first_id"`
			LastID  string           `json:"last_id"`
		}{data, false, cat[0].id, cat[len(cat)-1].id})
		return
	}
	data := make([]openaiModel, len(cat))
	for i, m := range cat {
		data[i] = newOpenAIModel(m)
	}
	wire.WriteJSONBody(w, http.StatusOK, struct {
		Object string        `json:"object"`
		Data   []openaiModel `json:"data"`
	}{"list", data})
}

func (s *Server) getModel(w http.ResponseWriter, req *http.Request) {
	s.getModelOf(w, req, wireOf(req))
}

// getModelOf answers a models get of wr's API for the path's {id}.
func (s *Server) getModelOf(w http.ResponseWriter, req *http.Request, wr wire.Format) {
	wr, ok := s.modelsRequest(w, req, wr)
	if !ok {
		return
	}
	id := mux.Vars(req)["id"]
	m, ok := s.findModel(wr, id)
	if !ok {
		s.writeError(w, wr, http.StatusNotFound, modelNotFound(wr, id))
		return
	}
	if f := wr.Spec().ModelBody; f != nil {
		wire.WriteJSONBody(w, http.StatusOK, f(m.info()))
		return
	}
	if wr.Spec().Catalog == wire.CatalogAnthropic {
		wire.WriteJSONBody(w, http.StatusOK, newAnthropicModel(m, betaRequest(req)))
		return
	}
	wire.WriteJSONBody(w, http.StatusOK, newOpenAIModel(m))
}

// anthropicModel is Anthropic's ModelInfo, every field anthropic-sdk-go
// v1.84.0 marks required (model.go). With beta, it is BetaModelInfo
// (betamodel.go), which the SDK's Beta.Models asks for with ?beta=true:
// the same fields and allowed_fallback_models, and a compaction entry in
// capabilities.
type anthropicModel struct {
	ID                    string          `json:"id"`
	Type                  string          `json:"type"`
	DisplayName           string          `json:"display_name"`
	CreatedAt             string          `json:"created_at"`
	Lifecycle             string          `json:"lifecycle"`
	Line                  *string         `json:"line"`
	MaxInputTokens        int64           `json:"max_input_tokens"`
	MaxTokens             int64           `json:"max_tokens"`
	DeprecatedAt          *string         `json:"deprecated_at"`
	RetiresAt             *string         `json:"retires_at"`
	Capabilities          json.RawMessage `json:"capabilities"`
	AllowedFallbackModels []string        `json:"allowed_fallback_models,omitzero"`
}

// anthropicCapabilities is every model's capabilities: what this server
// serves, the same for each model, not what the real model does. The
// SDK's ModelCapabilities documents each key ("keys are always present for
// all known capabilities"); a capability is supported when a request
// using it gets the answer it asks for:
//
//   - structured_outputs: output_config.format and strict tool schemas are
//     served (compose.go).
//   - image_input, pdf_input: image and document blocks are accepted and
//     count as input tokens (their JSON length, contentLen).
//   - thinking: a request's thinking is ignored, never answered with
//     thinking blocks, so unsupported; types.disabled is true, as the SDK
//     says it is "on a model that does not support thinking".
//   - batch (no /v1/messages/batches), citations, code_execution,
//     context_management, effort and server_tools (web search, code
//     execution) are not served: false, with every sub-entry false.
const anthropicCapabilities = `{"batch":{"supported":false},"citations":{"supported":false},"code_execution":{"supported":false},` +
	`"context_management":{"clear_thinking_20251015":{"supported":false},"clear_tool_uses_20250919":{"supported":false},"compact_20260112":{"supported":false},"supported":false},` +
	`"effort":{"high":{"supported":false},"low":{"supported":false},"max":{"supported":false},"medium":{"supported":false},"supported":false,"xhigh":{"supported":false}},` +
	`"image_input":{"supported":true},"pdf_input":{"supported":true},` +
	`"server_tools":{"code_execution":{"supported":false},"supported":false,"web_search":{"supported":false}},` +
	`"structured_outputs":{"supported":true},` +
	`"thinking":{"supported":false,"types":{"adaptive":{"supported":false},"between_tools":{"supported":false},"disabled":{"supported":true},"enabled":{"supported":false}}}}`

// anthropicBetaCapabilities adds BetaModelCapabilities' compaction: the
// mock does not serve the compaction request parameter.
var anthropicBetaCapabilities = strings.Replace(anthropicCapabilities, `"context_management":`,
	`"compaction":{"summarize":{"supported":false},"supported":false},"context_management":`, 1)

func newAnthropicModel(m model, beta bool) anthropicModel {
	am := anthropicModel{
		ID: m.id, Type: "model", DisplayName: m.name, CreatedAt: m.created.Format(time.RFC3339),
		Lifecycle: "active", Line: wire.StrPtr(m.line), MaxInputTokens: MaxInputTokens, MaxTokens: wire.MaxOutputTokens,
		Capabilities: json.RawMessage(anthropicCapabilities),
	}
	if beta {
		// An empty list: the Messages API's fallbacks parameter is not
		// served for any model (BetaModelInfo.AllowedFallbackModels).
		am.Capabilities, am.AllowedFallbackModels = json.RawMessage(anthropicBetaCapabilities), []string{}
	}
	return am
}

// betaRequest reports whether req is the SDKs' beta form of a request
// (?beta=true).
func betaRequest(req *http.Request) bool { return req.URL.Query().Get("beta") == "true" }

// openaiModel is OpenAI's Model.
type openaiModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func newOpenAIModel(m model) openaiModel {
	return openaiModel{ID: m.id, Object: "model", Created: m.created.Unix(), OwnedBy: "system"}
}

// requestError is an answer to a request its API's decoder accepted: a
// strictness 400 or an unknown model's 404.
type requestError struct {
	status int
	e      wire.APIError
}

func (e *requestError) Error() string { return e.e.Msg }

// checkRequest runs the checks on a decoded model request that the
// decoders do not: strictness's sampling checks, then the model name.
func (s *Server) checkRequest(wr wire.Format, c *wire.Call) error {
	e := s.checkSampling(wr, c)
	// temperature and top_p point into the request body: drop them so a
	// long call does not keep the body alive.
	c.Temperature, c.TopP = nil, nil
	if e != nil {
		return &requestError{http.StatusBadRequest, *e}
	}
	if !s.acceptsModel(wr, c.Model) {
		return &requestError{http.StatusNotFound, modelNotFound(wr, c.Model)}
	}
	return nil
}

// strict reports whether requests are held to what the real APIs accept
// (Config.Strict; on unless set to false).
func (s *Server) strict() bool { return s.cfg.Strict == nil || *s.cfg.Strict }

// checkVersion is strictness's header check: the Messages API refuses a
// request without anthropic-version.
func (s *Server) checkVersion(req *http.Request, wr wire.Format) *wire.APIError {
	if !s.strict() {
		return nil
	}
	if v := wr.Spec().VersionHeader; v != "" && req.Header.Get(v) == "" {
		return &wire.APIError{Msg: strings.ToLower(v) + ": header is required"}
	}
	return nil
}

// checkSampling is strictness's check of what the decoder read:
// temperature and top_p in range (Anthropic [0, 1] and [0, 1]; OpenAI
// [0, 2] and [0, 1]), and an Anthropic conversation starting with a user
// turn.
func (s *Server) checkSampling(wr wire.Format, c *wire.Call) *wire.APIError {
	if !s.strict() {
		return nil
	}
	if f := wr.Spec().CheckSampling; f != nil {
		return f(c)
	}
	return nil
}
