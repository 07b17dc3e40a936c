package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// OpenAI's Batch API (docs/batch-api.md): POST and GET /v1/batches, GET
// /v1/batches/{id} and POST /v1/batches/{id}/cancel, over input files of
// the Files API (files.go). A batch goes validating → in_progress →
// finalizing → completed, or failed (its input file did not validate, or
// the enqueued-token limit), expired (the 24-hour window ended first), or
// cancelling → cancelled.

func routeVar(req *http.Request, name string) string { return mux.Vars(req)[name] }

// batchEndpoint is the format of api's provider served at endpoint (a
// registered format of formats whose Spec's Catalog is api's, at its one
// Path: a format with Routes has none), and ok false when there is none;
// paths lists those the mock serves.
func batchEndpoint(api *batchAPI, endpoint string) (wr wire.Format, paths []string, ok bool) {
	for _, f := range formats {
		spec := f.Spec()
		if spec.Catalog != api.wr.Spec().Catalog || spec.Path == "" {
			continue
		}
		if spec.Path == endpoint {
			wr, ok = f, true
		}
		paths = append(paths, spec.Path)
	}
	return wr, paths, ok
}

func (s *Server) openaiBatchCreate(w http.ResponseWriter, req *http.Request) {
	api := openaiBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	body, e := readLimited(w, req, 1<<20, "the request body")
	if e != nil {
		s.batchError(w, api, http.StatusRequestEntityTooLarge, *e)
		return
	}
	var in struct {
		InputFileID      *string           `json:"input_file_id"`
		Endpoint         *string           `json:"endpoint"`
		CompletionWindow *string           `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: wire.DescribeJSONError(err).Error()})
		return
	}
	bad := func(param, format string, args ...any) {
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: param + ": " + fmt.Sprintf(format, args...), Param: param})
	}
	switch {
	case in.InputFileID == nil:
		bad("input_file_id", "field required")
		return
	case in.Endpoint == nil:
		bad("endpoint", "field required")
		return
	case in.CompletionWindow == nil:
		bad("completion_window", "field required")
		return
	case *in.CompletionWindow != "24h":
		bad("completion_window", "only 24h is supported, got %q", *in.CompletionWindow)
		return
	case len(in.Metadata) > 16:
		bad("metadata", "at most 16 keys, got %d", len(in.Metadata))
		return
	}
	for k, v := range in.Metadata {
		if len(k) > 64 || len(v) > 512 {
			bad("metadata."+k, "keys are at most 64 characters and values at most 512")
			return
		}
	}
	ewr, paths, served := batchEndpoint(api, *in.Endpoint)
	if !served {
		bad("endpoint", "want %s (the endpoints the mock serves), got %q", strings.Join(paths, " or "), *in.Endpoint)
		return
	}
	bs := &s.batch
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.init()
	f := bs.files[*in.InputFileID]
	if f == nil || f.key != key || f.deleted {
		s.batchError(w, api, http.StatusNotFound, wire.APIError{Msg: fmt.Sprintf("No such File object: %s", *in.InputFileID), Param: "input_file_id"})
		return
	}
	if f.purpose != "batch" {
		bad("input_file_id", "file %s has purpose %q; a batch's input file must be uploaded with purpose batch", f.id, f.purpose)
		return
	}
	b := &mbatch{key: key, api: api, wr: ewr, endpoint: *in.Endpoint, inputFile: f.id, metadata: in.Metadata}
	s.openaiValidate(b, f.data)
	now := s.clock.Now()
	if b.failure == nil {
		s.enqueuedCheck(b, now)
	}
	if b.failure == nil {
		s.mu.Lock()
		for k := range b.reqs {
			b.reqs[k].fault = s.chance(s.cfg.Batches.Errored)
		}
		s.mu.Unlock()
	}
	b.id = s.newID("batch_")
	bs.plan(b, s.cfg.Batches, now)
	bs.batches[b.id] = b
	bs.order = append(bs.order, b)
	wire.WriteJSONBody(w, http.StatusOK, s.openaiBatchJSON(b, now))
}

// openaiValidate reads an input file into b's requests, or sets
// b.failure to every problem found, one per line (as the API lists
// them, at most 100 here).
func (s *Server) openaiValidate(b *mbatch, data []byte) {
	lim := s.cfg.Batches.OpenAI
	maxBytes, maxReq := lim.MaxBytes, lim.MaxRequests
	if maxBytes == 0 {
		maxBytes = defaultOpenAIBatchBytes
	}
	if maxReq == 0 {
		maxReq = defaultOpenAIBatchRequests
	}
	fail := func(line int, code, format string, args ...any) {
		if len(b.failure) < 100 {
			var l any
			if line > 0 {
				l = line
			}
			b.failure = append(b.failure, batchLineError{Code: code, Message: fmt.Sprintf(format, args...), Line: l})
		}
	}
	if int64(len(data)) > maxBytes {
		fail(0, "file_too_large", "The batch input file is larger than the %d maximum", maxBytes)
		return
	}
	seen := make(map[string]int)
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var raw []byte
		raw, data, _ = bytes.Cut(data, []byte("\n"))
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var l struct {
			CustomID *string         `json:"custom_id"`
			Method   *string         `json:"method"`
			URL      *string         `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			fail(lineNo, "invalid_json_line", "This line is not parseable as valid JSON: %v", err)
			continue
		}
		switch {
		case l.CustomID == nil || *l.CustomID == "":
			fail(lineNo, "missing_required_parameter", "custom_id: field required")
			continue
		case l.Method == nil || *l.Method != "POST":
			fail(lineNo, "invalid_value", "method: want POST")
			continue
		case l.URL == nil || *l.URL != b.endpoint:
			fail(lineNo, "mismatched_endpoint", "url: the line's url must be the batch's endpoint %s", b.endpoint)
			continue
		case len(l.Body) == 0 || l.Body[0] != '{':
			fail(lineNo, "missing_required_parameter", "body: want the request object")
			continue
		}
		if first, dup := seen[*l.CustomID]; dup {
			fail(lineNo, "duplicate_custom_id", "The custom_id for this request is a duplicate of another request (line %d); custom_id must be unique within a batch", first)
			continue
		}
		seen[*l.CustomID] = lineNo
		model := modelOf(l.Body)
		switch {
		case b.model == "":
			b.model = model
		case model != b.model:
			fail(lineNo, "model_mismatch", "Each input file can only include requests to a single model: this line asks for %q, earlier lines for %q", model, b.model)
			continue
		}
		input, pe := s.checkParams(b.wr, l.Body)
		b.inputTokens += input
		b.reqs = append(b.reqs, breq{customID: *l.CustomID, params: l.Body, input: input, bad: pe})
	}
	switch {
	case b.failure != nil:
	case len(b.reqs) == 0:
		fail(0, "empty_file", "The batch input file is empty")
	case len(b.reqs) > maxReq:
		fail(0, "too_many_requests", "The batch input file has %s requests; a batch may have at most %s", fmtCount(len(b.reqs)), fmtCount(maxReq))
	}
	if b.failure != nil {
		b.reqs = nil
	}
}

