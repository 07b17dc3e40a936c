package mock

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"golang.org/x/sync/semaphore"

	"github.com/ratelab/ratelab/clock"
)

// Server is the mock provider. Create it with New, then either serve it on a
// listener with Serve or mount Handler in a server of your own (whose
// MaxHeaderBytes should then exceed Config.MaxHeaderBytes, and whose own
// plain-text 431 and 400 answers Serve would have rewritten as JSON). It is
// safe for concurrent use.
type Server struct {
	cfg    Config
	log    *slog.Logger
	clock  clock.Clock // the time of admission, latency and the schedule (WithClock)
	keys   map[string]bool
	labels map[string]string // Fingerprint of each key, for metrics and stats
	// The model names each API accepts (unless Config.Models.Any).
	anthropicModels, openaiModels map[string]bool
	handler                       http.Handler
	http                          *http.Server
	metrics                       *metrics
	calls                         *callLog // attempts grouped into logical calls (calls.go)
	budget                        *decodeBudget
	seq                           atomic.Uint64 // request counter, for ids
	text                          []string      // Output.Text's tokens, JSON-escaped; nil for the filler
	// storeDown: Config.Store failed last; its outage is logged once.
	storeDown atomic.Bool
	// draining: Shutdown or Close was called; /readyz answers 503.
	draining atomic.Bool

	mu       sync.Mutex
	rng      *rand.Rand
	base     Limits // Config.Limits or the last SetLimits
	limits   Limits // base with the schedule entries due so far
	latency  Latency
	faults   Faults
	quota    Quota             // Config.Quota or the last SetQuota
	pools    map[string]Limits // Config.LimitsByModel or the last SetLimitsByModel; never changed in place
	epoch    time.Time         // when the schedule started: the first model request; zero before
	next     int               // the next schedule entry to apply
	perKey   map[string]*keyState
	inFlight int    // over all keys, for Capacity
	gen      uint64 // incremented by Reset
	// maxInFlight is the most requests in flight at once since the last
	// Reset, over all keys.
	maxInFlight int
	// past is what the keys counted before the last Reset, and pastInFlight
	// the requests admitted before it still in flight: /metrics counts
	// from the server's start.
	past         counts
	pastInFlight int
}

// keyState is everything the server tracks per API key.
type keyState struct {
	lim    keyLimiter
	counts counts
}

// An Option configures a Server beyond its Config: what is not part of the
// YAML schema, such as the clock of a simulated run.
type Option interface{ apply(*Server) }

type optionFunc func(*Server)

func (f optionFunc) apply(s *Server) { f(s) }

// WithClock makes the server read the time and wait through c: admission,
// token buckets, the latency schedule of every response, the limits'
// schedule and the call accounting. A nil c, like no option, is
// clock.Real. With a simulated clock (clock.Sim), reach the server through
// its in-process transport (Server.InProcess), which serves the Handler in
// goroutines of the run: Serve's connections are the operating system's,
// outside the clock. A Config.Store (Redis) always runs in real time.
func WithClock(c clock.Clock) Option {
	return optionFunc(func(s *Server) { s.clock = clock.Or(c) })
}

