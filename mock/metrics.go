package mock

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// metrics are the Prometheus metrics of one Server, kept per Server so that
// many servers can coexist in one process.
//
// They are written in the Prometheus text exposition format (version 0.0.4)
// by the small collector below rather than by client_golang: the module's
// go.sum lacks client_golang's dependencies (beorn7/perks, client_model,
// common, procfs, protobuf), and go.sum is not this package's to change. The
// names, labels and types are those a client_golang registry would expose,
// so switching is local to this file.
type metrics struct {
	requests     *family
	inFlight     *family
	rejections   *family
	faults       *family
	tokens       *family
	duration     *family
	earlyRetries *family
	panics       *family
	all          []*family
}

// durationBuckets are the upper bounds of the latency histogram: 5 ms
// doubling to about 41 s.
var durationBuckets = func() []float64 {
	b := make([]float64, 14)
	for i := range b {
		b[i] = 0.005 * math.Pow(2, float64(i))
	}
	return b
}()

func newMetrics() *metrics {
	m := &metrics{
		requests:     newFamily("mockllm_requests_total", "counter", "Model requests by API, HTTP status (0: connection reset) and API key.", nil, "api", "status", "key"),
		inFlight:     newFamily("mockllm_in_flight_requests", "gauge", "Admitted requests whose response has not ended.", nil),
		rejections:   newFamily("mockllm_rejections_total", "counter", "Requests rejected by limit: max_concurrent, rpm, itpm, otpm, tpm, script (429) or capacity (529/503).", nil, "limit"),
		faults:       newFamily("mockllm_faults_total", "counter", "Injected faults by kind.", nil, "fault"),
		tokens:       newFamily("mockllm_tokens_total", "counter", "Tokens of admitted requests by direction (input, output).", nil, "direction"),
		duration:     newFamily("mockllm_request_duration_seconds", "histogram", "Time from admission to the end of admitted responses, by API and status.", durationBuckets, "api", "status"),
		earlyRetries: newFamily("mockllm_early_retries_total", "counter", "Retries that arrived before the retry-after they were given.", nil),
		panics:       newFamily("mockllm_handler_panics_total", "counter", "Panics recovered in handlers.", nil),
	}
	m.all = []*family{m.requests, m.inFlight, m.rejections, m.faults, m.tokens, m.duration, m.earlyRetries, m.panics}
	return m
}

func (m *metrics) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var b strings.Builder
		for _, f := range m.all {
			f.write(&b)
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write([]byte(b.String()))
	})
}

func (m *metrics) request(api string, status int, key string) {
	m.requests.with(api, strconv.Itoa(status), key).add(1)
}

func (m *metrics) observe(api string, status int, key string, d time.Duration) {
	code := strconv.Itoa(status)
	m.requests.with(api, code, key).add(1)
	m.duration.with(api, code).observe(d.Seconds())
}

// family is one metric with its label sets.
type family struct {
	name, kind, help string
	labels           []string
	buckets          []float64 // histograms only

	mu     sync.RWMutex
	series map[labelValues]*series
}

// labelValues are the label values of a series; families have at most
// three labels. An array key makes lookups allocation-free.
type labelValues [3]string

func newFamily(name, kind, help string, buckets []float64, labels ...string) *family {
	if len(labels) > len(labelValues{}) {
		panic("mock: too many labels for " + name)
	}
	return &family{name: name, kind: kind, help: help, labels: labels, buckets: buckets, series: make(map[labelValues]*series)}
}

// series is one label set of a family. Counters and gauges use value;
// histograms use counts (cumulative at write time), sum and count.
type series struct {
	values []string
	bounds []float64 // histogram bucket bounds
	value  atomicFloat
	mu     sync.Mutex
	counts []uint64
	sum    float64
	count  uint64
}

type atomicFloat struct{ bits atomic.Uint64 }

func (a *atomicFloat) add(d float64) {
	for {
		old := a.bits.Load()
		if a.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

func (a *atomicFloat) load() float64 { return math.Float64frombits(a.bits.Load()) }

func (f *family) with(values ...string) *series {
	var k labelValues
	copy(k[:], values)
	f.mu.RLock()
	s, ok := f.series[k]
	f.mu.RUnlock()
	if ok {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok = f.series[k]; !ok {
		s = &series{values: slices.Clone(values), bounds: f.buckets, counts: make([]uint64, len(f.buckets))}
		f.series[k] = s
	}
	return s
}

func (s *series) add(d float64) { s.value.add(d) }

func (s *series) observe(v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum += v
	s.count++
	for i, le := range s.bounds {
		if v <= le { // buckets are cumulative
			s.counts[i]++
		}
	}
}

func (f *family) write(b *strings.Builder) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.kind)
	f.mu.RLock()
	keys := make([]labelValues, 0, len(f.series))
	for k := range f.series {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b labelValues) int { return slices.Compare(a[:], b[:]) })
	list := make([]*series, len(keys))
	for i, k := range keys {
		list[i] = f.series[k]
	}
	f.mu.RUnlock()
	if len(f.labels) == 0 && len(list) == 0 {
		list = append(list, f.with())
	}
	for _, s := range list {
		if f.kind != "histogram" {
			fmt.Fprintf(b, "%s%s %s\n", f.name, labelPairs(f.labels, s.values, ""), formatFloat(s.value.load()))
			continue
		}
		s.mu.Lock()
		for i, le := range f.buckets {
			fmt.Fprintf(b, "%s_bucket%s %d\n", f.name, labelPairs(f.labels, s.values, formatFloat(le)), s.counts[i])
		}
		fmt.Fprintf(b, "%s_bucket%s %d\n", f.name, labelPairs(f.labels, s.values, "+Inf"), s.count)
		fmt.Fprintf(b, "%s_sum%s %s\n", f.name, labelPairs(f.labels, s.values, ""), formatFloat(s.sum))
		fmt.Fprintf(b, "%s_count%s %d\n", f.name, labelPairs(f.labels, s.values, ""), s.count)
		s.mu.Unlock()
	}
}

// labelEscaper escapes a label value as the text format requires.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func labelPairs(names, values []string, le string) string {
	if len(names) == 0 && le == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=\"%s\"", n, labelEscaper.Replace(values[i]))
	}
	if le != "" {
		if len(names) > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "le=%q", le)
	}
	b.WriteByte('}')
	return b.String()
}

func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
