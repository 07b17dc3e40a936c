package mock

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// Forward answers a request in place of the mock: it writes an upstream's
// response to w and returns the output tokens that response reported, or
// -1 when it reported none.
type Forward func(w http.ResponseWriter, req *http.Request) (outputTokens int)

// UpstreamConfig is cfg made fit to sit in front of a real API: open (no
// API keys: the client's own credentials are the upstream's to judge), not
// strict and accepting any model, so that the mock refuses nothing the
// upstream would accept except by its limits and its admission faults
// (error_500, overloaded, reset, script). The faults that act on the mock's
// own response (slow, cut_stream, stream_error, malformed) are an error
// naming the key: the response is the upstream's.
func UpstreamConfig(cfg Config) (Config, error) {
	f := cfg.Faults
	for _, k := range []struct {
		name string
		set  bool
	}{{"slow", f.Slow.Rate > 0}, {"cut_stream", f.CutStream > 0}, {"stream_error", f.StreamError > 0}, {"malformed", f.Malformed > 0}} {
		if k.set {
			return cfg, fmt.Errorf("faults.%s acts on the mock's own responses; in front of an upstream the responses are the upstream's (the faults that apply are error_500, overloaded, reset and script)", k.name)
		}
	}
	off := false
	cfg.APIKeys, cfg.AWSSecretKeys = nil, nil
	cfg.Strict = &off
	cfg.Models.Any = true
	return cfg, nil
}

// Upstream returns a handler that admits each model request of every API
// the mock serves (the formats' paths and routes, as the server routes
// them) by the server's limits, capacity and admission faults, answering
// a refusal itself exactly as the mock does (the format's 429 with
// retry-after and the rate-limit headers of the server's state), and
// passes every admitted request to forward, unchanged, holding its
// concurrency slot until forward returns; the output tokens it returns
// settle the request's otpm reservation as the mock's own output would
// (-1 settles at max_tokens). Every other request (/v1/models,
// count_tokens, the batch APIs, a path the mock does not know, a route
// whose target the mock cannot resolve, such as a deployment it was not
// told of) goes to forward without admission, except the mock's own
// routes (opsRoutes: /_admin/, /metrics, /healthz and /readyz), which the
// server answers. The server is best built on UpstreamConfig.
//
// A refusal's computed retry-after is the time until a slot frees or a
// bucket refills by the server's own latency and output configuration: the
// mock cannot know when the upstream's responses will end.
func (s *Server) Upstream(forward Forward) http.Handler {
	pass := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { forward(w, req) })
	r := mux.NewRouter().SkipClean(true) // an unclean path goes on as it is
	for _, wr := range formats {
		if p := wr.Spec().Path; p != "" {
			r.Handle(p, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				s.serveUpstream(w, req, wr, forward)
			})).Methods(http.MethodPost)
		}
		for _, rt := range wr.Spec().Routes {
			r.Handle(rt.Path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				t := s.target(wr, rt, req)
				if t.Err != nil || t.Endpoint != wire.EndpointModel {
					forward(w, req)
					return
				}
				s.serveUpstream(w, req, t.Format, forward)
			})).Methods(rt.Method)
		}
	}
	// The mock's own routes, by any method (a wrong one gets the mock's
	// 405), and any other admin path (the mock's 404).
	for _, rt := range s.opsRoutes() {
		r.Handle(rt.path, s.handler)
	}
	r.PathPrefix(adminPrefix).Handler(s.handler)
	r.NotFoundHandler, r.MethodNotAllowedHandler = pass, pass
	return s.limitHeaders(s.recoverPanics(r))
}

// serveUpstream is serveModel with forward in place of the mock's own
// response.
func (s *Server) serveUpstream(w http.ResponseWriter, req *http.Request, wr wire.Format, forward Forward) {
	// The body as prepare reads it, to send on: prepare reads it through
	// the mock's own limits (MaxBodyBytes, the decode budget), whose
	// refusals are its answer.
	var body bytes.Buffer
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = teeBody{io.TeeReader(req.Body, &body), req.Body}
	}
	x := exchanges.Get().(*exchange)
	x.s, x.w, x.ctx, x.wr = s, w, req.Context(), wr
	if s.prepare(x, req) {
		// The admitted response is the upstream's, headers and all.
		clear(w.Header())
		out := req.Clone(req.Context())
		b := body.Bytes()
		out.Body = io.NopCloser(bytes.NewReader(b))
		out.ContentLength = int64(len(b))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		sw := &statusWriter{ResponseWriter: w}
		x.status = http.StatusOK
		func() {
			defer x.finish() // also when forward panics (a cut stream)
			n := forward(sw, out)
			if sw.status != 0 {
				x.status = sw.status
			}
			if n < 0 {
				n = x.d.reserved
			}
			x.emitted = n
		}()
	}
	x.free()
}

// teeBody reads through r and closes c.
type teeBody struct {
	r io.Reader
	c io.Closer
}

func (t teeBody) Read(p []byte) (int, error) { return t.r.Read(p) }
func (t teeBody) Close() error               { return t.c.Close() }

// statusWriter notes the status an upstream's response was written with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (Flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes a flush on: httputil.ReverseProxy flushes each chunk of a
// stream through http.ResponseController, which finds it here.
func (w *statusWriter) Flush() {
	http.NewResponseController(w.ResponseWriter).Flush()
}
