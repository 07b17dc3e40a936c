package mock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// The Message Batches API (docs/batch-api.md): POST and GET
// /v1/messages/batches, GET …/{id}, GET …/{id}/results (JSONL), POST
// …/{id}/cancel and DELETE …/{id}.

// batchRoutes are the batch APIs' routes, Anthropic's and OpenAI's.
func (s *Server) batchRoutes() []route {
	get, post, del := []string{http.MethodGet}, []string{http.MethodPost}, []string{http.MethodDelete}
	return []route{
		{"/v1/messages/batches", post, http.HandlerFunc(s.anthropicBatchCreate)},
		{"/v1/messages/batches", get, http.HandlerFunc(s.anthropicBatchList)},
		{"/v1/messages/batches/{id}", get, http.HandlerFunc(s.anthropicBatchGet)},
		{"/v1/messages/batches/{id}", del, http.HandlerFunc(s.anthropicBatchDelete)},
		{"/v1/messages/batches/{id}/results", get, http.HandlerFunc(s.anthropicBatchResults)},
		{"/v1/messages/batches/{id}/cancel", post, http.HandlerFunc(s.anthropicBatchCancel)},
		{"/v1/files", post, http.HandlerFunc(s.fileCreate)},
		{"/v1/files", get, http.HandlerFunc(s.fileList)},
		{"/v1/files/{id}", get, http.HandlerFunc(s.fileGet)},
		{"/v1/files/{id}", del, http.HandlerFunc(s.fileDelete)},
		{"/v1/files/{id}/content", get, http.HandlerFunc(s.fileContent)},
		{"/v1/batches", post, http.HandlerFunc(s.openaiBatchCreate)},
		{"/v1/batches", get, http.HandlerFunc(s.openaiBatchList)},
		{"/v1/batches/{id}", get, http.HandlerFunc(s.openaiBatchGet)},
		{"/v1/batches/{id}/cancel", post, http.HandlerFunc(s.openaiBatchCancel)},
	}
}

// batchAuth authenticates a request to api, answering the refusal itself
// in api's envelope: ok false then.
func (s *Server) batchAuth(w http.ResponseWriter, req *http.Request, api *batchAPI) (key string, ok bool) {
	wr := api.wr
	id := s.newID("req_")
	w.Header().Set(wr.RequestIDHeader(), id)
	setAPIHeaders(w.Header(), wr)
	key, ok, why := s.authenticate(req, wr)
	if !ok {
		wr.WriteError(w, http.StatusUnauthorized, wire.APIError{Msg: why}, id)
		return "", false
	}
	if e := s.checkVersion(req, wr); e != nil {
		wr.WriteError(w, http.StatusBadRequest, *e, id)
		return "", false
	}
	return key, true
}

// batchError answers e in api's envelope, with the request id batchAuth
// set. A 404 is for an object that does not exist (a batch, a file), not
// an unknown URL: OpenAI's code is null then, as the API answers "No such
// File object" (wire.APIError.NullCode).
func (s *Server) batchError(w http.ResponseWriter, api *batchAPI, status int, e wire.APIError) {
	e.NullCode = status == http.StatusNotFound
	api.wr.WriteError(w, status, e, w.Header().Get(api.wr.RequestIDHeader()))
}

