package mock

import (
	"hash/maphash"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/internal/durhist"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// CallStats is the server's account of the traffic it received, grouped into
// logical calls: what a client made of its items, measured from the server
// side with no help from the client. Server.Calls returns it, /_admin/stats
// serves it under "calls", /metrics exports its counters, and loadgen builds
// a command row from it.
//
// How attempts are grouped into calls, and which calls count as failed, is the
// package documentation's "Call accounting".
type CallStats struct {
	Calls     int64 `json:"calls"`     // logical calls
	Completed int64 `json:"completed"` // calls with a 2xx
	Failed    int64 `json:"failed"`    // calls with no 2xx and no attempt in flight
	Attempts  int64 `json:"attempts"`  // attempts
	Throttled int64 `json:"throttled"` // 429s for rate limits
	// ThrottledBy counts 429s by the limit that refused them (max_concurrent,
	// rpm, itpm, otpm, tpm, acceleration, script, decode_budget).
	ThrottledBy map[string]int64 `json:"throttled_by,omitempty"`
	// QuotaExceeded counts 429s for a spent quota (Config.Quota): a spend
	// cap, not a rate limit, so Throttled, ThrottledBy, ThrottledByAttempt
	// and the timeline's throttles leave them out, as Stats does.
	QuotaExceeded int64 `json:"quota_exceeded"`
	Overloaded    int64 `json:"overloaded"`    // 529 (Anthropic) and 503 (OpenAI)
	ServerErrors  int64 `json:"server_errors"` // other 5xx
	// Errors counts other failed attempts: 4xx other than 429, connection
	// resets and cut streams (status 0), clients gone before the end (499).
	Errors int64 `json:"errors"`

	AttemptsPerCall    float64 `json:"attempts_per_call"`    // attempts / completed
	ThrottledByAttempt []int64 `json:"throttled_by_attempt"` // [i] = 429s on a call's attempt i+1; the last of MaxAttemptIndex counts the rest
	MaxAttempts        int     `json:"max_attempts"`         // most attempts one call took
	// EarlyRetries counts attempts that arrived before the retry-after their
	// call's previous attempt was given.
	EarlyRetries int64 `json:"early_retries"`
	// PeakConcurrency is the most attempts in flight at once; InFlight is
	// how many are in flight now.
	PeakConcurrency int `json:"peak_concurrency"`
	InFlight        int `json:"in_flight"`

	// Card is how the client behaved, as loadgen's report card judges it
	// (docs/loadgen.md, "The report card").
	Card ReportCard `json:"card"`

	// First is the first attempt's arrival, Last the end of the last attempt
	// that ended; Seconds is the time between them.
	First   time.Time `json:"first,omitzero"`
	Last    time.Time `json:"last,omitzero"`
	Seconds float64   `json:"seconds"`

	// Latency is the attempts' duration (arrival to answer), in seconds.
	Latency Percentiles `json:"latency"`

	// Timeline is the traffic as the server saw it, from First.
	Timeline CallTimeline `json:"timeline"`
}

// Percentiles summarises a latency distribution, in seconds. P50, P90 and
// P99 come from an HdrHistogram (3 significant digits); Max and Mean are
// exact.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

// CallTimeline samples the traffic at a fixed resolution. It starts at
// CallResolution and doubles whenever it would exceed MaxCallPoints points,
// so its memory is bounded however long the server runs.
type CallTimeline struct {
	ResolutionSeconds float64     `json:"resolution_seconds"`
	Points            []CallPoint `json:"points"`
}

// CallPoint is one interval of the timeline: T is its end, in seconds since
// CallStats.First; InFlight is the attempts in flight at its end; the rates
// are per second over the interval.
type CallPoint struct {
	T               float64 `json:"t"`
	InFlight        int     `json:"in_flight"`
	CompletionsRate float64 `json:"completions_per_second"`
	ThrottlesRate   float64 `json:"throttles_per_second"`
}

// Bounds of the call accounting's memory.
const (
	// MaxOpenCalls is how many failed calls are remembered for a later
	// retry to join.
	MaxOpenCalls = 1 << 16
	// CallResolution is the timeline's initial resolution.
	CallResolution = 100 * time.Millisecond
	// MaxCallPoints bounds the timeline's points.
	MaxCallPoints = 4096
	// MaxAttemptIndex bounds ThrottledByAttempt: 429s on attempts beyond it
	// are counted in its last entry.
	MaxAttemptIndex = 100
)

// callAttempt is one attempt in flight. It lives in the exchange (no allocation
// of its own) from arrive to end.
type callAttempt struct {
	fp  uint64
	key string
	kc  *keyCalls // the key's account
	// scopes are the concurrency caps it holds a slot of (card.go:
	// callLog.place), innermost first; nil until it reaches admission.
	scopes  [3]*cardScope
	call    *openCall // the call it retries; nil for a new call
	arrival time.Time
	gen     uint64 // callLog.gen at arrival; 0: not counted
	n       int    // 1-based attempt number within its call
}

// openCall is a call that has not succeeded and has no attempt in flight:
// waiting for a retry, or given up on.
type openCall struct {
	gate     time.Time // arrival before this is an early retry
	attempts int
	next     *openCall  // the next open call of the same fingerprint
	last     answerKind // how its last attempt was answered
	refused  bool       // an attempt got a 429 for a rate limit, or a 529/503
}

// callCounts are the counters of a CallStats since the last Reset. /metrics,
// whose counters never go down, adds what earlier generations counted
// (callLog.past, folded in by reset).
type callCounts struct {
	calls, completed, busy                int64 // busy: calls with an attempt in flight
	attempts, throttled, overloaded, s5xx int64
	errors, early, quota                  int64
	throttledBy                           map[string]int64
	throttledByAttempt                    []int64
	maxAttempts, peak, inFlight           int

	// The report card's counters (card.go); keys holds each API key's
	// own concurrency cap and retry wave, scopes the keys' instances of
	// pools and long-context limits, org the organization's cap.
	card     cardCounts
	keys     map[string]*keyCalls
	scopes   map[string]*cardScope
	org      *cardScope
	capLimit int // the key's concurrency cap now (Limits.MaxConcurrent); 0: none

	latency durhist.Histogram // Ceiling callHistMax; set by reset

	first, last time.Time
	timelineRes time.Duration
	points      []callTick

	open      map[uint64]*openCall // failed calls a retry may join, by fingerprint
	openCalls int
}

// callTick is one timeline interval while it is being counted.
type callTick struct {
	inFlight              int
	completions, throttle int64
}

// callLog is the Server's call accounting. Its lock is taken after the
// Server's (Stats and Reset hold s.mu), never before.
type callLog struct {
	seed     maphash.Seed
	clock    clock.Clock // the Server's
	disabled bool        // set only by benchmarks, before serving

	mu   sync.Mutex
	gen  uint64 // incremented by reset; attempts of an older generation end uncounted
	cur  callCounts
	past pastCalls
}

// pastCalls is what the generations before the last reset counted, of the
// counters /metrics exports.
type pastCalls struct {
	calls, completed, early int64
	throttledByAttempt      []int64
	peak                    int
}

// fold adds c's exported counters to p.
func (p *pastCalls) fold(c *callCounts) {
	p.calls += c.calls
	p.completed += c.completed
	p.early += c.early
	for i, n := range c.throttledByAttempt {
		for len(p.throttledByAttempt) <= i {
			p.throttledByAttempt = append(p.throttledByAttempt, 0)
		}
		p.throttledByAttempt[i] += n
	}
	p.peak = max(p.peak, c.peak)
}

func newCallLog() *callLog {
	l := &callLog{seed: maphash.MakeSeed(), clock: clock.Real}
	l.reset()
	return l
}

// reset starts a new account; attempts in flight end uncounted.
func (l *callLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	l.past.fold(&l.cur)
	l.cur = callCounts{timelineRes: CallResolution, capLimit: l.cur.capLimit, latency: durhist.Histogram{Ceiling: callHistMax}}
}

// callHistMax is the latency histogram's ceiling (from durhist.Unit, 1µs).
const callHistMax = time.Hour

// arrive records the arrival of an attempt by key with body, in wr's
// format, and fills a.
func (l *callLog) arrive(a *callAttempt, req *http.Request, wr wire.Format, key string, body []byte) {
	if l.disabled {
		return
	}
	retry := attemptIndex(req, wr)
	var h maphash.Hash
	h.SetSeed(l.seed)
	h.WriteString(key)
	if idem := req.Header.Get("Idempotency-Key"); idem != "" {
		h.WriteByte(1)
		h.WriteString(idem)
	} else {
		h.WriteByte(0)
		h.Write(body)
	}
	now := l.clock.Now()
	*a = callAttempt{fp: h.Sum64(), key: key, arrival: now}

	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.cur
	a.gen = l.gen
	if c.first.IsZero() {
		c.first = now
	}
	a.kc = c.keyOf(key)
	if retry != 0 {
		if oc := c.open[a.fp]; oc != nil {
			if oc.next == nil {
				delete(c.open, a.fp)
			} else {
				c.open[a.fp] = oc.next
			}
			c.openCalls--
			oc.next = nil
			a.call = oc
			if now.Before(oc.gate) {
				c.early++
				a.kc.early++
			}
			c.card.retry(a.kc, oc, now)
		}
	}
	if a.call == nil {
		c.calls++
		a.n = 1
	} else {
		a.n = a.call.attempts + 1
	}
	c.busy++
	c.attempts++
	c.inFlight++
	c.peak = max(c.peak, c.inFlight)
	c.maxAttempts = max(c.maxAttempts, a.n)
	c.tick(now).inFlight = c.inFlight
}

// end records the end of attempt a at now: its status (0: the connection
// was cut), the limit that refused it and the retry-after it was given.
func (l *callLog) end(a *callAttempt, status int, limit string, retryAfter time.Duration) {
	if a.gen == 0 {
		return // not counted, or ended already
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.gen != l.gen {
		a.gen = 0
		return // a reset since its arrival
	}
	a.gen = 0
	c := &l.cur
	c.unplace(a, now)
	c.inFlight--
	c.busy--
	if now.After(c.last) {
		c.last = now
	}
	t := c.tick(now)
	t.inFlight = c.inFlight
	c.recordLatency(now.Sub(a.arrival))
	switch {
	case status >= 200 && status < 300:
		c.completed++
		t.completions++
		return
	case limit == wire.LimitQuota:
		c.quota++
	case status == http.StatusTooManyRequests:
		c.throttled++
		t.throttle++
		if c.throttledBy == nil {
			c.throttledBy = make(map[string]int64)
		}
		c.throttledBy[limit]++
		c.throttledByAttempt = countAt(c.throttledByAttempt, a.n-1)
	case status == 529 || status == http.StatusServiceUnavailable:
		c.overloaded++
	case status >= 500:
		c.s5xx++
	default:
		c.errors++
	}
	oc := a.call
	if oc == nil {
		oc = &openCall{}
	}
	oc.attempts = a.n
	oc.gate = now.Add(retryAfter)
	oc.last = answerOf(status, limit)
	c.card.refusal(oc)
	c.pushOpen(a.fp, oc)
}

func countAt(s []int64, i int) []int64 {
	i = min(i, MaxAttemptIndex-1)
	for len(s) <= i {
		s = append(s, 0)
	}
	s[i]++
	return s
}

// pushOpen appends oc to the open calls of fp, oldest first.
func (c *callCounts) pushOpen(fp uint64, oc *openCall) {
	if c.openCalls >= MaxOpenCalls {
		// Forget the failed calls rather than grow: they stay counted as
		// failed; a late retry of one starts a new call.
		c.open, c.openCalls = nil, 0
	}
	if c.open == nil {
		c.open = make(map[uint64]*openCall)
	}
	c.openCalls++
	head := c.open[fp]
	if head == nil {
		c.open[fp] = oc
		return
	}
	for head.next != nil {
		head = head.next
	}
	head.next = oc
}

func (c *callCounts) recordLatency(d time.Duration) { c.latency.Record(d) }

// tick returns the timeline interval holding now, adding the intervals
// before it (carrying the in-flight count) and halving the resolution when
// there would be more than MaxCallPoints.
func (c *callCounts) tick(now time.Time) *callTick {
	i := int(max(0, now.Sub(c.first)) / c.timelineRes)
	for i >= MaxCallPoints {
		c.coarsen()
		i = int(max(0, now.Sub(c.first)) / c.timelineRes)
	}
	for len(c.points) <= i {
		prev := 0
		if n := len(c.points); n > 0 {
			prev = c.points[n-1].inFlight
		}
		c.points = append(c.points, callTick{inFlight: prev})
	}
	return &c.points[i]
}

// coarsen doubles the timeline's resolution, merging pairs of intervals.
func (c *callCounts) coarsen() {
	c.timelineRes *= 2
	n := (len(c.points) + 1) / 2
	for i := range n {
		m := c.points[2*i]
		if 2*i+1 < len(c.points) {
			o := c.points[2*i+1]
			m = callTick{inFlight: o.inFlight, completions: m.completions + o.completions, throttle: m.throttle + o.throttle}
		}
		c.points[i] = m
	}
	c.points = c.points[:n]
}

// snapshot returns the CallStats since the last reset.
func (l *callLog) snapshot() CallStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.cur
	st := CallStats{
		Calls:              c.calls,
		Completed:          c.completed,
		Failed:             c.calls - c.completed - c.busy,
		Attempts:           c.attempts,
		Throttled:          c.throttled,
		QuotaExceeded:      c.quota,
		Overloaded:         c.overloaded,
		ServerErrors:       c.s5xx,
		Errors:             c.errors,
		ThrottledByAttempt: append([]int64{}, c.throttledByAttempt...),
		MaxAttempts:        c.maxAttempts,
		EarlyRetries:       c.early,
		PeakConcurrency:    c.peak,
		Card:               c.reportCard(),
		InFlight:           c.inFlight,
		First:              c.first,
		Last:               c.last,
		Latency:            c.percentiles(),
	}
	if len(c.throttledBy) > 0 {
		st.ThrottledBy = make(map[string]int64, len(c.throttledBy))
		for k, v := range c.throttledBy {
			st.ThrottledBy[k] = v
		}
	}
	if c.completed > 0 {
		st.AttemptsPerCall = float64(c.attempts) / float64(c.completed)
	}
	if !c.first.IsZero() && c.last.After(c.first) {
		st.Seconds = c.last.Sub(c.first).Seconds()
	}
	res := c.timelineRes.Seconds()
	st.Timeline = CallTimeline{ResolutionSeconds: res, Points: make([]CallPoint, len(c.points))}
	for i, p := range c.points {
		st.Timeline.Points[i] = CallPoint{
			T:               float64(i+1) * res,
			InFlight:        p.inFlight,
			CompletionsRate: float64(p.completions) / res,
			ThrottlesRate:   float64(p.throttle) / res,
		}
	}
	return st
}

// earlyOf returns the early retries of API key key ("" in open mode).
func (l *callLog) earlyOf(key string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if kc := l.cur.keys[key]; kc != nil {
		return kc.early
	}
	return 0
}

// percentiles summarises the attempts that ended (attempts - inFlight of
// them, each recorded by end).
func (c *callCounts) percentiles() Percentiles { return Percentiles(c.latency.Summary()) }

// Calls returns the call accounting since the server started or was last
// Reset; CallStats documents how attempts are grouped into calls.
func (s *Server) Calls() CallStats { return s.calls.snapshot() }

// Prometheus export: the lifetime counters, read at scrape time.
var (
	descCalls = prometheus.NewDesc("mockllm_calls_total",
		"Logical calls: attempts grouped by API key and request body (or Idempotency-Key); see mock.CallStats.", nil, nil)
	descCallsCompleted = prometheus.NewDesc("mockllm_calls_completed_total",
		"Logical calls that got a 2xx.", nil, nil)
	descCallsFailed = prometheus.NewDesc("mockllm_calls_failed",
		"Logical calls since the last reset with no 2xx and no attempt in flight (a call waiting for its retry counts until it succeeds).", nil, nil)
	descEarly = prometheus.NewDesc("mockllm_early_retries_total",
		"Retries that arrived before the retry-after their call's previous attempt was given.", nil, nil)
	descThrottledByAttempt = prometheus.NewDesc("mockllm_throttled_by_attempt_total",
		"429s by the attempt's number within its logical call (1: first attempts).", []string{"attempt"}, nil)
	descPeak = prometheus.NewDesc("mockllm_peak_concurrency",
		"Most model requests in flight at once since the server started.", nil, nil)
)

// Describe implements prometheus.Collector.
func (l *callLog) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descCallsCompleted, descCallsFailed, descEarly, descThrottledByAttempt, descPeak} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (l *callLog) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	life := l.past
	life.throttledByAttempt = slices.Clone(life.throttledByAttempt)
	life.fold(&l.cur)
	calls, completed, early, peak, byAttempt := life.calls, life.completed, life.early, life.peak, life.throttledByAttempt
	failed := l.cur.calls - l.cur.completed - l.cur.busy
	l.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(calls))
	ch <- prometheus.MustNewConstMetric(descCallsCompleted, prometheus.CounterValue, float64(completed))
	ch <- prometheus.MustNewConstMetric(descCallsFailed, prometheus.GaugeValue, float64(failed))
	ch <- prometheus.MustNewConstMetric(descEarly, prometheus.CounterValue, float64(early))
	for i, n := range byAttempt {
		ch <- prometheus.MustNewConstMetric(descThrottledByAttempt, prometheus.CounterValue, float64(n), strconv.Itoa(i+1))
	}
	ch <- prometheus.MustNewConstMetric(descPeak, prometheus.GaugeValue, float64(peak))
}

// callStatus is the status an admitted attempt ended with, as its client
// saw it: 499 when the client went away, 0 for a cut connection, the
// overload status for a stream that ended in an error event.
func (x *exchange) callStatus() int {
	switch p := &x.d.plan; {
	case x.status == 499:
		return 499
	case p.cutAt > 0:
		return 0
	case p.failAt > 0:
		return x.wr.OverloadStatus()
	}
	return x.status
}