// New returns a Server for cfg, or the error cfg.Validate reports.
func New(cfg Config, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("mock: %w", err)
	}
	// The server owns its copy: a caller changing its slices later must not
	// race with requests.
	cfg.APIKeys = slices.Clone(cfg.APIKeys)
	cfg.Faults.Script = slices.Clone(cfg.Faults.Script)
	cfg.Schedule = slices.Clone(cfg.Schedule)
	cfg.Models.Extra = slices.Clone(cfg.Models.Extra)
	cfg.LimitsByModel = maps.Clone(cfg.LimitsByModel)
	cfg.Prices = maps.Clone(cfg.Prices)
	cfg.Azure.Deployments = maps.Clone(cfg.Azure.Deployments)
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		clock:   clock.Real,
		keys:    make(map[string]bool, len(cfg.APIKeys)),
		labels:  make(map[string]string, len(cfg.APIKeys)),
		metrics: newMetrics(),
		budget:  newDecodeBudget(cmp.Or(cfg.DecodeBudget, DefaultDecodeBudget)),
		calls:   newCallLog(),
		base:    cfg.Limits,
		limits:  cfg.Limits,
		latency: cfg.Latency,
		faults:  cfg.Faults,
		quota:   cfg.Quota,
		pools:   cfg.LimitsByModel,
	}
	for _, o := range opts {
		o.apply(s)
	}
	s.calls.clock = s.clock
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Output.Text != "" {
		s.text = textTokens(cfg.Output.Text)
	}
	for _, k := range cfg.APIKeys {
		s.keys[k] = true
		s.labels[k] = Fingerprint(k)
	}
	s.anthropicModels = modelIndex(anthropicCatalog, cfg.Models.Extra)
	s.openaiModels = modelIndex(openaiCatalog, cfg.Models.Extra)
	s.metrics.reg.MustRegister(s.calls, serverCollector{s})
	s.resetLocked()
	s.handler = s.routes()
	s.http = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext:       withConn,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    s.hardHeaderBytes(),
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// Handler returns the server's HTTP handler: the model endpoints, /_admin/,
// /metrics, /healthz and /readyz.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve accepts connections on ln and serves them until Shutdown or Close,
// like http.Server.Serve, whose error it returns (http.ErrServerClosed after
// Shutdown or Close). The server sets ReadHeaderTimeout (10s), BodyTimeout
// (30s) and IdleTimeout (2m), so a client sending headers or a body slowly
// cannot hold a connection forever; responses have no timeout.
func (s *Server) Serve(ln net.Listener) error {
	return s.http.Serve(s.envelope(ln))
}

// envelope wraps ln as Serve serves it. In real time (a kernel's time is
// the real one) its connections read the kernel's receive times
// (arrival.go).
func (s *Server) envelope(ln net.Listener) envelopeListener {
	stamp := s.clock == clock.Real
	if stamp {
		stampListener(ln)
	}
	return envelopeListener{Listener: ln, s: s, stamp: stamp}
}

// Shutdown stops accepting connections and waits for in-flight responses
// to finish or for ctx to end, like http.Server.Shutdown.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	return s.http.Shutdown(ctx)
}

// Close closes the listeners and every connection at once, ending
// in-flight responses.
func (s *Server) Close() error {
	s.draining.Store(true)
	return s.http.Close()
}

// SetLimits replaces the per-key limits at runtime. Limiter state is kept:
// requests in flight keep their slots and buckets keep their levels (capped
// by a lower limit). Later schedule entries still apply on top. A negative
// limit acts as 0, unlimited.
func (s *Server) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applySchedule(s.clock.Now())
	s.base, s.limits = l, l
}

// Limits returns the limits in force now.
func (s *Server) Limits() Limits {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applySchedule(s.clock.Now())
	return s.limits
}

// Reset clears the counters and the limiter state, reseeds the random
// source and restarts the schedule, whose changes are undone: the limits
// return to those of the Config or of the last SetLimits. Requests in flight
// finish normally but no longer count. Prometheus metrics are not reset:
// counters are monotonic.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
}

func (s *Server) resetLocked() {
	s.rng = rand.New(rand.NewPCG(uint64(s.cfg.Seed), 0x5eed))
	s.limits = s.base
	s.epoch = time.Time{}
	s.gen++
	s.next = 0
	for _, ks := range s.perKey {
		s.past.add(&ks.counts)
	}
	s.perKey = make(map[string]*keyState)
	s.pastInFlight += s.inFlight
	s.inFlight, s.maxInFlight = 0, 0
	s.calls.reset()
}

// applySchedule applies the schedule entries due at now. The schedule's
// clock starts at the first model request (after New or Reset), so that a
// Server created before a run, or outside a synctest bubble, counts from the
// run's start.
func (s *Server) applySchedule(now time.Time) {
	if s.epoch.IsZero() {
		return
	}
	for s.next < len(s.cfg.Schedule) && now.Sub(s.epoch) >= s.cfg.Schedule[s.next].At {
		s.limits = s.cfg.Schedule[s.next].Limits.Apply(s.limits)
		s.next++
	}
}

