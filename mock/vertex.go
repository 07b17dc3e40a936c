package mock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// vertexAnthropic is Anthropic's Messages API on Vertex AI
// (docs/gemini.md, Anthropic on Vertex AI): POST
// …/publishers/anthropic/models/{model}:rawPredict and :streamRawPredict.
// The body is a Messages request without model (the path names it) and
// with anthropic_version "vertex-2023-10-16"; the answer is the Messages
// API's, encoded as the anthropic format does. Errors from Vertex AI's
// front end (authentication, quota, an unknown model) take Google's
// envelope; the model's own (an invalid request, overload) Anthropic's.
type vertexAnthropic struct {
	anthropic
	model string // from the path
}

func (vertexAnthropic) name() string { return "vertex-anthropic" }

// vertexAnthropicVersion is the only anthropic_version Vertex AI accepts.
const vertexAnthropicVersion = "vertex-2023-10-16"

// appendLimitHeaders appends nothing: Vertex AI sends no rate-limit
// headers for Claude.
func (vertexAnthropic) appendLimitHeaders(b []byte, _ *headerList, _ snapshot, _ time.Time) []byte {
	return b
}

func (v vertexAnthropic) decode(body []byte, _ int, c *call) error {
	var head struct {
		Version *string         `json:"anthropic_version"`
		Model   json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return describeBodyError(body, err)
	}
	switch {
	case head.Version == nil:
		return invalid("anthropic_version", "field required: Vertex AI needs anthropic_version %q in the body", vertexAnthropicVersion)
	case *head.Version != vertexAnthropicVersion:
		return invalid("anthropic_version", "want %q, got %q", vertexAnthropicVersion, *head.Version)
	case present(head.Model):
		return invalid("model", "Vertex AI takes the model from the path (…/models/%s:rawPredict), not the body", v.model)
	}
	// The model from the path, put where the Messages decoder reads it.
	i := bytes.IndexByte(body, '{')
	withModel := make([]byte, 0, len(body)+len(v.model)+16)
	withModel = append(withModel, body[:i+1]...)
	withModel = append(withModel, `"model":`...)
	withModel = appendJSONString(withModel, v.model)
	rest := bytes.TrimSpace(body[i+1:])
	if len(rest) > 0 && rest[0] != '}' {
		withModel = append(withModel, ',')
	}
	withModel = append(withModel, rest...)
	return decodeAnthropic(withModel, true, c)
}

// writeError: 400s and overload in Anthropic's envelope, as the model
// answers them; the rest as Vertex AI's front end does.
func (v vertexAnthropic) writeError(w http.ResponseWriter, status int, e apiError, reqID string) {
	switch {
	case status == http.StatusBadRequest, status == 529, status == http.StatusServiceUnavailable, status == http.StatusInternalServerError:
		v.anthropic.writeError(w, status, e, reqID)
	default:
		writeGoogleError(w, true, v.model, status, e)
	}
}

// vertexAnthropicCountTokens answers
// …/publishers/anthropic/models/count-tokens:rawPredict: a Messages
// count_tokens request whose model is in the body.
func (s *Server) vertexAnthropicCountTokens(w http.ResponseWriter, req *http.Request) {
	wr := vertexAnthropic{}
	id := s.newID("req_")
	w.Header().Set(wr.requestIDHeader(), id)
	if _, ok, why := s.authenticate(req, wr); !ok {
		wr.writeError(w, http.StatusUnauthorized, apiError{msg: why}, id)
		return
	}
	body, held, status, err := s.readBody(w, req, nil)
	var c call
	if err == nil {
		err = decodeAnthropic(body, false, &c)
		status = http.StatusBadRequest
		if err == nil {
			wr.model = c.model
			err = s.checkRequest(wr, &c)
		}
		s.budget.release(held)
	}
	if err != nil {
		status, e := refusal(err, status)
		wr.writeError(w, status, e, id)
		return
	}
	writeJSONBody(w, http.StatusOK, struct {
		InputTokens int `json:"input_tokens"`
	}{c.input})
}
