package loadgen

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/measure"
)

// Op is how an expectation compares a metric.
type Op int

// The comparisons an expectation can make.
const (
	OpEq    Op = iota // = v
	OpLE              // <= v
	OpLT              // < v
	OpGE              // >= v
	OpGT              // > v
	OpRange           // lo..hi, inclusive
)

var opText = map[Op]string{OpEq: "=", OpLE: "<=", OpLT: "<", OpGE: ">=", OpGT: ">"}

// Expectation is one line of a strategy's expect: a metric and the values it
// may take. In YAML the value is a number (exactly that), a range "160..180"
// (inclusive), or a comparison such as "<= 1.05". A key max_METRIC or
// min_METRIC with a number is an upper or lower bound on METRIC
// (max_wall_over_oracle: 1.05 is wall_over_oracle: "<= 1.05").
type Expectation struct {
	Key    string  // the key as written, e.g. max_wall_over_oracle
	Metric string  // the metric compared, e.g. wall_over_oracle
	Op     Op      // the comparison
	V, Hi  float64 // the bound; Hi only for OpRange
	Line   int
}

// String renders the expected values, e.g. "= 200", "<= 1.05", "160..180".
func (e Expectation) String() string {
	if e.Op == OpRange {
		return formatNumber(e.V) + ".." + formatNumber(e.Hi)
	}
	return opText[e.Op] + " " + formatNumber(e.V)
}

// Holds reports whether v meets the expectation. Equality allows for
// floating-point rounding only.
func (e Expectation) Holds(v float64) bool {
	const eps = 1e-9
	switch e.Op {
	case OpEq:
		return math.Abs(v-e.V) <= eps*math.Max(1, math.Abs(e.V))
	case OpLE:
		return v <= e.V+eps
	case OpLT:
		return v < e.V
	case OpGE:
		return v >= e.V-eps
	case OpGT:
		return v > e.V
	case OpRange:
		return v >= e.V-eps && v <= e.Hi+eps
	}
	return false
}

// Check evaluates the expectation against a strategy's result.
func (e Expectation) Check(r *reports.Result) reports.Check {
	if _, ok := r.Server(); Metrics[e.Metric].By == ByServer && !ok {
		return reports.Check{Metric: e.Key, Expected: e.String(), Actual: "not measured (no server view against a target)"}
	}
	m := Metrics[e.Metric]
	if m.Unknown != nil {
		if why := m.Unknown(r); why != "" {
			return reports.Check{Metric: e.Key, Expected: e.String(), Actual: "not measured (" + why + ")"}
		}
	}
	v := m.Value(r)
	c := reports.Check{Metric: e.Key, Expected: e.String(), Actual: formatNumber(v), OK: e.Holds(v)}
	if tl := r.TimerLateness; m.Late != nil && tl != nil && tl.LostSeconds > 0 && e.Op != OpGE && e.Op != OpGT {
		// To the millisecond, up: the probe's own resolution.
		lost := math.Ceil(tl.LostSeconds*1000-1e-6) / 1000
		if a := math.Round(m.Late(r, lost)*1e9) / 1e9; a > 0 {
			w := e.widened(a)
			c.Allowance = a
			c.OK = w.Holds(v)
			c.NeededAllowance = c.OK && !e.Holds(v)
			c.Expected = fmt.Sprintf("%s (%s with %s s of timer lateness measured in this run)", e, w, formatNumber(lost))
		}
	}
	return c
}

// widened is e with its upper bound raised by a: what a wall time may
// read when the machine held the run back by the timer lateness a stands
// for. A lower bound stays: lateness only ever makes a wall longer.
func (e Expectation) widened(a float64) Expectation {
	switch e.Op {
	case OpLE, OpLT:
		e.V += a
	case OpRange:
		e.Hi += a
	case OpEq:
		e.Op, e.Hi = OpRange, e.V+a
	}
	return e
}