func (s *Server) key(name string) *keyState {
	k, ok := s.perKey[name]
	if !ok {
		// Filled in place: a keyLimiter is 2 KiB (ramp's arrays), and
		// *newKeyLimiter() would put a copy in the frame of every caller
		// this is inlined into (admit's grew by 4 KiB).
		k = new(keyState)
		k.lim.ends = make(map[uint64]time.Time)
		s.perKey[name] = k
	}
	return k
}

// newID returns a fresh id with prefix: 22 base62 characters derived from
// the seed and a counter by splitmix64, a bijection, so ids are unique within
// a server and the same from run to run.
func (s *Server) newID(prefix string) string {
	var space [48]byte
	return string(s.appendID(space[:0], prefix, s.seq.Add(1)))
}

// appendID appends the id with prefix of counter value n, as newID makes
// it: a caller that takes n at the moment newID would have can format the
// id later, with other values, in one allocation.
func (s *Server) appendID(b []byte, prefix string, n uint64) []byte {
	x := splitmix64(uint64(s.cfg.Seed) + n)
	b = append(b, prefix...)
	b = append(b, "01"...)
	b = appendBase62(b, x, 11)
	return appendBase62(b, splitmix64(x), 11)
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func appendBase62(b []byte, x uint64, width int) []byte {
	var tmp [11]byte
	for i := width - 1; i >= 0; i-- {
		tmp[i] = base62[x%62]
		x /= 62
	}
	return append(b, tmp[:width]...)
}

// route is one entry of the route table: a path (a gorilla/mux template),
// the methods it answers and its handler.
type route struct {
	path    string
	methods []string
	h       http.Handler
}

// routeTable is the server's one list of routes. The router is built from
// it, the exact paths are dispatched from it (fastRoutes), and a 405's
// Allow header is derived from the router (allowed).
func (s *Server) routeTable() []route {
	post := []string{http.MethodPost}
	t := []route{
		{"/v1/messages", post, s.model(anthropic{})},
		{"/v1/messages/count_tokens", post, http.HandlerFunc(s.countTokens)},
		{"/v1/chat/completions", post, s.model(openai{})},
		{"/v1/responses", post, s.model(responses{})},
	}
	t = append(t, s.modelRoutes()...)
	t = append(t, s.azureRoutes()...) // azure.go
	t = append(t, s.adminRoutes()...)
	probe := []string{http.MethodGet, http.MethodHead}
	return append(t,
		route{"/metrics", []string{http.MethodGet}, s.metricsAuth(s.metrics.handler())},
		route{"/healthz", probe, http.HandlerFunc(s.healthz)},
		route{"/readyz", probe, http.HandlerFunc(s.readyz)},
	)
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

// healthz is the liveness probe: the process serves requests. It needs no
// credential and counts in no statistics.
func (s *Server) healthz(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// readyz is the readiness probe: 200 while the server accepts calls, 503
// from the moment Shutdown or Close is called, so a load balancer stops
// sending calls while the in-flight ones drain.
func (s *Server) readyz(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.draining.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "shutting down\n")
		return
	}
	io.WriteString(w, "ready\n")
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
// Anthropic's.
func wireOf(req *http.Request) wire {
	switch p := req.URL.Path; {
	case strings.HasPrefix(p, "/v1/messages"):
		return anthropic{}
	case strings.HasPrefix(p, "/openai/"): // Azure OpenAI (azure.go)
		return &azure{base: openai{}, version: "v1"}
	case strings.HasPrefix(p, "/v1/chat/"), strings.HasPrefix(p, "/v1/responses"),
		strings.HasPrefix(p, "/v1/completions"), strings.HasPrefix(p, "/v1/embeddings"):
		return openai{}
	}
	if isOpenAIClient(req) {
		return openai{}
	}
	return anthropic{}
}

// isOpenAIClient reports whether req's headers are an OpenAI SDK's: a
// bearer token and neither anthropic-version nor x-api-key (Anthropic's
// SDKs send anthropic-version on every request, with either credential).
func isOpenAIClient(req *http.Request) bool {
	h := req.Header
	return h.Get("Anthropic-Version") == "" && h.Get("X-Api-Key") == "" && strings.HasPrefix(h.Get("Authorization"), "Bearer ")
}

func (s *Server) routeError(w http.ResponseWriter, req *http.Request, status int, msg string) {
	s.writeError(w, wireOf(req), status, apiError{msg: msg})
}

// writeError answers an error in wr's envelope, with a fresh request id and
// the headers wr's API sends on every response.
func (s *Server) writeError(w http.ResponseWriter, wr wire, status int, e apiError) {
	id := s.newID("req_")
	h := w.Header()
	h.Set(wr.requestIDHeader(), id)
	setAPIHeaders(h, wr, 0)
	wr.writeError(w, status, e, id)
}

// Headers the real APIs send on every response (docs/wire.md §1.2, §2.2).
var (
	valueOrganizationID = []string{"5f0c2a49-6d6f-4b63-8b6c-6c6d6f636b6c"} // a fixed, made-up organization
	valueOpenAIVersion  = []string{"2020-10-01"}
)

// setAPIHeaders sets the headers wr's API sends on every response:
// anthropic-organization-id; or openai-version and openai-processing-ms,
// the time the request took until its headers, in milliseconds.
func setAPIHeaders(h http.Header, wr wire, processing time.Duration) {
	if _, ok := wr.(anthropic); ok {
		h["Anthropic-Organization-Id"] = valueOrganizationID
		return
	}
	h["Openai-Version"] = valueOpenAIVersion
	if ms := processing.Milliseconds(); ms > 0 {
		h["Openai-Processing-Ms"] = []string{strconv.FormatInt(ms, 10)}
	} else {
		h["Openai-Processing-Ms"] = valueZero
	}
}

var valueZero = []string{"0"}

// maxHeaderBytes is the configured header limit; hardHeaderBytes is what
// net/http is told, larger, so that requests between the two reach
// limitHeaders and get 431 in their API's envelope. Above the hard limit
// net/http answers a plain 431 itself, which envelopeConn rewrites.
func (s *Server) maxHeaderBytes() int {
	if s.cfg.MaxHeaderBytes > 0 {
		return s.cfg.MaxHeaderBytes
	}
	return DefaultMaxHeaderBytes
}

func (s *Server) hardHeaderBytes() int { return max(1<<20, 2*s.maxHeaderBytes()) }

// headerBytes counts the request line and header lines of req as they were
// sent (give or take the case of names), as net/http counts them.
func headerBytes(req *http.Request) int {
	n := len(req.Method) + 1 + len(req.RequestURI) + 1 + len(req.Proto) + 2
	if req.Host != "" {
		n += len("Host: ") + len(req.Host) + 2
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n + 2
}

// limitHeaders answers 431 request_header_fields_too_large, in the
// envelope of the request's API, to a request whose headers exceed
// MaxHeaderBytes.
func (s *Server) limitHeaders(next http.Handler) http.Handler {
	limit := s.maxHeaderBytes()
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if n := headerBytes(req); n > limit {
			w.Header().Set("Connection", "close")
			s.metrics.request(wireOf(req).name(), http.StatusRequestHeaderFieldsTooLarge, "unauthenticated")
			s.writeError(w, wireOf(req), http.StatusRequestHeaderFieldsTooLarge, apiError{
				msg:  fmt.Sprintf("request headers of %d bytes are above the limit of %d bytes", n, limit),
				code: "request_header_fields_too_large",
			})
			return
		}
		next.ServeHTTP(w, req)
	})
}

// goPlain431 and goPlain400 are what net/http writes, before any handler
// runs, for headers above http.Server.MaxHeaderBytes and for requests it
// cannot parse (net/http/server.go, conn.serve).
const (
	goPlainHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	goPlain431     = "HTTP/1.1 431 Request Header Fields Too Large" + goPlainHeaders + "431 Request Header Fields Too Large"
	goPlain400     = "HTTP/1.1 400 Bad Request" + goPlainHeaders + "400 Bad Request"
)

// envelopeListener wraps the connections Serve accepts in envelopeConn.
type envelopeListener struct {
	net.Listener
	s     *Server
	stamp bool // connections read receive times (Server.envelope)
}

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	ec := &envelopeConn{Conn: c, s: l.s}
	if l.stamp {
		ec.stampArrivals()
	}
	return ec, nil
}

