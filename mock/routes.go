package mock

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/azure"
	"github.com/ratelab/ratelab/mock/internal/bedrock"
	"github.com/ratelab/ratelab/mock/internal/gemini"
	"github.com/ratelab/ratelab/mock/internal/openaichat"
	"github.com/ratelab/ratelab/mock/internal/openairesponses"
	"github.com/ratelab/ratelab/mock/internal/vertexanthropic"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// route is one entry of the route table: a path (a gorilla/mux template),
// the methods it answers and its handler.
type route struct {
	path    string
	methods []string
	h       http.Handler
}

// formats are the wire formats the server serves, each at its
// wire.Spec.Path or wire.Spec.Routes; a new format is added here and in the conformance table
// (formats_test.go).
var formats = []wire.Format{anthropic.Format{}, openaichat.Format{}, openairesponses.Format{},
	gemini.Format{}, gemini.Format{Vertex: true}, vertexanthropic.Format{}, bedrock.Format{}, azure.Chat, azure.Responses}

// routeTable is the server's one list of routes. The router is built from
// it, the exact paths are dispatched from it (fastRoutes), and a 405's
// Allow header is derived from the router (allowed).
func (s *Server) routeTable() []route {
	post := []string{http.MethodPost}
	var t []route
	for _, wr := range formats {
		if p := wr.Spec().Path; p != "" {
			t = append(t, route{p, post, s.model(wr)})
		}
	}
	t = append(t, s.modelRoutes()...)
	t = append(t, s.batchRoutes()...)
	for _, wr := range formats {
		for _, rt := range wr.Spec().Routes {
			t = append(t, route{rt.Path, []string{rt.Method}, s.formatRoute(wr, rt)})
		}
	}
	t = append(t, s.adminRateLimitRoutes()...) // admin_ratelimits.go
	return append(t, s.opsRoutes()...)
}

// adminPrefix is the path prefix of the mock's admin API (adminRoutes).
const adminPrefix = "/_admin/"

// opsRoutes are the routes of the mock's own operation, which it answers
// itself in front of an upstream as well (Upstream): its admin API, its
// metrics and its probes. The providers' admin rate-limit APIs it emulates
// (adminRateLimitRoutes) are not among them: an upstream answers those.
func (s *Server) opsRoutes() []route {
	probe := []string{http.MethodGet, http.MethodHead}
	return append(s.adminRoutes(),
		route{"/metrics", []string{http.MethodGet}, s.metricsAuth(s.metrics.handler())},
		route{"/healthz", probe, http.HandlerFunc(s.healthz)},
		route{"/readyz", probe, http.HandlerFunc(s.readyz)},
	)
}

// formatRoute serves one of wr's wire.Spec.Routes: the endpoint it names,
// for the value of wr its Resolve makes from the request (or wr itself).
func (s *Server) formatRoute(wr wire.Format, rt wire.Route) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		t := s.target(wr, rt, req)
		if t.Err != nil {
			s.writeError(w, t.Format, t.Status, *t.Err)
			return
		}
		switch t.Endpoint {
		case wire.EndpointModel:
			s.serveModel(w, req, t.Format)
		case wire.EndpointCountTokens:
			s.countTokens(w, req, t.Format)
		case wire.EndpointListModels:
			s.listModelsOf(w, req, t.Format)
		case wire.EndpointGetModel:
			s.getModelOf(w, req, t.Format)
		default:
			s.writeError(w, t.Format, http.StatusInternalServerError, wire.APIError{Msg: fmt.Sprintf("format %s: route %s names no endpoint (%d)", wr.Name(), rt.Path, t.Endpoint)})
		}
	}
}

// target is the format and endpoint a request to route rt of wr names:
// what rt's Resolve makes of the request, or wr and rt's endpoint.
func (s *Server) target(wr wire.Format, rt wire.Route, req *http.Request) wire.Target {
	if rt.Resolve == nil {
		return wire.Target{Format: wr, Endpoint: rt.Endpoint}
	}
	return rt.Resolve(req, mux.Vars(req), s.env)
}

// routes builds the router from the route table. Wrong methods get 405 and
// unknown paths 404, in the envelope of the API the path belongs to.
func (s *Server) routes() http.Handler {
	table := s.routeTable()
	r := mux.NewRouter()
	for _, rt := range table {
		r.Handle(rt.path, rt.h).Methods(rt.methods...)
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.routeError(w, req, http.StatusNotFound, fmt.Sprintf("not found: %s %s", req.Method, req.URL.Path))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		allow := strings.Join(allowed(r, req), ", ")
		w.Header().Set("Allow", allow)
		s.routeError(w, req, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed for %s; use %s", req.Method, req.URL.Path, allow))
	})
	return s.limitHeaders(s.recoverPanics(fastRoutes(table, r)))
}