// Expect is a strategy's expectations, in file order.
type Expect []Expectation

// Check evaluates every expectation against r.
func (x Expect) Check(r *reports.Result) []reports.Check {
	if len(x) == 0 {
		return nil
	}
	out := make([]reports.Check, len(x))
	for i, e := range x {
		out[i] = e.Check(r)
	}
	return out
}

// UnmarshalStrict decodes a mapping of METRIC: VALUE.
func (x *Expect) UnmarshalStrict(d *strict.Decoder, n *yaml.Node, path string) {
	if strict.IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "want a mapping of metric: value, got %s", strict.DescribeNode(n))
		return
	}
	seen := make(map[string]bool)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if vn.Kind == yaml.AliasNode && vn.Alias != nil {
			vn = vn.Alias
		}
		key := kn.Value
		kpath := fielderr.Join(path, key)
		d.Mark(vn, kpath)
		if seen[key] {
			d.Errorf(kn, kpath, "duplicate key")
			continue
		}
		seen[key] = true
		e, err := parseExpectation(key, vn)
		if err != nil {
			d.Errorf(vn, kpath, "%v", err)
			continue
		}
		*x = append(*x, e)
	}
}

// parseExpectation decodes one expect entry.
func parseExpectation(key string, n *yaml.Node) (Expectation, error) {
	e := Expectation{Key: key, Metric: key, Line: n.Line}
	bound := OpEq
	if _, ok := Metrics[key]; !ok {
		switch {
		case strings.HasPrefix(key, "max_") && Metrics[key[4:]].Value != nil:
			e.Metric, bound = key[4:], OpLE
		case strings.HasPrefix(key, "min_") && Metrics[key[4:]].Value != nil:
			e.Metric, bound = key[4:], OpGE
		default:
			return e, fmt.Errorf("unknown metric (want one of %s, or max_/min_ before one)", strings.Join(metricNames(), ", "))
		}
	}
	if n.Kind != yaml.ScalarNode || strict.IsNull(n) {
		return e, fmt.Errorf("want a number, a range like \"160..180\" or a comparison like \"<= 1.05\", got %s", strict.DescribeNode(n))
	}
	s := strings.TrimSpace(n.Value)
	if v, err := parseNumber(s); err == nil {
		e.Op, e.V = bound, v
		return e, nil
	}
	if bound != OpEq {
		return e, fmt.Errorf("%s is a bound: want a number, got %s", key, strict.DescribeNode(n))
	}
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		a, err1 := parseNumber(strings.TrimSpace(lo))
		b, err2 := parseNumber(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil {
			return e, fmt.Errorf("invalid range %s (want LO..HI, e.g. \"160..180\")", strict.DescribeNode(n))
		}
		if a > b {
			return e, fmt.Errorf("invalid range %s: %s is above %s", strict.DescribeNode(n), formatNumber(a), formatNumber(b))
		}
		e.Op, e.V, e.Hi = OpRange, a, b
		return e, nil
	}
	for _, op := range []struct {
		text string
		op   Op
	}{{"<=", OpLE}, {">=", OpGE}, {"==", OpEq}, {"<", OpLT}, {">", OpGT}, {"=", OpEq}} {
		if rest, ok := strings.CutPrefix(s, op.text); ok {
			v, err := parseNumber(strings.TrimSpace(rest))
			if err != nil {
				return e, fmt.Errorf("invalid comparison %s (want e.g. \"<= 1.05\")", strict.DescribeNode(n))
			}
			e.Op, e.V = op.op, v
			return e, nil
		}
	}
	return e, fmt.Errorf("cannot parse %s (want a number, a range like \"160..180\" or a comparison like \"<= 1.05\")", strict.DescribeNode(n))
}

// parseNumber accepts integers (with optional _ or , separators) and decimals.
func parseNumber(s string) (float64, error) {
	s = strings.NewReplacer("_", "", ",", "").Replace(s)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return v, nil
}

