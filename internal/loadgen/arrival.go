package loadgen

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/measure"
)

// Arrival makes a scenario open-loop, as an online service's traffic is:
// items arrive over time, at Rate, instead of all being there at the start;
// a strategy that cannot keep up makes them queue. In YAML:
//
//	arrival: {rate: 10/s, process: poisson, duration: 10m}
//
// The items are the scenario's items, arriving in order; with Duration and
// no items, Rate × Duration items of the request arrive.
type Arrival struct {
	// Rate is the mean arrival rate, items per second. Required.
	Rate Rate `yaml:"rate"`
	// Process is how arrivals are spaced: "poisson" (the default:
	// independent arrivals, exponential gaps of mean 1/Rate, seeded by the
	// scenario's seed) or "constant" (exactly 1/Rate apart).
	Process string `yaml:"process"`
	// Duration, instead of items, is how long items arrive for.
	Duration time.Duration `yaml:"duration"`
}

// Arrival processes.
const (
	Poisson  = "poisson"
	Constant = "constant"
)

// Rate is a rate in items per second. Its YAML form is a number with a
// unit, N/s, N/m (or N/min) or N/h, or a bare number of items per second.
type Rate float64

// UnmarshalStrict decodes 10/s, 600/m, 36000/h or 10.
func (r *Rate) UnmarshalStrict(d *strict.Decoder, n *yaml.Node, path string) {
	if strict.IsNull(n) {
		return
	}
	v, ok := parseRate(n.Value)
	if n.Kind != yaml.ScalarNode || !ok {
		d.Errorf(n, path, "want a rate like 10/s, 600/m or 36000/h, got %s", strict.DescribeNode(n))
		return
	}
	*r = Rate(v)
}

// parseRate parses N/s, N/m, N/min, N/h or N (per second).
func parseRate(s string) (float64, bool) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), "/")
	per := map[string]float64{"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}[strings.TrimSpace(unit)]
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if per == 0 || err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v / per, true
}

// String returns the rate as N/s.
func (r Rate) String() string { return strconv.FormatFloat(float64(r), 'g', -1, 64) + "/s" }

// MaxArrivalItems bounds the items Rate × Duration may make.
const MaxArrivalItems = 100_000_000

// arrivalItems gives a scenario with arrival.duration and no items its
// Rate × Duration items, before defaults that count items.
func (s *Scenario) arrivalItems() {
	a := s.Arrival
	if a == nil || a.Duration <= 0 || a.Rate <= 0 || len(s.Items.Groups) > 0 {
		return
	}
	n := math.Round(float64(a.Rate) * a.Duration.Seconds())
	if n >= 1 && n <= MaxArrivalItems {
		s.Items.Groups = []ItemGroup{{Count: int(n)}}
	}
}

// validateArrival reports the arrival's problems through d.
func (s *Scenario) validateArrival(d *strict.Decoder) {
	a := s.Arrival
	if a == nil {
		if d.Set("arrival") {
			d.Invalidf("arrival", "want a mapping {rate: 10/s, process: poisson, duration: 10m}, got null")
		}
		return
	}
	switch {
	case !d.Set("arrival.rate"):
		d.Invalidf("arrival.rate", "required: the mean arrival rate, e.g. 10/s")
	case a.Rate <= 0:
		d.Invalidf("arrival.rate", "must be positive, got %s", a.Rate)
	}
	if a.Process != "" && a.Process != Poisson && a.Process != Constant {
		d.Invalidf("arrival.process", "want poisson or constant, got %q", a.Process)
	}
	for i, st := range s.Strategies {
		if st.Kind == KindCommand {
			d.Invalidf("arrival", "has no effect on a command row (strategies[%d]: your program sends its calls when it likes); remove arrival or the row", i)
			break
		}
	}
	switch {
	case a.Duration < 0:
		d.Invalidf("arrival.duration", "must not be negative, got %s", a.Duration)
	case a.Duration > 0 && d.Set("items"):
		d.Invalidf("arrival.duration", "set items or arrival.duration, not both (with duration, rate x duration items arrive)")
	case a.Duration > 0 && a.Rate > 0 && s.Items.Count() == 0:
		d.Invalidf("arrival.duration", "rate x duration must make from 1 to %d items, got %g", MaxArrivalItems, float64(a.Rate)*a.Duration.Seconds())
	}
}

// schedule yields the arrival offsets of an arrival process, from the
// first item's at 0: a pure sequence, so that it is tested without a clock.
type schedule struct {
	gap     float64 // mean gap, seconds
	poisson bool
	rng     *rand.Rand
	k       int
	t       float64 // seconds
}

