package mock

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/wire"
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
	formatModels                  map[string]map[string]bool // by wire.Spec.Catalog (formatModelIndex)
	handler                       http.Handler
	http                          *http.Server
	metrics                       *metrics
	calls                         *callLog // attempts grouped into logical calls (calls.go)
	budget                        *decodeBudget
	seq                           atomic.Uint64 // request counter, for ids
	text                          []string      // Output.Text's tokens, JSON-escaped; nil for the filler
	// env is what the formats' Route.Resolve read (formatEnv, config.go), and
	// deploymentPools the limits of the pools its deployments name.
	env             *wire.Env
	deploymentPools map[string]Limits
	// longScope words a long-context limit's 429 (Config.LongContext).
	longScope string
	// storeDown: Config.Store failed last; its outage is logged once.
	storeDown atomic.Bool
	// draining: Shutdown or Close was called; /readyz answers 503.
	draining atomic.Bool

	mu      sync.Mutex
	rng     *rand.Rand
	base    Limits // Config.Limits or the last SetLimits
	limits  Limits // base with the schedule entries due so far
	latency Latency
	faults  Faults
	quota   Quota             // Config.Quota or the last SetQuota
	pools   map[string]Limits // Config.LimitsByModel or the last SetLimitsByModel; never changed in place
	epoch   time.Time         // when the schedule started: the first model request; zero before
	next    int               // the next schedule entry to apply
	perKey  map[string]*keyState
	// org is Config.Organization's one instance, shared by every key; a
	// new one at each Reset (requests admitted before release the old).
	org      *admission.Key
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

	batch batchStore // the batch APIs' batches and files (batches.go)
}

// keyState is everything the server tracks per API key.
type keyState struct {
	lim    admission.Key
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
	cfg.Batches.OpenAI.EnqueuedTokens = maps.Clone(cfg.Batches.OpenAI.EnqueuedTokens)
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
	s.calls.setCap(s.clock.Now(), s.limits.MaxConcurrent)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Output.Text != "" {
		s.text = wire.TextTokens(cfg.Output.Text)
	}
	for _, k := range cfg.APIKeys {
		s.keys[k] = true
		s.labels[k] = Fingerprint(k)
	}
	s.anthropicModels = modelIndex(anthropicCatalog, cfg.Models.Extra)
	s.openaiModels = modelIndex(openaiCatalog, cfg.Models.Extra)
	s.formatModels = formatModelIndex(cfg.Models.Extra)
	s.env, s.deploymentPools = s.formatEnv()
	s.longScope = fmt.Sprintf("this API key's long-context requests (above %d input tokens)", cfg.LongContext.ThresholdTokens)
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
	now := s.clock.Now()
	s.applySchedule(now)
	s.base, s.limits = l, l
	s.calls.setCap(now, l.MaxConcurrent)
}

// Quota returns the per-key quota in force.
func (s *Server) Quota() Quota {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quota
}

// SetQuota replaces the per-key quota at runtime. What each key has used
// so far is kept: raising a spent quota lets its key through again.
func (s *Server) SetQuota(q Quota) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quota = q
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
// finish normally but no longer count. The batch APIs' batches and files
// are forgotten, with their queue and BatchStats. Prometheus metrics are
// not reset: counters are monotonic.
func (s *Server) Reset() {
	s.batch.reset() // before s.mu: the batch store's lock comes first
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
	s.org = nil
	if s.cfg.Organization.Limits != (Limits{}) {
		s.org = admission.NewKey()
	}
	s.pastInFlight += s.inFlight
	s.inFlight, s.maxInFlight = 0, 0
	s.calls.reset()
	s.calls.setCap(s.clock.Now(), s.limits.MaxConcurrent)
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
		// The report card's idle capacity, under the new cap from the
		// entry's time: no request was admitted under the old one since.
		s.calls.setCap(s.epoch.Add(s.cfg.Schedule[s.next].At), s.limits.MaxConcurrent)
		s.next++
	}
}

func (s *Server) key(name string) *keyState {
	k, ok := s.perKey[name]
	if !ok {
		// Filled in place: an admission.Key is 2 KiB (its ramp's arrays),
		// and a copy of one would sit in the frame of every caller this is
		// inlined into (admit's grew by 4 KiB).
		k = new(keyState)
		s.perKey[name] = k
	}
	return k
}