// envelopeConn replaces net/http's plain-text 431 and 400, written before
// the request reaches a handler (so the API it was for is unknown), by a
// JSON error that both SDK families parse in full: Anthropic's envelope
// with OpenAI's message, type, param and code inside "error". It also
// reads the kernel's receive times of the request bytes, where it can
// (arrival.go).
type envelopeConn struct {
	net.Conn
	s  *Server
	rx *rxStamps // nil: receive times are not read
}

func (c *envelopeConn) Read(p []byte) (int, error) {
	if c.rx != nil {
		return c.rx.read(c.Conn, p)
	}
	return c.Conn.Read(p)
}

func (c *envelopeConn) Write(b []byte) (int, error) {
	if len(b) >= len(goPlain400) && b[0] == 'H' && b[9] == '4' {
		var status int
		var msg, code string
		switch string(b) {
		case goPlain431:
			status, code = http.StatusRequestHeaderFieldsTooLarge, "request_header_fields_too_large"
			msg = fmt.Sprintf("request headers are above the limit of %d bytes", c.s.maxHeaderBytes())
		case goPlain400:
			status, code, msg = http.StatusBadRequest, "invalid_request", "malformed HTTP request"
		}
		if status != 0 {
			if _, err := c.Conn.Write(c.s.plainError(status, msg, code)); err != nil {
				return 0, err
			}
			return len(b), nil
		}
	}
	return c.Conn.Write(b)
}