func formatNumber(v float64) string {
	if math.Abs(v) < 1e12 {
		v = math.Round(v*1e6) / 1e6 // enough digits for seconds to the microsecond
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Metric is a number read from a strategy's result.
type Metric struct {
	Doc   string
	Value func(*reports.Result) float64
	// By is who measures it, and so the rows on which it is known.
	By Measurer
	// Late, for a metric that is a real-time wall, is how much later it
	// may read when the run's timers were late by lost seconds in all
	// (TimerLateness.LostSeconds); nil for every other metric, which is
	// checked as written.
	Late func(r *reports.Result, lost float64) float64
	// Unknown, when set, says why the metric is not known on r ("" when
	// it is): the check then fails saying so rather than read 0.
	Unknown func(r *reports.Result) string
}

// Measurer is who measures a metric.
type Measurer int

const (
	// ByAny is a metric every row has.
	ByAny Measurer = iota
	// ByServer is the embedded mock's call accounting
	// (reports.ServerView): unknown against a target.
	ByServer
	// ByClient is loadgen's own client (the engine): unknown on a command
	// row, whose client is the user's program, seen only from the server.
	ByClient
	// ByCommand is a command row's program: known on command rows only.
	ByCommand
	// ByArrival is the open loop of a scenario with arrival: (see
	// Arrival): known on its rows only.
	ByArrival
)

// String says where a metric is known, for loadgen help scenario; "" for
// every row.
func (m Measurer) String() string {
	switch m {
	case ByServer:
		return "server side: not against a target"
	case ByClient:
		return "loadgen's client: not on command rows"
	case ByCommand:
		return "command rows only"
	case ByArrival:
		return "scenarios with arrival: only"
	}
	return ""
}

// unmeasurable says why metric cannot be measured on row st of s, or ""
// when it can: an expectation on it would read 0 and pass or fail whatever
// the client did.
func (s *Scenario) unmeasurable(st *Row, metric string) string {
	switch Metrics[metric].By {
	case ByServer:
		if s.Target != nil {
			return fmt.Sprintf("not measurable against target: (%s is counted by the embedded mock, which this run does not use); remove it or the target", metric)
		}
		if capMetrics[metric] && !s.capsConcurrency() {
			return fmt.Sprintf("not measurable: %s is measured against the server's concurrency caps (max_concurrent of limits, a schedule: entry, limits_by_model, organization.limits or long_context.limits), and this scenario sets none", metric)
		}
	case ByClient:
		if st.Kind == KindCommand {
			return fmt.Sprintf("not measurable on a command row: %s is counted by loadgen's own client, and a command row sees your program only from the server", metric)
		}
	case ByCommand:
		if st.Kind != KindCommand {
			return fmt.Sprintf("only a command row has %s (the exit status of its program)", metric)
		}
	case ByArrival:
		if s.Arrival == nil {
			return fmt.Sprintf("only a scenario with arrival: (items arriving over time) measures %s", metric)
		}
	}
	return ""
}

// capsConcurrency reports whether the scenario's server caps a request's
// concurrency at some point, as the report card follows it: the key's
// limits.max_concurrent or a schedule entry's, a model pool's, the
// organization's or the long-context limits'.
func (s *Scenario) capsConcurrency() bool {
	c := &s.Server
	if c.Limits.MaxConcurrent > 0 || c.Organization.Limits.MaxConcurrent > 0 || c.LongContext.Limits.MaxConcurrent > 0 {
		return true
	}
	for _, l := range c.LimitsByModel {
		if l.MaxConcurrent > 0 {
			return true
		}
	}
	for _, e := range s.Server.Schedule {
		if m := e.Limits.MaxConcurrent; m != nil && *m > 0 {
			return true
		}
	}
	return false
}

func pct(get func(*reports.Result) measure.Percentiles, q func(measure.Percentiles) float64) func(*reports.Result) float64 {
	return func(r *reports.Result) float64 { return q(get(r)) }
}

// Metrics are the names an expect entry can compare.
var Metrics = map[string]Metric{
	"items":             {Doc: "items in the batch", Value: func(r *reports.Result) float64 { return float64(r.Items) }},
	"completed":         {Doc: "items that succeeded", Value: func(r *reports.Result) float64 { return float64(r.Completed) }},
	"failed":            {Doc: "items that failed after their retries", Value: func(r *reports.Result) float64 { return float64(r.Failed) }},
	"attempts":          {Doc: "HTTP attempts", Value: func(r *reports.Result) float64 { return float64(r.Attempts) }},
	"throttled":         {Doc: "429 responses", Value: func(r *reports.Result) float64 { return float64(r.Throttled) }},
	"overloaded":        {Doc: "529/503 responses", Value: func(r *reports.Result) float64 { return float64(r.Overloaded) }},
	"server_errors":     {Doc: "other 5xx responses", Value: func(r *reports.Result) float64 { return float64(r.ServerErrors) }},
	"errors":            {Doc: "other failed attempts", Value: func(r *reports.Result) float64 { return float64(r.Errors) }},
	"quota":             {Doc: "attempts refused for a spent quota or spend cap", Value: func(r *reports.Result) float64 { return float64(r.Quota) }},
	"attempts_per_call": {Doc: "attempts per completed item", Value: func(r *reports.Result) float64 { return r.AttemptsPerCall }},
	"max_attempts":      {Doc: "most attempts any item took", Value: func(r *reports.Result) float64 { return float64(r.MaxAttempts) }},
	"failed_tokens":     {Doc: "tokens reserved by attempts that did not succeed", Value: func(r *reports.Result) float64 { return float64(r.FailedTokens) }, By: ByClient},
	"input_tokens":      {Doc: "input tokens used", Value: func(r *reports.Result) float64 { return float64(r.InputTokens) }},
	"output_tokens":     {Doc: "output tokens used", Value: func(r *reports.Result) float64 { return float64(r.OutputTokens) }},
	"cost_usd":          {Doc: "what the tokens cost at the mock's prices (batch prices on a batch-api row), USD", Value: func(r *reports.Result) float64 { return r.CostUSD }},
	"wall_seconds":      {Doc: "wall time of the strategy's run (in real time its upper bound allows for the run's timer lateness)", Value: func(r *reports.Result) float64 { return r.WallSeconds }, Late: lateSeconds},
	"oracle_seconds":    {Doc: "the oracle's ideal time", Value: func(r *reports.Result) float64 { return r.OracleSeconds }},
	"wall_over_oracle":  {Doc: "wall time / oracle time (in real time its upper bound allows for the run's timer lateness over the oracle)", Value: func(r *reports.Result) float64 { return r.WallOverOracle }, Late: lateOverOracle},
	"final_limit":       {Doc: "the strategy's limit at the end", Value: func(r *reports.Result) float64 { return r.FinalLimit }, By: ByClient},
	"end_to_end_p50":    {Doc: "median item time, s", Value: pct(func(r *reports.Result) measure.Percentiles { return r.EndToEnd }, func(p measure.Percentiles) float64 { return p.P50 }), By: ByClient},
	"end_to_end_p99":    {Doc: "p99 item time, s", Value: pct(func(r *reports.Result) measure.Percentiles { return r.EndToEnd }, func(p measure.Percentiles) float64 { return p.P99 }), By: ByClient},
	"end_to_end_max":    {Doc: "slowest item, s", Value: pct(func(r *reports.Result) measure.Percentiles { return r.EndToEnd }, func(p measure.Percentiles) float64 { return p.Max }), By: ByClient},
	"attempt_p50":       {Doc: "median attempt latency, s", Value: pct(func(r *reports.Result) measure.Percentiles { return r.Attempt }, func(p measure.Percentiles) float64 { return p.P50 })},
	"attempt_p99":       {Doc: "p99 attempt latency, s", Value: pct(func(r *reports.Result) measure.Percentiles { return r.Attempt }, func(p measure.Percentiles) float64 { return p.P99 })},
	"throttled_first": {Doc: "429s on first attempts", Value: func(r *reports.Result) float64 {
		if len(r.ThrottledByAttempt) == 0 {
			return 0
		}
		return float64(r.ThrottledByAttempt[0])
	}},
	"early_retries": {Doc: "retries that arrived before their retry-after", By: ByServer,
		Value: func(r *reports.Result) float64 { v, _ := r.Server(); return float64(v.EarlyRetries) }},
	"concurrency": {Doc: "most attempts in flight at once", By: ByServer,
		Value: func(r *reports.Result) float64 { v, _ := r.Server(); return float64(v.PeakConcurrency) }},
	// The report card (docs/loadgen.md, "The report card").
	"retries": {Doc: "attempts the server grouped into an earlier call", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.Retries) })},
	"bad_retries": {Doc: "retries after an answer no retry fixes: retries_after_quota + retries_after_client_error", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.BadRetries()) })},
	"retries_after_quota": {Doc: "retries after a spent quota's 429", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.RetriesAfterQuota) })},
	"retries_after_client_error": {Doc: "retries after a 4xx no retry fixes (any but 408, 409, 429)", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.RetriesAfterClientError) })},
	"retry_waves": {Doc: "waves of 2 retries or more of one key within 10 ms of the wave's first (no jitter)", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.RetryWaves) })},
	"synchronized_retries": {Doc: "retries in retry waves", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.SynchronizedRetries) })},
	"largest_retry_wave": {Doc: "most retries in one retry wave", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.MaxRetryWave) })},
	"retry_amplification": {Doc: "attempts per call refused for a rate limit or overload (0 with none)", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return c.RetryAmplification })},
	"refused_calls": {Doc: "calls with an attempt refused for a rate limit or overload", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.RefusedCalls) })},
	"refused_call_attempts": {Doc: "attempts of the calls refused for a rate limit or overload, all of them", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.RefusedCallAttempts) })},
	"idle_capacity": {Doc: "share (0..1) of each key's max_concurrent unused from its first attempt to its last", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return c.IdleCapacity }), Unknown: uncapped},
	"over_limit": {Doc: "attempts sent while their key already had its max_concurrent in flight", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.OverLimit) }), Unknown: uncapped},
	"peak_over_limit": {Doc: "most attempts in flight above max_concurrent", By: ByServer,
		Value: fromCard(func(c reports.ReportCard) float64 { return float64(c.PeakOverLimit) }), Unknown: uncapped},
	"goodput": {Doc: "completed items per second of wall time", By: ByArrival,
		Value: func(r *reports.Result) float64 { return arrivals(r).GoodputPerSecond }},
	"queueing_delay_p50": {Doc: "median time from an item's arrival to its first attempt, s", By: ByArrival,
		Value: func(r *reports.Result) float64 { return arrivals(r).QueueingDelay.P50 }},
	"queueing_delay_p99": {Doc: "p99 time from an item's arrival to its first attempt, s", By: ByArrival,
		Value: func(r *reports.Result) float64 { return arrivals(r).QueueingDelay.P99 }},
	"queueing_delay_max": {Doc: "longest time from an item's arrival to its first attempt, s", By: ByArrival,
		Value: func(r *reports.Result) float64 { return arrivals(r).QueueingDelay.Max }},
	"exit_code": {Doc: "the command's exit status, -1 when killed by a signal", By: ByCommand, Value: func(r *reports.Result) float64 {
		if r.Command == nil {
			return 0
		}
		return float64(r.Command.ExitCode)
	}},
}