// routeMethods are the methods a 405's Allow header may list, in its order.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowed lists the methods r routes req's path for, asking r itself: the
// router is the one route table.
func allowed(r *mux.Router, req *http.Request) []string {
	var methods []string
	for _, m := range routeMethods {
		probe := req.Clone(req.Context())
		probe.Method = m
		var match mux.RouteMatch
		if r.Match(probe, &match) && match.MatchErr == nil {
			methods = append(methods, m)
		}
	}
	return methods
}

// methodPath is a request's method and exact path.
type methodPath struct{ method, path string }

// fastRoutes dispatches a request whose method and path are exactly those
// of a route of the table without variables, and passes the rest to the
// router (unknown paths, wrong methods, paths to clean, /v1/models/{id}).
// Both serve the same handlers; the direct one spares gorilla/mux's work
// (matching each route's regexps, copying the request twice to put the
// route and its variables in its context), measured cross-process at 5.7 %
// and 6.6 % of mockllm's CPU per request (docs/performance.md).
func fastRoutes(table []route, router http.Handler) http.Handler {
	exact := make(map[methodPath]http.Handler)
	for _, rt := range table {
		if strings.Contains(rt.path, "{") {
			continue
		}
		for _, m := range rt.methods {
			exact[methodPath{m, rt.path}] = rt.h
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if h, ok := exact[methodPath{req.Method, req.URL.Path}]; ok {
			h.ServeHTTP(w, req)
			return
		}
		router.ServeHTTP(w, req)
	})
}

// wireOf picks the API a request is for, whose envelope its errors take:
// by path for the model endpoints (OpenAI's live under /v1/chat/,
// /v1/responses, /v1/completions and /v1/embeddings), otherwise by the
// headers the SDKs send: anthropic-version or x-api-key is Anthropic, a
// bearer token without them is OpenAI. A request with neither is
// Anthropic's. A registered format whose wire.Spec.OwnsRequest claims the
// request comes first.
func wireOf(req *http.Request) wire.Format {
	for _, wr := range formats {
		if own := wr.Spec().OwnsRequest; own != nil && own(req) {
			return wr
		}
	}
	switch p := req.URL.Path; {
	case strings.HasPrefix(p, "/v1/messages"):
		return anthropic.Format{}
	case strings.HasPrefix(p, "/v1/chat/"), strings.HasPrefix(p, "/v1/responses"),
		strings.HasPrefix(p, "/v1/completions"), strings.HasPrefix(p, "/v1/embeddings"):
		return openaichat.Format{}
	}
	if isOpenAIClient(req) {
		return openaichat.Format{}
	}
	return anthropic.Format{}
}

// isOpenAIClient reports whether req's headers are an OpenAI SDK's: a
// bearer token and neither anthropic-version nor x-api-key (Anthropic's
// SDKs send anthropic-version on every request, with either credential).
func isOpenAIClient(req *http.Request) bool {
	h := req.Header
	return h.Get("Anthropic-Version") == "" && h.Get("X-Api-Key") == "" && strings.HasPrefix(h.Get("Authorization"), "Bearer ")
}

func (s *Server) routeError(w http.ResponseWriter, req *http.Request, status int, msg string) {
	s.writeError(w, wireOf(req), status, wire.APIError{Msg: msg})
}

// writeError answers an error in wr's envelope, with a fresh request id and
// the headers wr's API sends on every response.
func (s *Server) writeError(w http.ResponseWriter, wr wire.Format, status int, e wire.APIError) {
	id := s.newID("req_")
	h := w.Header()
	h.Set(wr.RequestIDHeader(), id)
	setAPIHeaders(h, wr)
	wr.WriteError(w, status, e, id)
}

// setAPIHeaders sets the headers wr's API sends on every response
// (wire.Spec.Headers: anthropic-organization-id; or openai-version and an
// openai-processing-ms of 0, which exchange.processed sets to the time the
// request took until its headers).
func setAPIHeaders(h http.Header, wr wire.Format) {
	for _, hv := range wr.Spec().Headers {
		h[hv.Name] = hv.Value
	}
}