// CloseWrite passes net/http's half-close through, as it does on a TCP
// connection after an error.
func (c *envelopeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// plainError is a whole HTTP/1.1 error response with the merged envelope.
func (s *Server) plainError(status int, msg, code string) []byte {
	id := s.newID("req_")
	body, _ := json.Marshal(map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": "invalid_request_error", "message": msg, "param": nil, "code": code},
		"request_id": id,
	})
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRequest-Id: %s\r\nX-Request-Id: %s\r\nConnection: close\r\n\r\n",
		status, http.StatusText(status), len(body), id, id)
	return append([]byte(head), body...)
}

// headerWriter remembers whether the response has started, so a recovered
// panic knows whether it can still answer 500.
type headerWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *headerWriter) WriteHeader(code int) {
	if code >= 200 {
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *headerWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *headerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// pastHeader is w once its response has started: a headerWriter has
// nothing left to remember then, so a stream's writes skip it.
func pastHeader(w http.ResponseWriter) http.ResponseWriter {
	if hw, ok := w.(*headerWriter); ok && hw.wrote {
		return hw.ResponseWriter
	}
	return w
}

// recoverPanics answers a panicking handler with 500 api_error and logs the
// panic; a panic after the response started aborts the connection instead.
// http.ErrAbortHandler passes through: it is how handlers cut connections.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hw := &headerWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { // compared as net/http compares it
				panic(v)
			}
			s.log.Error("mock: handler panic", "method", req.Method, "path", req.URL.Path, "panic", v, "stack", string(debug.Stack()))
			s.metrics.panics.Inc()
			if hw.wrote {
				panic(http.ErrAbortHandler)
			}
			s.routeError(hw, req, http.StatusInternalServerError, "internal server error")
		}()
		next.ServeHTTP(hw, req)
	})
}

