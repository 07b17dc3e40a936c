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
// process. The request counters of Stats are not kept here: the Server's
// Collect reads them at scrape time. What is here has no copy in Stats:
// requests by API and status, durations, panics.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	panics   prometheus.Counter

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
	m.reg.MustRegister(m.requests, m.duration, m.panics)
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

// The Server's counters as Prometheus metrics, read at scrape time from the
// counts (stats.go) since the server started.
var (
	descInFlight = prometheus.NewDesc("mockllm_in_flight_requests",
		"Admitted requests whose response has not ended.", nil, nil)
	descRejections = prometheus.NewDesc("mockllm_rejections_total",
		"Requests rejected by limit: max_concurrent, rpm, itpm, otpm, tpm, script, decode_budget (429) or capacity (529/503).", []string{"limit"}, nil)
	descQuota = prometheus.NewDesc("mockllm_quota_exceeded_total",
		"Requests refused because the API key's quota (a spend cap, not a rate limit) is spent, by dimension: requests, input_tokens, output_tokens.", []string{"dimension"}, nil)
	descFaults = prometheus.NewDesc("mockllm_faults_total",
		"Injected faults by kind.", []string{"fault"}, nil)
	descTokens = prometheus.NewDesc("mockllm_tokens_total",
		"Tokens of admitted requests by direction (input, output).", []string{"direction"}, nil)
	descMerged = prometheus.NewDesc("mockllm_stream_merged_events_total",
		"Stream events that carried several tokens because the stream fell behind its schedule: the tokens due by then go out together.", nil, nil)
)

// serverCollector exports a Server's counts.
type serverCollector struct{ s *Server }

// Describe implements prometheus.Collector.
func (c serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInFlight, descRejections, descQuota, descFaults, descTokens, descMerged} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	s.mu.Lock()
	sum := s.sumLocked(true)
	inFlight := s.inFlight + s.pastInFlight
	s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(inFlight))
	for limit, n := range sum.throttledBy {
		ch <- prometheus.MustNewConstMetric(descRejections, prometheus.CounterValue, float64(n), limit)
	}
	if sum.capacity > 0 {
		ch <- prometheus.MustNewConstMetric(descRejections, prometheus.CounterValue, float64(sum.capacity), limitCapacity)
	}
	for dim, n := range sum.quotaExceededBy {
		ch <- prometheus.MustNewConstMetric(descQuota, prometheus.CounterValue, float64(n), dim)
	}
	for fault, n := range sum.faults {
		ch <- prometheus.MustNewConstMetric(descFaults, prometheus.CounterValue, float64(n), fault)
	}
	ch <- prometheus.MustNewConstMetric(descTokens, prometheus.CounterValue, float64(sum.inputTokens), "input")
	ch <- prometheus.MustNewConstMetric(descTokens, prometheus.CounterValue, float64(sum.outputTokens), "output")
	ch <- prometheus.MustNewConstMetric(descMerged, prometheus.CounterValue, float64(sum.mergedEvents))
}
