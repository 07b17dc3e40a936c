package mock

import (
	"net/http"

	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// countTokens answers POST /v1/messages/count_tokens with the estimate
// that usage.input_tokens uses.
func (s *Server) countTokens(w http.ResponseWriter, req *http.Request) {
	wr := anthropic.Format{}
	id := s.newID("req_")
	w.Header().Set(wr.RequestIDHeader(), id)
	setAPIHeaders(w.Header(), wr)
	if _, ok, why := s.authenticate(req, wr); !ok {
		wr.WriteError(w, http.StatusUnauthorized, wire.APIError{Msg: why}, id)
		return
	}
	if e := s.checkVersion(req, wr); e != nil {
		wr.WriteError(w, http.StatusBadRequest, *e, id)
		return
	}
	body, held, status, err := s.readBody(w, req, nil)
	var c wire.Call
	if err == nil {
		err = anthropic.DecodeMessages(body, false, &c)
		status = http.StatusBadRequest
		if err == nil {
			err = s.checkRequest(wr, &c)
		}
		s.budget.release(held)
	}
	if err != nil {
		status, e := refusal(err, status)
		wr.WriteError(w, status, e, id)
		return
	}
	wire.WriteJSONBody(w, http.StatusOK, struct {
		InputTokens int `json:"input_tokens"`
	}{c.Input})
}
