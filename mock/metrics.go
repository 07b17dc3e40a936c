package mock

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the Prometheus metrics of one Server, registered in a registry
// of its own (not the global one) so that many servers can coexist in one
// process.
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	inFlight     prometheus.Gauge
	rejections   *prometheus.CounterVec
	faults       *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	inputTokens  prometheus.Counter // tokens{direction="input"}
	outputTokens prometheus.Counter // tokens{direction="output"}
	duration     *prometheus.HistogramVec
	panics       prometheus.Counter

	mu    sync.RWMutex
	cache map[seriesKey]series
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mockllm_requests_total",
			Help: "Model requests by API, HTTP status (0: connection reset) and API key.",
		}, []string{"api", "status", "key"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mockllm_in_flight_requests",
			Help: "Admitted requests whose response has not ended.",
		}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mockllm_rejections_total",
			Help: "Requests rejected by limit: max_concurrent, rpm, itpm, otpm, tpm, script, decode_budget (429) or capacity (529/503).",
		}, []string{"limit"}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mockllm_faults_total",
			Help: "Injected faults by kind.",
		}, []string{"fault"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mockllm_tokens_total",
			Help: "Tokens of admitted requests by direction (input, output).",
		}, []string{"direction"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mockllm_request_duration_seconds",
			Help:    "Time from admission to the end of admitted responses, by API and status.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms to about 41 s
		}, []string{"api", "status"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mockllm_handler_panics_total",
			Help: "Panics recovered in handlers.",
		}),
	}
	m.inputTokens = m.tokens.WithLabelValues("input")
	m.outputTokens = m.tokens.WithLabelValues("output")
	m.reg.MustRegister(m.requests, m.inFlight, m.rejections, m.faults, m.tokens, m.duration, m.panics)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) request(api string, status int, key string) {
	m.series(api, status, key).requests.Inc()
}

func (m *metrics) observe(api string, status int, key string, d time.Duration) {
	c := m.series(api, status, key)
	c.requests.Inc()
	c.duration.Observe(d.Seconds())
}

// seriesKey and series name the request counter and duration histogram of
// one (api, status, key). The few there are are cached: looking them up in
// the vecs hashes the label values and formats the status on every request.
type seriesKey struct {
	api    string
	status int
	key    string
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func (m *metrics) series(api string, status int, key string) series {
	k := seriesKey{api, status, key}
	m.mu.RLock()
	c, ok := m.cache[k]
	m.mu.RUnlock()
	if ok {
		return c
	}
	code := strconv.Itoa(status)
	c = series{m.requests.WithLabelValues(api, code, key), m.duration.WithLabelValues(api, code)}
	m.mu.Lock()
	if m.cache == nil {
		m.cache = make(map[seriesKey]series)
	}
	m.cache[k] = c
	m.mu.Unlock()
	return c
}