// authenticate returns the API key of req, or ok false when keys are
// configured and req carries none of them. Anthropic accepts x-api-key or a
// bearer token, OpenAI a bearer token.
func (s *Server) authenticate(req *http.Request, wr wire) (key string, ok bool, why string) {
	if _, ok := wr.(*azure); ok {
		return s.authenticateAzure(req) // azure.go
	}
	if len(s.keys) == 0 {
		return "", true, ""
	}
	if !isOpenAI(wr) {
		if k := req.Header.Get("X-Api-Key"); k != "" {
			if s.keys[k] {
				return k, true, ""
			}
			return "", false, "invalid x-api-key"
		}
	}
	auth := req.Header.Get("Authorization")
	const bearer = "Bearer "
	if len(auth) > len(bearer) && auth[:len(bearer)] == bearer {
		if k := auth[len(bearer):]; s.keys[k] {
			return k, true, ""
		}
		return "", false, "invalid API key in Authorization: Bearer"
	}
	if isOpenAI(wr) {
		return "", false, "missing API key: send Authorization: Bearer KEY"
	}
	return "", false, "x-api-key header is required"
}

// BodyTimeout is how long a client has to send its request body once the
// headers are read; a slower body gets 400. (ReadHeaderTimeout bounds the
// headers; there is no timeout on the response, which may stream for
// minutes.)
const BodyTimeout = 30 * time.Second

// readBody reads at most MaxBodyBytes within BodyTimeout, holding its
// share of the decode budget (Config.DecodeBudget) until the caller calls
// release, once it has decoded the body. A body with a Content-Length
// takes that many bytes of the budget before it is read, waiting for them
// if other bodies hold the budget; a body without one takes the budget as
// it grows. Waiting longer than BodyTimeout is a 429 with retry-after. The
// buffer grows as bytes arrive: a Content-Length is trusted only up to
// 1 MiB for the first allocation, so a client announcing 32 MB and sending
// nothing holds budget but no memory. The caller gives held back with
// s.budget.release once it has decoded the body; on error, held is 0.
//
// buf, when it has room, holds the body: a buffer of an earlier request
// (bodyBufs), which nothing may read once the body is decoded. body is then
// buf with its capacity cut to the first read's size, as a new buffer's is.
func (s *Server) readBody(w http.ResponseWriter, req *http.Request, buf []byte) (body []byte, held int64, status int, err error) {
	cl := req.ContentLength
	if cl > MaxBodyBytes {
		return nil, 0, http.StatusRequestEntityTooLarge, fmt.Errorf("request body of %d bytes is above the limit of %d bytes", cl, MaxBodyBytes)
	}
	rc := readDeadliner(w)
	deadline := rc != nil && rc.SetReadDeadline(time.Now().Add(BodyTimeout)) == nil
	take := func(n int64) error {
		if err := s.budget.acquire(req.Context(), n); err != nil {
			return err
		}
		held += n
		return nil
	}
	fail := func(st int, e error) ([]byte, int64, int, error) {
		s.budget.release(held)
		// The deadline stays: net/http then gives up draining the rest of
		// the body at once and closes the connection.
		w.Header().Set("Connection", "close")
		return nil, 0, st, e
	}
	busy := func() ([]byte, int64, int, error) {
		w.Header().Set("Retry-After", "1")
		return fail(http.StatusTooManyRequests, fmt.Errorf("server busy: request bodies being decoded hold the decode budget of %d bytes (decode_budget); retry", s.budget.size))
	}

	size := int64(64 << 10)
	if cl >= 0 {
		if err := take(cl); err != nil {
			return busy()
		}
		size = min(cl, 1<<20)
	} else if err := take(size); err != nil {
		return busy()
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, 0, size)
	}
	buf = buf[:0:size] // a read never passes the Content-Length
	for cl < 0 || int64(len(buf)) < cl {
		if len(buf) == cap(buf) {
			next := int64(2 * cap(buf))
			if cl >= 0 {
				next = min(next, cl)
			} else {
				next = min(next, MaxBodyBytes+1) // one more byte tells a body that is too large
				if int64(len(buf)) > MaxBodyBytes {
					return fail(http.StatusRequestEntityTooLarge, fmt.Errorf("request body is above the limit of %d bytes", MaxBodyBytes))
				}
				if err := take(min(next, MaxBodyBytes) - held); err != nil { // the extra byte is not charged
					return busy()
				}
			}
			buf = append(make([]byte, 0, next), buf...)
		}
		n, rerr := req.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			if cl >= 0 && int64(len(buf)) < cl {
				return fail(http.StatusBadRequest, fmt.Errorf("reading request body: %w", io.ErrUnexpectedEOF))
			}
			break
		}
		if rerr != nil {
			if errors.Is(rerr, os.ErrDeadlineExceeded) {
				return fail(http.StatusBadRequest, fmt.Errorf("request body not received within %v", BodyTimeout))
			}
			return fail(http.StatusBadRequest, fmt.Errorf("reading request body: %w", rerr))
		}
	}
	if deadline {
		rc.SetReadDeadline(time.Time{})
	}
	return buf, held, 0, nil
}