// customIDPattern is what a custom_id must match (the API reference:
// 1 to 64 characters of letters, digits, - and _).
var customIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// readLimited reads req's body up to limit bytes: a larger body is a 413
// naming the limit.
func readLimited(w http.ResponseWriter, req *http.Request, limit int64, what string) ([]byte, *wire.APIError) {
	if req.ContentLength > limit {
		return nil, &wire.APIError{Msg: fmt.Sprintf("%s of %d bytes is above the limit of %d bytes", what, req.ContentLength, limit)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, &wire.APIError{Msg: fmt.Sprintf("%s is above the limit of %d bytes", what, limit)}
	}
	if err != nil {
		return nil, &wire.APIError{Msg: "reading request body: " + err.Error()}
	}
	return body, nil
}

func (s *Server) anthropicBatchCreate(w http.ResponseWriter, req *http.Request) {
	api := anthropicBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	cfg := s.cfg.Batches
	limit := cfg.Anthropic.MaxBytes
	if limit == 0 {
		limit = defaultAnthropicBatchBytes
	}
	body, e := readLimited(w, req, limit, "the batch")
	if e != nil {
		w.Header().Set("Connection", "close")
		s.batchError(w, api, http.StatusRequestEntityTooLarge, *e)
		return
	}
	var in struct {
		Requests []struct {
			CustomID *string         `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: wire.DescribeJSONError(err).Error()})
		return
	}
	maxReq := cfg.Anthropic.MaxRequests
	if maxReq == 0 {
		maxReq = defaultAnthropicBatchRequests
	}
	switch {
	case in.Requests == nil:
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: "requests: field required"})
		return
	case len(in.Requests) == 0:
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: "requests: at least one request is required"})
		return
	case len(in.Requests) > maxReq:
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("requests: a batch holds at most %s requests, got %s", fmtCount(maxReq), fmtCount(len(in.Requests)))})
		return
	}
	b := &mbatch{key: key, api: api, wr: api.wr, reqs: make([]breq, len(in.Requests))}
	seen := make(map[string]int, len(in.Requests))
	for i, r := range in.Requests {
		p := "requests." + strconv.Itoa(i)
		switch {
		case r.CustomID == nil:
			s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: p + ".custom_id: field required"})
			return
		case !customIDPattern.MatchString(*r.CustomID):
			s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("%s.custom_id: %q must be 1 to 64 letters, digits, hyphens or underscores", p, *r.CustomID)})
			return
		case len(r.Params) == 0 || wire.IsNull(r.Params) || r.Params[0] != '{':
			s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: p + ".params: want a Messages request object"})
			return
		}
		if j, dup := seen[*r.CustomID]; dup {
			s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("%s.custom_id: duplicate custom_id %q (first at requests.%d); each must be unique within a batch", p, *r.CustomID, j)})
			return
		}
		seen[*r.CustomID] = i
		input, pe := s.checkParams(b.wr, r.Params)
		if pe != nil && pe.Param == "stream" {
			s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: p + ".params." + pe.Msg})
			return
		}
		// Other invalid params end the request errored
		// (invalid_request_error), as the API reports them.
		b.reqs[i] = breq{customID: *r.CustomID, params: r.Params, input: input, bad: pe}
	}

	bs := &s.batch
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.init()
	now := s.clock.Now()
	if q := cfg.Anthropic.QueueRequests; q > 0 {
		queued := 0
		for _, o := range bs.order {
			if o.key == key && o.api == api {
				queued += o.pending(now)
			}
		}
		if queued+len(b.reqs) > q {
			wait := bs.queueWait(key, api, now, queued+len(b.reqs)-q)
			w.Header().Set("Retry-After", strconv.FormatInt(int64(admission.CeilSeconds(wait)/time.Second), 10))
			s.batchError(w, api, http.StatusTooManyRequests, wire.APIError{Msg: fmt.Sprintf(
				"rate limit exceeded: this batch's %s requests and the %s already in the processing queue would pass your organization's limit of %s batch requests in the processing queue",
				fmtCount(len(b.reqs)), fmtCount(queued), fmtCount(q)), Limit: "batch_queue"})
			return
		}
	}
	s.mu.Lock()
	for k := range b.reqs {
		b.reqs[k].fault = s.chance(cfg.Errored)
	}
	s.mu.Unlock()
	b.id = s.newID("msgbatch_")
	b.model = modelOf(b.reqs[0].params)
	bs.plan(b, cfg, now)
	bs.batches[b.id] = b
	bs.order = append(bs.order, b)
	wire.WriteJSONBody(w, http.StatusOK, s.anthropicBatchJSON(req, b, now))
}

// anthropicBatch is a MessageBatch object.
type anthropicBatch struct {
	ID                string         `json:"id"`
	Type              string         `json:"type"`
	ProcessingStatus  string         `json:"processing_status"`
	RequestCounts     map[string]int `json:"request_counts"`
	EndedAt           *string        `json:"ended_at"`
	CreatedAt         string         `json:"created_at"`
	ExpiresAt         string         `json:"expires_at"`
	ArchivedAt        *string        `json:"archived_at"`
	CancelInitiatedAt *string        `json:"cancel_initiated_at"`
	ResultsURL        *string        `json:"results_url"`
}

func rfc3339(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

func rfc3339p(t time.Time) *string {
	v := rfc3339(t)
	return &v
}

// anthropicBatchJSON is b at now. bs.mu is held.
func (s *Server) anthropicBatchJSON(req *http.Request, b *mbatch, now time.Time) anthropicBatch {
	out := anthropicBatch{
		ID: b.id, Type: "message_batch", ProcessingStatus: "in_progress",
		RequestCounts: map[string]int{"processing": len(b.reqs), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
		CreatedAt:     rfc3339(b.created), ExpiresAt: rfc3339(b.expires),
	}
	if !b.cancelAt.IsZero() {
		out.CancelInitiatedAt = rfc3339p(b.cancelAt)
		out.ProcessingStatus = "canceling"
	}
	if end := b.endedAt(); !now.Before(end) {
		out.ProcessingStatus = "ended"
		out.EndedAt = rfc3339p(end)
		// Requests move out of processing only once the whole batch
		// ends (the API reference, request_counts).
		out.RequestCounts["processing"] = 0
		for k := range b.reqs {
			out.RequestCounts[b.outcome(k)]++
		}
		u := "http://" + req.Host + "/v1/messages/batches/" + b.id + "/results"
		out.ResultsURL = &u
	}
	return out
}

// batchOf finds the batch of api of the request's {id} for key, answering
// 404 itself when there is none. bs.mu is held.
func (s *Server) batchOf(w http.ResponseWriter, req *http.Request, key string, api *batchAPI) *mbatch {
	id := routeVar(req, "id")
	b := s.batch.batches[id]
	if b == nil || b.key != key || b.deleted || b.api != api {
		s.batchError(w, api, http.StatusNotFound, wire.APIError{Msg: fmt.Sprintf("%s %s not found", api.object, id)})
		return nil
	}
	return b
}

func (s *Server) anthropicBatchGet(w http.ResponseWriter, req *http.Request) {
	api := anthropicBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	if b := s.batchOf(w, req, key, api); b != nil {
		wire.WriteJSONBody(w, http.StatusOK, s.anthropicBatchJSON(req, b, s.clock.Now()))
	}
}

func (s *Server) anthropicBatchCancel(w http.ResponseWriter, req *http.Request) {
	api := anthropicBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	b := s.batchOf(w, req, key, api)
	if b == nil {
		return
	}
	now := s.clock.Now()
	if b.cancelAt.IsZero() && now.Before(b.endedAt()) {
		b.cancelAt = now
	}
	wire.WriteJSONBody(w, http.StatusOK, s.anthropicBatchJSON(req, b, now))
}

func (s *Server) anthropicBatchDelete(w http.ResponseWriter, req *http.Request) {
	api := anthropicBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	b := s.batchOf(w, req, key, api)
	if b == nil {
		return
	}
	if s.clock.Now().Before(b.endedAt()) {
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("message_batch %s is still processing: a batch can be deleted once it has ended; cancel it first", b.id)})
		return
	}
	b.deleted = true
	b.lines = nil
	wire.WriteJSONBody(w, http.StatusOK, map[string]string{"id": b.id, "type": "message_batch_deleted"})
}

func (s *Server) anthropicBatchList(w http.ResponseWriter, req *http.Request) {
	api := anthropicBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	q := req.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("limit: want an integer in [1, 1000], got %q", v)})
			return
		}
		limit = n
	}
	after, before := q.Get("after_id"), q.Get("before_id")
	if after != "" && before != "" {
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: "after_id and before_id: give at most one"})
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	list, more, found := page(s.batch.keyBatches(key, api), after, before, limit)
	if !found {
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: "after_id or before_id: no such message_batch"})
		return
	}
	now := s.clock.Now()
	out := struct {
		Data    []anthropicBatch `json:"data"`
		HasMore bool             `json:"has_more"`
		FirstID *string          `json:"first_id"`
		LastID  *string          `json:"last_id"`
	}{Data: []anthropicBatch{}, HasMore: more}
	for _, b := range list {
		out.Data = append(out.Data, s.anthropicBatchJSON(req, b, now))
	}
	if len(list) > 0 {
		out.FirstID, out.LastID = &list[0].id, &list[len(list)-1].id
	}
	wire.WriteJSONBody(w, http.StatusOK, out)
}

func (s *Server) anthropicBatchResults(w http.ResponseWriter, req *http.Request) {
	api := anthropicBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	b := s.batchOf(w, req, key, api)
	if b == nil {
		return
	}
	if s.clock.Now().Before(b.endedAt()) {
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("message_batch %s has not ended: its results are available once processing_status is ended", b.id)})
		return
	}
	s.materialize(b, s.anthropicResultLine(b))
	n := 0
	for _, l := range b.lines {
		n += len(l)
	}
	h := w.Header()
	h.Set("Content-Type", "application/binary")
	h.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	for _, l := range b.lines {
		if _, err := w.Write(l); err != nil {
			return
		}
	}
}

// anthropicResultLine makes one line of b's results: a
// MessageBatchIndividualResponse.
func (s *Server) anthropicResultLine(b *mbatch) func(k int, o string, body []byte, e *wire.APIError) []byte {
	return func(k int, o string, body []byte, e *wire.APIError) []byte {
		reqID := s.newID("req_")
		l := append([]byte(`{"custom_id":`), wire.AppendJSONString(nil, b.reqs[k].customID)...)
		l = append(l, `,"result":{"type":"`...)
		l = append(l, o...)
		l = append(l, '"')
		switch o {
		case outcomeSucceeded:
			l = append(l, `,"message":`...)
			l = append(l, body...)
		case outcomeErrored:
			typ := "api_error"
			if e.Code == "invalid_request" {
				typ = "invalid_request_error"
			}
			eb, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": e.Msg}, "request_id": reqID})
			l = append(l, `,"error":`...)
			l = append(l, eb...)
		}
		return append(l, "}}\n"...)
	}
}
