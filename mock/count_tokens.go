package mock

import (
	"net/http"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// countTokens answers a count-tokens request of wr (an EndpointCountTokens
// route: POST /v1/messages/count_tokens, Gemini's :countTokens) with the
// estimate that the usage of an answer reports: wire.Spec.DecodeCount reads
// it, wire.Spec.CountBody words the answer.
func (s *Server) countTokens(w http.ResponseWriter, req *http.Request, wr wire.Format) {
	spec := wr.Spec()
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
		err = spec.DecodeCount(wr, body, &c)
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
	wire.WriteJSONBody(w, http.StatusOK, spec.CountBody(&c))
}