// enqueuedCheck fails b when its input tokens and those of key's batches
// not yet ended, for its model's pool, pass the pool's enqueued-token
// limit. bs.mu is held.
func (s *Server) enqueuedCheck(b *mbatch, now time.Time) {
	pools := s.cfg.Batches.OpenAI.EnqueuedTokens
	pool := admission.PoolFor(pools, b.model)
	if pool == "" {
		return
	}
	limit, queued := pools[pool], 0
	for _, o := range s.batch.order {
		if o.key == b.key && o.api == b.api && o.failure == nil && !o.deleted && admission.PoolFor(pools, o.model) == pool && now.Before(o.openaiEnd()) {
			queued += o.inputTokens
		}
	}
	if queued+b.inputTokens > limit {
		b.failure = []batchLineError{{Code: "token_limit_exceeded", Message: fmt.Sprintf(
			"Enqueued token limit reached for %s in organization %s. Limit: %s enqueued tokens. Please try again once some in_progress batches have been completed.",
			b.model, mockOrganization, fmtCount(limit))}}
		b.reqs = nil
	}
}

// mockOrganization is the organization the mock names in messages.
const mockOrganization = "org-mockllm"

// openaiEnd is when b reaches its terminal status.
func (b *mbatch) openaiEnd() time.Time {
	switch {
	case b.failure != nil:
		return b.start
	case b.canceled(), b.planned < len(b.reqs):
		return b.endedAt()
	}
	return b.endedAt().Add(b.finalize)
}