// decodeBudget bounds the request body bytes held by the requests being
// read and decoded at once (Config.DecodeBudget). When a burst of large
// bodies ends, it gives the memory they used back to the operating system:
// the runtime would otherwise keep the heap it grew to for minutes.
type decodeBudget struct {
	size     int64
	sem      *semaphore.Weighted
	inUse    atomic.Int64
	large    atomic.Int64 // bytes of bodies of at least 1 MiB since the memory was last given back
	freeing  atomic.Bool
	lastFree atomic.Int64 // unix nanoseconds
}

func newDecodeBudget(size int64) *decodeBudget {
	return &decodeBudget{size: size, sem: semaphore.NewWeighted(size)}
}

// acquire takes n bytes of the budget, waiting for them up to BodyTimeout
// or until ctx ends.
func (b *decodeBudget) acquire(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	if !b.sem.TryAcquire(n) {
		ctx, cancel := context.WithTimeout(ctx, BodyTimeout)
		defer cancel()
		if err := b.sem.Acquire(ctx, n); err != nil {
			return err
		}
	}
	b.inUse.Add(n)
	return nil
}

// freeAfter is how many bytes of large bodies must have passed, and
// freeEvery how long since the last time, before a burst's end gives
// memory back.
const (
	freeAfter = 64 << 20
	freeEvery = time.Second
)

func (b *decodeBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.sem.Release(n)
	if n >= 1<<20 {
		b.large.Add(n)
	}
	if b.inUse.Add(-n) != 0 || b.large.Load() < freeAfter || time.Now().UnixNano()-b.lastFree.Load() < int64(freeEvery) {
		return
	}
	if b.freeing.CompareAndSwap(false, true) {
		b.large.Store(0)
		b.lastFree.Store(time.Now().UnixNano())
		go func() {
			defer b.freeing.Store(false)
			debug.FreeOSMemory()
		}()
	}
}

// readDeadliner finds the SetReadDeadline of w or of the writers it wraps,
// as http.ResponseController does, without allocating a controller.
func readDeadliner(w http.ResponseWriter) interface{ SetReadDeadline(time.Time) error } {
	for {
		switch t := w.(type) {
		case interface{ SetReadDeadline(time.Time) error }:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}

// countTokens answers POST /v1/messages/count_tokens with the estimate
// that usage.input_tokens uses.
func (s *Server) countTokens(w http.ResponseWriter, req *http.Request) {
	wr := anthropic{}
	id := s.newID("req_")
	w.Header().Set(wr.requestIDHeader(), id)
	setAPIHeaders(w.Header(), wr, 0)
	if _, ok, why := s.authenticate(req, wr); !ok {
		wr.writeError(w, http.StatusUnauthorized, apiError{msg: why}, id)
		return
	}
	if e := s.checkVersion(req, wr); e != nil {
		wr.writeError(w, http.StatusBadRequest, *e, id)
		return
	}
	body, held, status, err := s.readBody(w, req, nil)
	var c call
	if err == nil {
		err = decodeAnthropic(body, false, &c)
		status = http.StatusBadRequest
		if err == nil {
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

// attemptIndex is X-Stainless-Retry-Count, or -1 when absent or invalid.
func attemptIndex(req *http.Request) int {
	v := req.Header.Get("X-Stainless-Retry-Count")
	if v == "" {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