// fromCard is a metric of the report card; 0 on a row without one.
func fromCard(f func(reports.ReportCard) float64) func(*reports.Result) float64 {
	return func(r *reports.Result) float64 {
		if v, _ := r.Server(); v.Card != nil {
			return f(*v.Card)
		}
		return 0
	}
}

// capMetrics are the report card's figures measured against the server's
// concurrency caps: unknown without one.
var capMetrics = map[string]bool{"idle_capacity": true, "over_limit": true, "peak_over_limit": true}

// uncapped says why a capMetrics figure is unknown on r: no request met a
// concurrency cap while it ran.
func uncapped(r *reports.Result) string {
	if v, _ := r.Server(); v.Card == nil || !v.Card.Capped {
		return "no request met a concurrency cap (max_concurrent of limits, a model pool, the organization or long context) to measure it against"
	}
	return ""
}

// lateSeconds is a wall time's allowance for lost seconds of timer
// lateness: all of them.
func lateSeconds(_ *reports.Result, lost float64) float64 { return lost }

// lateOverOracle is wall_over_oracle's allowance: the lost seconds over
// the oracle's.
func lateOverOracle(r *reports.Result, lost float64) float64 {
	if r.OracleSeconds <= 0 {
		return 0
	}
	return lost / r.OracleSeconds
}