type openaiBatch struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Model            string            `json:"model,omitempty"`
	Errors           *openaiErrors     `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        *int64            `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    map[string]int    `json:"request_counts"`
	Usage            map[string]any    `json:"usage"`
	Metadata         map[string]string `json:"metadata"`
}

type openaiErrors struct {
	Object string           `json:"object"`
	Data   []batchLineError `json:"data"`
}

func unix(t time.Time) *int64 {
	v := t.Unix()
	return &v
}

// openaiBatchJSON is b at now, its results materialized once it has
// reached a terminal status. bs.mu is held.
func (s *Server) openaiBatchJSON(b *mbatch, now time.Time) openaiBatch {
	out := openaiBatch{
		ID: b.id, Object: "batch", Endpoint: b.endpoint, Model: b.model, InputFileID: b.inputFile,
		CompletionWindow: "24h", Status: "validating", CreatedAt: b.created.Unix(), ExpiresAt: unix(b.expires),
		RequestCounts: map[string]int{"total": len(b.reqs), "completed": 0, "failed": 0},
		Metadata:      b.metadata,
	}
	// Validation ends after Startup (plan sets a failed batch's start
	// there); a valid batch's start may be later, behind the queue.
	validated := b.start
	if b.failure == nil {
		validated = b.created.Add(orDuration(s.cfg.Batches.Startup, DefaultBatchStartup))
	}
	end := b.openaiEnd()
	switch {
	case now.Before(validated) && !b.canceled():
	case b.failure != nil:
		out.Status, out.FailedAt = "failed", unix(validated)
		out.Errors = &openaiErrors{Object: "list", Data: b.failure}
	default:
		out.Status, out.InProgressAt = "in_progress", unix(validated)
	}
	if b.failure == nil && (!now.Before(validated) || b.canceled()) {
		done := b.processedAt(now)
		if b.canceled() {
			done = min(done, b.processed())
		}
		for k := range done {
			if b.reqs[k].fault || b.reqs[k].bad != nil {
				out.RequestCounts["failed"]++
			} else {
				out.RequestCounts["completed"]++
			}
		}
		switch {
		case b.canceled():
			out.CancellingAt = unix(b.cancelAt)
			out.Status = "cancelling"
			if !now.Before(end) {
				out.Status, out.CancelledAt = "cancelled", unix(end)
			}
		case b.planned < len(b.reqs):
			if !now.Before(end) {
				out.Status, out.ExpiredAt = "expired", unix(end)
			}
		default:
			if fin := b.endedAt(); !now.Before(fin) {
				out.Status, out.FinalizingAt = "finalizing", unix(fin)
				if !now.Before(end) {
					out.Status, out.CompletedAt = "completed", unix(end)
				}
			}
		}
	}
	if b.failure == nil && !now.Before(end) && len(b.reqs) > 0 {
		s.openaiMaterialize(b)
		out.OutputFileID, out.ErrorFileID = wire.StrPtr(b.outputFile), wire.StrPtr(b.errorFile)
	}
	out.Usage = map[string]any{
		"input_tokens": b.usage.input, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": b.usage.output, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
		"total_tokens": b.usage.input + b.usage.output,
	}
	return out
}