func newSchedule(a *Arrival, seed int64) *schedule {
	return &schedule{gap: 1 / float64(a.Rate), poisson: a.Process != Constant,
		rng: rand.New(rand.NewPCG(uint64(seed), 0xa771a1))}
}

// next returns the next item's arrival, since the first's.
func (s *schedule) next() time.Duration {
	switch {
	case s.k == 0:
	case s.poisson:
		s.t += s.rng.ExpFloat64() * s.gap
	default:
		s.t = float64(s.k) * s.gap // counting, not adding, so no drift
	}
	s.k++
	return time.Duration(s.t * 1e9)
}

// openLoop paces a row's items by the scenario's arrival process and
// measures how long each waited from its arrival to its first attempt.
type openLoop struct {
	start   time.Time
	arrived []time.Duration // by item index, since start
	delay   []float64       // arrival to first attempt, seconds; NaN until it starts
	last    time.Duration
}

// pace wraps src so that item k is yielded at its arrival on clk, and cfg
// so that its first attempt's start is recorded. Waiting for an arrival
// ends with ctx.
func (s *Scenario) pace(ctx context.Context, clk clock.Clock, src engine.Source, cfg *engine.Config, items int) (engine.Source, *openLoop) {
	if s.Arrival == nil {
		return src, nil
	}
	o := &openLoop{arrived: make([]time.Duration, items), delay: make([]float64, items)}
	for i := range o.delay {
		o.delay[i] = math.NaN()
	}
	sched := newSchedule(s.Arrival, s.Seed)
	paced := func(yield func(engine.Item, error) bool) {
		o.start = clk.Now()
		for it, err := range src {
			if err != nil {
				yield(it, err)
				return
			}
			at := sched.next()
			if wait := o.start.Add(at).Sub(clk.Now()); wait > 0 {
				if clk.Sleep(ctx, wait) != nil {
					// Not exhausted: the run is interrupted, not over.
					yield(engine.Item{}, context.Cause(ctx))
					return
				}
			}
			if it.Index >= 0 && it.Index < len(o.arrived) {
				o.arrived[it.Index] = at
			}
			o.last = at
			if !yield(it, nil) {
				return
			}
		}
	}
	prev := cfg.OnAttempt
	cfg.OnAttempt = func(a engine.Attempt) {
		if a.N == 0 && a.Index >= 0 && a.Index < len(o.delay) {
			// Each index is written once, by its worker, after the source
			// set its arrival; read after engine.Run returns.
			o.delay[a.Index] = max(0, a.Start.Sub(o.start.Add(o.arrived[a.Index])).Seconds())
		}
		if prev != nil {
			prev(a)
		}
	}
	return paced, o
}

// finish adds the open loop's figures to the row: goodput, queueing delay,
// and an oracle no earlier than the last arrival plus one call.
func (o *openLoop) finish(s *Scenario, res *reports.Result) {
	if o == nil {
		return
	}
	var delays []float64
	for _, d := range o.delay {
		if !math.IsNaN(d) {
			delays = append(delays, d)
		}
	}
	a := &reports.Arrivals{
		Process:        orDefault(s.Arrival.Process, Poisson),
		RatePerSecond:  float64(s.Arrival.Rate),
		ArrivalSeconds: o.last.Seconds(),
		QueueingDelay:  percentiles(delays),
	}
	if res.WallSeconds > 0 {
		a.GoodputPerSecond = float64(res.Completed) / res.WallSeconds
	}
	res.Arrivals = a
	call := time.Duration(0)
	if s.Target == nil {
		for _, g := range s.Groups() {
			call = max(call, callTime(&s.Server, estimatePromptTokens(g), g.MaxTokens))
		}
	}
	if call > 0 {
		res.SetOracle(max(res.OracleSeconds, (o.last + call).Seconds()))
	}
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// percentiles summarises exact values, in seconds (nearest rank).
func percentiles(xs []float64) measure.Percentiles {
	if len(xs) == 0 {
		return measure.Percentiles{}
	}
	slices.Sort(xs)
	rank := func(q float64) float64 { return xs[max(0, int(math.Ceil(q*float64(len(xs))))-1)] }
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return measure.Percentiles{Count: int64(len(xs)), P50: rank(0.5), P90: rank(0.9), P99: rank(0.99),
		Max: xs[len(xs)-1], Mean: sum / float64(len(xs))}
}