// arrivals is r's open-loop figures, zero when it has none.
func arrivals(r *reports.Result) reports.Arrivals {
	if r.Arrivals == nil {
		return reports.Arrivals{}
	}
	return *r.Arrivals
}

func metricNames() []string {
	names := make([]string, 0, len(Metrics))
	for k := range Metrics {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// errorTally is a sink counting a row's failed items by status and error
// type, to name what made a row fail.
type errorTally struct {
	mu     sync.Mutex
	counts map[errorKind]int
	failed int // failed items
	client int // of which with a client error no retry can fix
}

// errorKind is a failure's status and provider error type.
type errorKind struct {
	status int
	typ    string
}

// Put implements engine.Sink.
func (t *errorTally) Put(r engine.Result) error {
	if r.Err == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = make(map[errorKind]int)
	}
	t.counts[errorKind{r.Err.Status, r.Err.Type}]++
	t.failed++
	if clientError(r.Err.Status) {
		t.client++
	}
	return nil
}

// clientError reports whether status is a 4xx that no retry fixes: the
// request itself is refused (400, 401, 403, 404, 413, 422, …); 408, 409 and
// 429 are retried.
func clientError(status int) bool {
	return status >= 400 && status < 500 && status != 408 && status != 409 && status != 429
}

// dominant describes the most frequent failure: "400 invalid_request_error ×10".
func (t *errorTally) dominant() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var best errorKind
	n := 0
	for k, c := range t.counts {
		if c > n || c == n && (k.status < best.status || k.status == best.status && k.typ < best.typ) {
			best, n = k, c
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d %s ×%d", best.status, best.typ, n)
}

// intendsFailures reports whether the expectations say how many items
// complete or fail, so that a row of failures may be what was meant.
func (x Expect) intendsFailures() bool {
	for _, e := range x {
		if e.Metric == "failed" || e.Metric == "completed" {
			return true
		}
	}
	return false
}

// allRefusedCheck returns a failed check when every item of r failed with a
// client error no retry fixes (a request the target refuses: a max_tokens
// it does not accept, a wrong key, a wrong model) and x does not say that
// failures are intended: such a row measured nothing, and the run must not
// pass. The check names the dominant error.
func (x Expect) allRefusedCheck(r *reports.Result, t *errorTally) []reports.Check {
	t.mu.Lock()
	all := r.Items > 0 && r.Completed == 0 && t.failed == r.Items && t.client == t.failed
	t.mu.Unlock()
	if !all || x.intendsFailures() {
		return nil
	}
	return []reports.Check{{
		Metric:   "failed",
		Expected: fmt.Sprintf("< %d (every call was refused; set failed: %d under expect: if that is intended)", r.Items, r.Items),
		Actual:   fmt.Sprintf("%d: %s", t.failed, t.dominant()),
		OK:       false,
	}}
}