// openaiMaterialize writes b's output file (the succeeded requests) and
// error file (the rest), once. bs.mu is held.
func (s *Server) openaiMaterialize(b *mbatch) {
	if b.done {
		return
	}
	s.materialize(b, func(k int, o string, body []byte, e *wire.APIError) []byte {
		l := append([]byte(`{"id":"`), s.newID("batch_req_")...)
		l = append(l, `","custom_id":`...)
		l = append(l, wire.AppendJSONString(nil, b.reqs[k].customID)...)
		reqID := s.newID("req_")
		switch o {
		case outcomeSucceeded:
			l = append(l, `,"response":{"status_code":200,"request_id":"`...)
			l = append(l, reqID...)
			l = append(l, `","body":`...)
			l = append(l, body...)
			l = append(l, `},"error":null}`...)
		case outcomeErrored:
			status, typ := 500, "server_error"
			if e.Code == "invalid_request" {
				status, typ = 400, "invalid_request_error"
			}
			eb, _ := json.Marshal(map[string]any{"error": map[string]any{"message": e.Msg, "type": typ, "param": wire.StrPtr(e.Param), "code": nil}})
			l = append(l, `,"response":{"status_code":`...)
			l = strconv.AppendInt(l, int64(status), 10)
			l = append(l, `,"request_id":"`...)
			l = append(l, reqID...)
			l = append(l, `","body":`...)
			l = append(l, eb...)
			l = append(l, `},"error":null}`...)
		case outcomeExpired:
			l = append(l, `,"response":null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}`...)
		case outcomeCanceled:
			l = append(l, `,"response":null,"error":{"code":"batch_cancelled","message":"This request was not executed because the batch was cancelled."}}`...)
		}
		return append(l, '\n')
	})
	var output, errs []byte
	for k, l := range b.lines {
		if b.outcomes[k] == outcomeSucceeded {
			output = append(output, l...)
		} else {
			errs = append(errs, l...)
		}
	}
	if output != nil {
		b.outputFile = s.addFile(b.key, b.id+"_output.jsonl", "batch_output", output).id
	}
	if errs != nil {
		b.errorFile = s.addFile(b.key, b.id+"_error.jsonl", "batch_output", errs).id
	}
	b.lines = nil // the files hold them
}

func (s *Server) openaiBatchGet(w http.ResponseWriter, req *http.Request) {
	api := openaiBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	if b := s.batchOf(w, req, key, api); b != nil {
		wire.WriteJSONBody(w, http.StatusOK, s.openaiBatchJSON(b, s.clock.Now()))
	}
}

func (s *Server) openaiBatchCancel(w http.ResponseWriter, req *http.Request) {
	api := openaiBatches
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
	if b.failure != nil || !now.Before(b.openaiEnd()) {
		st := s.openaiBatchJSON(b, now).Status
		s.batchError(w, api, http.StatusConflict, wire.APIError{Msg: fmt.Sprintf("Cannot cancel a batch with status %s.", st)})
		return
	}
	if b.cancelAt.IsZero() && now.Before(b.naturalEnd()) {
		b.cancelAt = now
	}
	wire.WriteJSONBody(w, http.StatusOK, s.openaiBatchJSON(b, now))
}

func (s *Server) openaiBatchList(w http.ResponseWriter, req *http.Request) {
	api := openaiBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	q := req.URL.Query()
	limit, e := listLimit(q.Get("limit"), 100)
	if e != nil {
		s.batchError(w, api, http.StatusBadRequest, *e)
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	list, more, found := page(s.batch.keyBatches(key, api), q.Get("after"), "", limit)
	if !found {
		s.batchError(w, api, http.StatusBadRequest, wire.APIError{Msg: "after: no such batch", Param: "after"})
		return
	}
	now := s.clock.Now()
	out := struct {
		Object  string        `json:"object"`
		Data    []openaiBatch `json:"data"`
		FirstID *string       `json:"first_id"`
		LastID  *string       `json:"last_id"`
		HasMore bool          `json:"has_more"`
	}{Object: "list", Data: []openaiBatch{}, HasMore: more}
	for _, b := range list {
		out.Data = append(out.Data, s.openaiBatchJSON(b, now))
	}
	if len(list) > 0 {
		out.FirstID, out.LastID = &list[0].id, &list[len(list)-1].id
	}
	wire.WriteJSONBody(w, http.StatusOK, out)
}
