package mock

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// OpenAI's Files API, as far as the Batch API needs it (docs/batch-api.md):
// POST /v1/files (multipart, purpose batch), GET /v1/files and
// /v1/files/{id}, GET /v1/files/{id}/content and DELETE /v1/files/{id}.
// Batches write their output and error files here.

// maxFileBytes is the largest file the Files API takes: 512 MB.
const maxFileBytes = 512 << 20

// filePurposes are the purposes the Files API accepts.
var filePurposes = []string{"assistants", "batch", "fine-tune", "vision", "user_data", "evals"}

// mfile is one stored file.
type mfile struct {
	id, key, filename, purpose string
	created                    time.Time
	data                       []byte
	deleted                    bool
}

type fileObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int    `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	ExpiresAt *int64 `json:"expires_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
	// StatusDetails is deprecated in the API and always null.
	StatusDetails *string `json:"status_details"`
}

func (f *mfile) json() fileObject {
	return fileObject{ID: f.id, Object: "file", Bytes: len(f.data), CreatedAt: f.created.Unix(), Filename: f.filename, Purpose: f.purpose, Status: "processed"}
}

// addFile stores a file. bs.mu is held.
func (s *Server) addFile(key, filename, purpose string, data []byte) *mfile {
	bs := &s.batch
	bs.init()
	f := &mfile{id: s.newID("file-"), key: key, filename: filename, purpose: purpose, created: s.clock.Now(), data: data}
	bs.files[f.id] = f
	bs.fileSeq = append(bs.fileSeq, f)
	return f
}

func (s *Server) fileCreate(w http.ResponseWriter, req *http.Request) {
	api := openaiBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	bad := func(status int, param, format string, args ...any) {
		w.Header().Set("Connection", "close")
		s.batchError(w, api, status, wire.APIError{Msg: fmt.Sprintf(format, args...), Param: param})
	}
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
		bad(http.StatusBadRequest, "", "want a multipart/form-data body with the fields file and purpose, got Content-Type %q", req.Header.Get("Content-Type"))
		return
	}
	req.Body = http.MaxBytesReader(w, req.Body, maxFileBytes+1<<20)
	mr, err := req.MultipartReader()
	if err != nil {
		bad(http.StatusBadRequest, "", "reading the multipart body: %v", err)
		return
	}
	var data []byte
	var filename, purpose string
	haveFile, havePurpose := false, false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				bad(http.StatusRequestEntityTooLarge, "file", "the file is above the limit of %d bytes", maxFileBytes)
				return
			}
			bad(http.StatusBadRequest, "", "reading the multipart body: %v", err)
			return
		}
		switch part.FormName() {
		case "file":
			data, err = io.ReadAll(io.LimitReader(part, maxFileBytes+1))
			if err == nil && len(data) > maxFileBytes {
				bad(http.StatusRequestEntityTooLarge, "file", "the file is above the limit of %d bytes", maxFileBytes)
				return
			}
			filename, haveFile = part.FileName(), true
		case "purpose":
			var v []byte
			v, err = io.ReadAll(io.LimitReader(part, 256))
			purpose, havePurpose = string(v), true
		default:
			_, err = io.Copy(io.Discard, part)
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				bad(http.StatusRequestEntityTooLarge, "file", "the file is above the limit of %d bytes", maxFileBytes)
				return
			}
			bad(http.StatusBadRequest, "", "reading the multipart body: %v", err)
			return
		}
	}
	switch {
	case !haveFile:
		bad(http.StatusBadRequest, "file", "file: field required")
		return
	case !havePurpose:
		bad(http.StatusBadRequest, "purpose", "purpose: field required")
		return
	case !slices.Contains(filePurposes, purpose):
		bad(http.StatusBadRequest, "purpose", "purpose: want one of %v, got %q", filePurposes, purpose)
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	f := s.addFile(key, filename, purpose, data)
	wire.WriteJSONBody(w, http.StatusOK, f.json())
}

// fileOf finds the file of the request's {id} for key, answering 404
// itself when there is none. bs.mu is held.
func (s *Server) fileOf(w http.ResponseWriter, req *http.Request, key string) *mfile {
	id := routeVar(req, "id")
	f := s.batch.files[id]
	if f == nil || f.key != key || f.deleted {
		s.batchError(w, openaiBatches, http.StatusNotFound, wire.APIError{Msg: fmt.Sprintf("No such File object: %s", id), Param: "id"})
		return nil
	}
	return f
}

func (s *Server) fileGet(w http.ResponseWriter, req *http.Request) {
	key, ok := s.batchAuth(w, req, openaiBatches)
	if !ok {
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	if f := s.fileOf(w, req, key); f != nil {
		wire.WriteJSONBody(w, http.StatusOK, f.json())
	}
}

func (s *Server) fileContent(w http.ResponseWriter, req *http.Request) {
	key, ok := s.batchAuth(w, req, openaiBatches)
	if !ok {
		return
	}
	s.batch.mu.Lock()
	f := s.fileOf(w, req, key)
	s.batch.mu.Unlock()
	if f == nil {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(http.StatusOK)
	w.Write(f.data) // a file's data never changes once stored
}

func (s *Server) fileDelete(w http.ResponseWriter, req *http.Request) {
	key, ok := s.batchAuth(w, req, openaiBatches)
	if !ok {
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	if f := s.fileOf(w, req, key); f != nil {
		f.deleted, f.data = true, nil
		wire.WriteJSONBody(w, http.StatusOK, map[string]any{"id": f.id, "object": "file", "deleted": true})
	}
}

func (s *Server) fileList(w http.ResponseWriter, req *http.Request) {
	api := openaiBatches
	key, ok := s.batchAuth(w, req, api)
	if !ok {
		return
	}
	q := req.URL.Query()
	limit, e := listLimit(q.Get("limit"), 10000)
	if e != nil {
		s.batchError(w, api, http.StatusBadRequest, *e)
		return
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	var list []*mfile
	for _, f := range slices.Backward(s.batch.fileSeq) {
		if f.key == key && !f.deleted && (q.Get("purpose") == "" || f.purpose == q.Get("purpose")) {
			list = append(list, f)
		}
	}
	if after := q.Get("after"); after != "" {
		i := slices.IndexFunc(list, func(f *mfile) bool { return f.id == after })
		list = list[i+1:] // i is -1 for an unknown cursor: the whole list
	}
	more := len(list) > limit
	list = list[:min(limit, len(list))]
	out := struct {
		Object  string       `json:"object"`
		Data    []fileObject `json:"data"`
		FirstID *string      `json:"first_id"`
		LastID  *string      `json:"last_id"`
		HasMore bool         `json:"has_more"`
	}{Object: "list", Data: []fileObject{}, HasMore: more}
	for _, f := range list {
		out.Data = append(out.Data, f.json())
	}
	if len(list) > 0 {
		out.FirstID, out.LastID = &list[0].id, &list[len(list)-1].id
	}
	wire.WriteJSONBody(w, http.StatusOK, out)
}

// listLimit parses a list's limit: 20 when absent, else in [1, most].
func listLimit(v string, most int) (int, *wire.APIError) {
	if v == "" {
		return 20, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, &wire.APIError{Msg: fmt.Sprintf("limit: want an integer in [1, %d], got %q", most, v), Param: "limit"}
	}
	return n, nil
}
