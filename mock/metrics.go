package mock

import (
	"net/http"
	"strconv"
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
	duration     *prometheus.HistogramVec
	earlyRetries prometheus.Counter
	panics       prometheus.Counter
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
			Help: "Requests rejected by limit: max_concurrent, rpm, itpm, otpm, tpm, script (429) or capacity (529/503).",
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
		earlyRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mockllm_early_retries_total",
			Help: "Retries that arrived before the retry-after they were given.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mockllm_handler_panics_total",
			Help: "Panics recovered in handlers.",
		}),
	}
	m.reg.MustRegister(m.requests, m.inFlight, m.rejections, m.faults, m.tokens, m.duration, m.earlyRetries, m.panics)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) request(api string, status int, key string) {
	m.requests.WithLabelValues(api, strconv.Itoa(status), key).Inc()
}

func (m *metrics) observe(api string, status int, key string, d time.Duration) {
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(api, code, key).Inc()
	m.duration.WithLabelValues(api, code).Observe(d.Seconds())
}
