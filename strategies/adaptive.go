package strategies

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ratelab/ratelab/clock"
)

// AdaptiveConfig configures an Adaptive strategy. A zero field takes the
// default given with it.
type AdaptiveConfig struct {
	// Initial is the window of a key at the start of slow start. Default 4.
	Initial int `json:"initial" yaml:"initial"`
	// Min and Max clamp the window. Defaults 1 and no bound above (the
	// window grows only while it is full, so never far above the callers):
	// a Max below the server's limit holds the run below it, and Stats.Bound
	// says so.
	Min int `json:"min" yaml:"min"`
	Max int `json:"max" yaml:"max"`
	// Decrease is the share of the learned limit the window drops to after a
	// throttle. Default 0.9.
	Decrease float64 `json:"decrease" yaml:"decrease"`
	// Growth is the factor slow start grows the window by per round trip
	// while it is full (per second before the first success gives a round
	// trip). Default 16. Overshooting costs little: the window grows only
	// while full and one call at a time, so slow start ends at its first
	// refusal with the calls sent while that refusal was on its way back,
	// and the refusal tells the limit (see the package documentation).
	Growth float64 `json:"growth" yaml:"growth"`
	// ProbeAfter is how many round trips the window holds at the learned
	// limit, after a throttle, before it tries one call above it. Default 3.
	ProbeAfter float64 `json:"probe_after" yaml:"probe_after"`
	// Fleet, if set, shares each key's learned limit with the other
	// processes calling the provider with the same key (see Fleet): each
	// key's window is capped at this process's share of the fleet's limit
	// (the fleet's limit over the processes sharing it, at least 1), what
	// this process learns of the limit is published to the fleet, and only
	// the holder of the fleet's probe token probes above its share. nil:
	// each process learns its own limit.
	Fleet Fleet `json:"-" yaml:"-"`
}

// withDefaults returns c with its zero fields set to the defaults and Initial
// clamped to [Min, Max].
func (c AdaptiveConfig) withDefaults() AdaptiveConfig {
	c.Initial, c.Min, c.Max = windowDefaults(c.Initial, c.Min, c.Max)
	if c.Decrease <= 0 || c.Decrease > 1 {
		c.Decrease = 0.9
	}
	if c.ProbeAfter <= 0 {
		c.ProbeAfter = 3
	}
	if c.Growth <= 1 {
		c.Growth = 16
	}
	return c
}

// defaultRTT is the round trip Adaptive assumes before its first success.
const defaultRTT = time.Second

// Adaptive is ratelab's own strategy for a provider whose limit is not
// published: it finds the limit in a few round trips, sits just under it, and
// follows it when it moves. Each key (Cost.Provider and Cost.Key) has its own
// window, learned limit and retry-after gate.
//
// How it learns (the control law, its budgets, its round trip, its saved
// state) and when to use it are in the package documentation, section
// "Adaptive".
//
// Callers of a key are admitted in arrival order. Stats reports Limit as the
// sum over keys of the calls admitted at once (Initial before the first
// call); events are EventLimit, EventGateClose and EventGateOpen. Each permit
// is granted with the key's attempts in flight, itself included, at most the
// key's limit at that moment; a permit keeps its slot (and its retries
// inside it) if the window later shrinks below the permits out. It is safe
// for concurrent use.
type Adaptive struct {
	cfg  AdaptiveConfig
	clk  clock.Clock
	m    meter
	mu   sync.Mutex
	keys map[limitKey]*adaptiveKey
	// order is keys' values in the order of their first use: what is
	// published from them (the limit's bound, the tokens' sum, events of
	// one instant) does not depend on a map's order, so a simulated run
	// repeats exactly.
	order []*adaptiveKey
}

var _ Strategy = (*Adaptive)(nil)

// limitKey identifies the limit a call counts against.
type limitKey struct{ provider, key string }

// adaptiveKey is one key's law and line of callers.
type adaptiveKey struct {
	law  adaptiveLaw
	line *line
}

// NewAdaptive returns an Adaptive strategy configured by cfg.
func NewAdaptive(cfg AdaptiveConfig, opts ...Option) *Adaptive {
	o := newOptions(opts)
	a := &Adaptive{cfg: cfg.withDefaults(), clk: o.clock, keys: make(map[limitKey]*adaptiveKey)}
	a.m.init(o)
	a.m.set(func(st *Stats) { st.Limit = float64(a.cfg.Initial) })
	return a
}

// keyLocked returns the state of key k, creating it on first use.
func (a *Adaptive) keyLocked(k limitKey) *adaptiveKey {
	ak, ok := a.keys[k]
	if !ok {
		ak = &adaptiveKey{law: newAdaptiveLaw(a.cfg), line: newLine(a.clk)}
		a.keys[k] = ak
		a.order = append(a.order, ak)
	}
	return ak
}

// Acquire waits, in arrival order among the callers of c's key, until the
// key's gate is open and its window has room, or until ctx ends.
func (a *Adaptive) Acquire(ctx context.Context, c Cost) (Permit, error) {
	k := limitKey{c.Provider, c.Key}
	a.mu.Lock()
	ak := a.keyLocked(k)
	a.mu.Unlock()

	var (
		at    adaptiveAttempt
		limit int
	)
	w, err := ak.line.wait(ctx, &a.m, &a.mu, func(now time.Time) (bool, time.Duration, bool) {
		a.syncFleetLocked(now, k, ak)
		ak.law.queued = ak.line.queued()
		ok, d, gated := ak.law.admit(now, c)
		if ok {
			limit = ak.law.capacity(now)
			at = ak.law.dispatch(now, c)
		}
		a.publishLocked(now)
		return ok, d, gated
	})
	if err != nil {
		return nil, err
	}
	finish := func(o Outcome, done bool) {
		a.mu.Lock()
		defer a.mu.Unlock()
		now := a.clk.Now()
		ak.law.queued = ak.line.queued()
		at = ak.law.finish(now, at, o, done)
		a.syncFleetLocked(now, k, ak)
		a.publishLocked(now)
		ak.line.notifyLocked()
	}
	return &windowPermit{newPermit(&a.m, w,
		func(o Outcome) { finish(o, false) },
		func(o Outcome) { finish(o, true) }), limit}, nil
}

// windowPermit is the permit of a strategy whose window may shrink below the
// permits already granted: it remembers the window it was granted under.
type windowPermit struct {
	*permit
	limit int // the calls admitted at once when it was granted
}

// grantLimit returns the limit in force when the permit was granted: the
// permits out at that moment, this one included, were at most that many.
func (p *windowPermit) grantLimit() int { return p.limit }

// Stats implements Strategy.
func (a *Adaptive) Stats() Stats {
	a.mu.Lock()
	a.publishLocked(a.clk.Now())
	a.mu.Unlock()
	return a.m.snapshot()
}

// publishLocked sets the Limit gauge and emits the keys' pending events.
func (a *Adaptive) publishLocked(now time.Time) {
	total := 0
	bound := ""
	tokens := 0.0
	var batch []Event
	for _, ak := range a.order {
		ak.law.queued = ak.line.queued()
		c := ak.law.show(now)
		total += c
		tokens += ak.law.tokensAvailable(now)
		if b := windowBound(c, a.cfg.Min, a.cfg.Max); b != "" {
			bound = b
		}
		batch = append(batch, ak.law.events...)
		ak.law.events = ak.law.events[:0]
	}
	if len(a.keys) == 0 {
		total = a.cfg.Initial
	}
	a.m.set(func(st *Stats) { st.Limit, st.Bound, st.Tokens = float64(total), bound, tokens })
	// Each key's events are in order and none is dated before the last
	// publication; merge the keys'.
	slices.SortStableFunc(batch, func(x, y Event) int { return x.Time.Compare(y.Time) })
	for _, e := range batch {
		a.m.emit(e)
	}
}

// adaptiveAttempt is what adaptiveLaw remembers of an attempt in flight.
type adaptiveAttempt struct {
	seq   uint64    // dispatch number
	batch uint64    // the dispatch number of the first sent at the same instant
	n     int       // the key's attempts in flight at dispatch, this one included
	probe bool      // dispatched above the learned limit
	start time.Time // dispatch time
	// The key's success and throttle counts at dispatch, to tell what ended
	// while this attempt was under way.
	successes, throttles uint64
	// What the attempt takes from each published budget, what the law's
	// copy held before the calls sent with it, and whether there was a copy.
	cost, seen [numDims]float64
	has        [numDims]bool
	// sentThrough is the cost of the key's dispatches up to this one,
	// itself included (rateLearner.sent).
	sentThrough [numDims]float64
}

// adaptiveLaw is Adaptive's control law for one key (see Adaptive): a pure
// function of the times, dispatches and outcomes it is given.
type adaptiveLaw struct {
	cfg       AdaptiveConfig
	fleet     fleetState // what the law knows of its Fleet, if any
	window    float64
	limit     int // learned limit; 0 while unknown
	slowStart bool
	// land is whether the last congestion event ended slow start: its
	// refusals set the window to the count they tell, not Decrease times it.
	land      bool
	inFlight  int
	starts    []time.Time // dispatch times of the attempts in flight, in order
	seq       uint64      // dispatches so far
	cut       uint64      // the last attempt dispatched before the last decrease
	probe     uint64      // the probe in flight, by number; 0 if none
	successes uint64
	throttles uint64
	srtt      time.Duration // smoothed round trip; 0 before the first success
	probeAt   time.Time     // when a probe above limit may go
	// refused counts the probes refused at the learned limit since it was
	// last set: each one doubles the hold before the next (hold).
	refused int
	// queued is the key's callers waiting in line, as the caller admitting
	// or finishing last saw them; retryAfter is the delay of the key's last
	// refusal by the window's limit, what a refused probe costs its call.
	// A probe goes only while the queue outlasts that cost (probeWorth).
	queued     int
	retryAfter time.Duration
	gate       gate
	last       time.Time // when the window last grew (or was found not to); zero before the first call
	shown      int       // the capacity last reported in an event
	events     []Event

	// budgets are the law's copies of the budgets the headers publish,
	// nil while one is not; synced is the attempt whose response last set
	// each, by number; batchSeen is what each held before the calls sent
	// at lastDispatch.
	budgets   [numDims]*budgetCopy
	synced    [numDims]uint64
	batchSeen [numDims]float64
	// batch is the first dispatch at lastDispatch, the time of the last.
	batch        uint64
	lastDispatch time.Time

	// rate learns the rates an unpublished budget allows from the key's
	// 429s, and paces by learned copies in budgets (rateLearner).
	rate rateLearner
}

func newAdaptiveLaw(cfg AdaptiveConfig) adaptiveLaw {
	cfg = cfg.withDefaults()
	return adaptiveLaw{cfg: cfg, window: float64(cfg.Initial), slowStart: true}
}

// rtt returns the round-trip estimate.
func (l *adaptiveLaw) rtt() time.Duration {
	if l.srtt <= 0 {
		return defaultRTT
	}
	return l.srtt
}

// hold returns how long the window holds at the limit before a probe:
// ProbeAfter round trips, doubling with each probe refused at the limit
// from the second on (a confirmed limit is probed ever more rarely, until
// a refusal or a probe held sets it anew), up to the longer of 2 ×
// ProbeAfter round trips and the hold that keeps refused probes within
// probeBudget of the limit's calls: a small limit, whose probes are a
// large share of its calls (2 calls a round trip: one in 6), is probed
// within 1/(probeBudget × limit) round trips, a limit of 10 or more still
// within 2 × ProbeAfter, so a rise is found within that and a few more.
func (l *adaptiveLaw) hold() time.Duration {
	h := l.cfg.ProbeAfter * float64(l.rtt())
	if l.refused >= 2 {
		most := 2 * h
		if l.limit > 0 {
			most = max(most, float64(l.rtt())/(probeBudget*float64(l.limit)))
		}
		h = min(h*math.Pow(2, float64(l.refused-1)), most)
	}
	return time.Duration(h)
}

// probeBudget is the share of a confirmed limit's calls that its refused
// probes may cost (hold).
const probeBudget = 0.02

// probeWorth reports whether a probe above the learned limit is worth its
// price: refused, its call waits out the server's retry-after. It is while
// the callers waiting in line keep the key busy at the limit for longer than
// that wait and one more round trip, so that the refused call's retry is not
// the last to finish; with no retry-after seen, always.
func (l *adaptiveLaw) probeWorth() bool {
	if l.retryAfter <= 0 || l.limit <= 0 {
		return true
	}
	busy := time.Duration(float64(l.queued) / float64(l.limit) * float64(l.rtt()))
	return busy >= l.retryAfter+l.rtt()
}

// rateWindow returns the calls a published requests-per-minute limit starts
// per round trip. 0 when none is published.
func (l *adaptiveLaw) rateWindow() int {
	r := l.budgets[dimRequests]
	if r == nil {
		return 0
	}
	return max(1, int(math.Ceil(float64(r.limit)/60*l.rtt().Seconds())))
}

// capacity returns how many attempts may be in flight at now.
func (l *adaptiveLaw) capacity(now time.Time) int {
	c := int(l.window)
	if l.limit > 0 && c >= l.limit {
		c = l.limit
		if !now.Before(l.probeAt) && l.probeAllowed() && l.probeWorth() {
			c++
		}
	}
	return min(max(c, l.cfg.Min), l.cfg.Max)
}

// top returns how far the window may grow with what is in flight now: to one
// above the calls in flight (past that the window is no longer full), and
// no further than the learned limit and Max.
func (l *adaptiveLaw) top() float64 {
	t := float64(min(l.inFlight+1, l.cfg.Max))
	if l.limit > 0 {
		t = min(t, float64(l.limit))
	}
	return t
}

// grown returns the window after growing for d from w while full: Growth
// times per round trip in slow start, one more per round trip after it.
func (l *adaptiveLaw) grown(w float64, d time.Duration) float64 {
	x := float64(d) / float64(l.rtt())
	if l.slowStart {
		return w * math.Pow(l.cfg.Growth, x)
	}
	return w + x
}

// grow advances the window from the last call of the law to now. In that
// time nothing changed but the time, so the window was full throughout if it
// is full now; it grows only for the part of it that the gate was open.
func (l *adaptiveLaw) grow(now time.Time) {
	from := l.last
	if from.IsZero() || now.After(from) {
		l.last = now
	}
	if from.IsZero() || !now.After(from) {
		return
	}
	from = maxTime(from, l.gate.until)
	if !now.After(from) || l.inFlight < int(l.window) {
		return
	}
	top := l.top()
	if l.window >= top {
		return
	}
	w := min(l.grown(l.window, now.Sub(from)), top)
	// The admission timer (untilGrowth) wakes at the time the window reaches
	// the next whole call; do not let rounding leave it a hair short.
	if r := math.Round(w); r > w && r-w < 1e-6 {
		w = r
	}
	l.window = w
	reason := "increase"
	if l.slowStart {
		reason = "slow start"
	}
	l.note(now, reason)
}

// untilGrowth returns how long until the window, growing while full, admits
// one more call; 0 if it cannot grow.
func (l *adaptiveLaw) untilGrowth() time.Duration {
	next := math.Floor(l.window) + 1
	if l.inFlight < int(l.window) || next > l.top() {
		return 0
	}
	var x float64 // round trips
	if l.slowStart {
		x = math.Log(next/l.window) / math.Log(l.cfg.Growth)
	} else {
		x = next - l.window
	}
	return max(time.Duration(math.Ceil(x*float64(l.rtt()))), time.Nanosecond)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// admit decides whether an attempt may start at now. If not, wait is how long
// until that may change by itself (0: only when an attempt ends), and gated
// says that the retry-after gate holds it.
func (l *adaptiveLaw) admit(now time.Time, c Cost) (ok bool, wait time.Duration, gated bool) {
	l.tick(now)
	l.grow(now)
	if d := l.gate.wait(now); d > 0 {
		return false, d, true
	}
	if l.inFlight < l.capacity(now) {
		if d := l.untilBudgets(now, dimCosts(c)); d > 0 {
			return false, d, false
		}
		return true, 0, false
	}
	wait = l.untilGrowth()
	if l.limit > 0 && now.Before(l.probeAt) && l.inFlight < l.capacity(l.probeAt) && !l.fleet.on {
		if d := l.probeAt.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	return false, wait, false
}

// dispatch records an attempt starting at now and returns it. The caller
// has called admit (or finish) at now.
func (l *adaptiveLaw) dispatch(now time.Time, c Cost) adaptiveAttempt {
	return l.dispatchCost(now, dimCosts(c))
}

// dispatchCost is dispatch for an attempt whose costs in each budget are
// cost.
func (l *adaptiveLaw) dispatchCost(now time.Time, cost [numDims]float64) adaptiveAttempt {
	l.seq++
	newBatch := l.seq == 1 || !now.Equal(l.lastDispatch)
	if newBatch {
		l.batch, l.lastDispatch = l.seq, now
	}
	l.inFlight++
	l.starts = append(l.starts, now)
	a := adaptiveAttempt{
		seq:       l.seq,
		batch:     l.batch,
		n:         l.inFlight,
		probe:     l.limit > 0 && l.inFlight > l.limit,
		start:     now,
		successes: l.successes,
		throttles: l.throttles,
		cost:      cost,
	}
	for d := range cost {
		l.rate.sent[d] += cost[d]
	}
	a.sentThrough = l.rate.sent
	l.takeBudgets(now, &a, newBatch)
	if a.probe {
		l.probe = a.seq
	}
	return a
}

// finish learns from attempt a ending at now with o. With done false the
// permit is kept for another attempt (a retry inside the slot), which finish
// records as dispatched now and returns.
func (l *adaptiveLaw) finish(now time.Time, a adaptiveAttempt, o Outcome, done bool) adaptiveAttempt {
	l.tick(now)
	l.grow(now)
	// Ours in flight sent after a (not at the same instant: those may have
	// reached the server first).
	i, _ := slices.BinarySearchFunc(l.starts, a.start, func(t, target time.Time) int {
		if t.After(target) {
			return 1
		}
		return -1
	})
	after := len(l.starts) - i
	if j, found := slices.BinarySearchFunc(l.starts, a.start, time.Time.Compare); found {
		l.starts = slices.Delete(l.starts, j, j+1)
	}
	l.inFlight--
	others := l.inFlight
	if a.seq == l.probe {
		l.probe = 0
	}
	l.settleBudgets(now, a, o)
	if o.Kind != Quota {
		// A refusal for a spent quota says nothing of the rate limits,
		// whatever its headers show.
		l.syncBudgets(now, a, o)
	}
	switch o.Kind {
	case Success:
		l.success(now, a, o)
	case Throttled:
		l.throttled(now, a, o, others, after)
	case Overloaded:
		l.overloaded(now, a, o)
	}
	if done {
		return adaptiveAttempt{}
	}
	// The retry holds the slot it had: it is no probe, even if the window
	// has shrunk below the attempts in flight.
	probe := l.probe
	next := l.dispatchCost(now, a.cost)
	next.probe = false
	l.probe = probe
	return next
}

func (l *adaptiveLaw) success(now time.Time, a adaptiveAttempt, o Outcome) {
	l.successes++
	rtt := o.Latency
	if rtt <= 0 {
		rtt = now.Sub(a.start)
	}
	if rtt > 0 {
		if l.srtt <= 0 {
			l.srtt = rtt
		} else {
			l.srtt += (rtt - l.srtt) / 8
		}
	}
	// A probe sent since the last decrease was held with held of ours in
	// flight (the attempts refused meanwhile did not count against the
	// limit): if that is more than the limit, the limit has risen.
	held := a.n - int(l.throttles-a.throttles)
	if a.seq > l.cut {
		l.rate.heldOK = max(l.rate.heldOK, held)
	}
	if a.probe && a.seq > l.cut && held > l.limit {
		l.limit = 0
		l.refused = 0
		l.slowStart = true
		l.window = min(max(l.window, float64(held)), float64(l.cfg.Max))
		if l.fleet.on {
			l.fleet.publish = l.fleetEstimate(held)
		}
		l.note(now, "probe held")
	}
}

// throttled learns from a refusal of a, which arrived with others of ours
// in flight, after of them sent after a.
func (l *adaptiveLaw) throttled(now time.Time, a adaptiveAttempt, o Outcome, others, after int) {
	l.throttles++
	if d, ok := spent(o.Limits); ok {
		// A published budget is spent (syncBudgets has set the copy of
		// it to that): a refusal for a rate, which the window does not
		// answer and which teaches nothing of the calls the server holds
		// at once. The copy holds the next call until the budget has
		// refilled that call's cost, sooner than the server's delay
		// (whole seconds) or the reset (a full bucket), and the refused
		// call waits out its own delay (see Do). A call whose cost in
		// that budget its caller did not give (Cost) cannot be paced by
		// the copy: the gate holds the key's calls for the server's delay.
		if a.cost[d] <= 0 && o.HasRetryAfter {
			l.closeGate(now, now.Add(max(0, o.RetryAfter)), "budget spent")
		}
		return
	}
	if a.probe && a.seq > l.cut && l.limit > 0 {
		// The limit has not risen: stay at it and probe again later. (With
		// no limit, another probe was held since and slow start resumed:
		// this refusal is a congestion event like any other.)
		l.window = min(l.window, float64(l.limit))
		l.refused++
		l.probeAt = now.Add(l.hold())
		l.note(now, "probe refused")
		return
	}
	if o.HasRetryAfter {
		l.retryAfter = max(0, o.RetryAfter)
	}
	// What the server held when it refused a: ours in flight now, plus ours
	// that succeeded meanwhile, except as many as the calls sent after a,
	// which can only have taken the slots those successes freed. Refusals
	// still on their way back inflate it, so a burst keeps the smallest.
	ended := int(l.successes - a.successes)
	raw := others + max(0, ended-after)
	held := max(raw, l.cfg.Min)
	event := a.seq > l.cut
	if event && l.probe != 0 && l.limit > 0 && held >= l.limit {
		// A probe is out and the server held as many as the limit: calls
		// sent together reach the server in any order, and this one was
		// refused in the probe's place. The limit has not risen (the probe
		// that got in counts no more than the limit held); probe later.
		l.probe = 0
		l.window = min(l.window, float64(l.limit))
		l.refused++
		l.probeAt = now.Add(l.hold())
		l.note(now, "probe refused")
		return
	}
	if l.rateRefusal(now, a, o, raw) {
		// The rate's refusal: the learned copies pace the key's calls,
		// and the refused call waits out its own delay (see Do).
		l.note(now, "rate")
		return
	}
	if o.HasRetryAfter && raw == 0 {
		// The window is not the answer: nothing of ours was held. (With
		// calls of ours held, the refusal is this call's alone: it waits
		// out its retry-after and the window answers for the others.)
		l.closeGate(now, now.Add(max(0, o.RetryAfter)), "retry-after")
	}
	if held != l.limit {
		l.refused = 0
	}
	if event {
		// Slow start's first refusal measures the limit: the server held
		// held and refused one more, so the window lands on it. After slow
		// start a refusal may be a rate's as well as a cap's (a window at
		// the count would be refused again): the window drops below it.
		// Refusals of the same event refine the count down the same way.
		l.land = l.slowStart && l.limit == 0
	}
	if event {
		l.cut = l.seq
		l.rate.heldOK = 0
		l.limit = held
		l.slowStart = false
		l.probeAt = now.Add(l.hold())
		if l.fleet.on {
			l.fleet.publish = l.fleetEstimate(held)
		}
	} else if l.limit == 0 || held < l.limit {
		l.limit = held
	}
	target := max(l.cfg.Decrease*float64(held), float64(l.cfg.Min))
	if l.land {
		target = float64(held)
	}
	l.window = min(l.window, target)
	l.note(now, "throttle")
}

func (l *adaptiveLaw) overloaded(now time.Time, a adaptiveAttempt, o Outcome) {
	if o.HasRetryAfter {
		l.closeGate(now, now.Add(max(0, o.RetryAfter)), "overloaded")
	}
	if a.seq > l.cut {
		l.cut = l.seq
		l.slowStart = false
		l.window = max(l.window*l.cfg.Decrease, float64(l.cfg.Min))
		l.probeAt = now.Add(l.hold())
		l.note(now, "overloaded")
	}
}

func (l *adaptiveLaw) closeGate(now, until time.Time, reason string) {
	if l.gate.close(now, until) {
		l.events = append(l.events, Event{Time: now, Type: EventGateClose, Until: until, Reason: reason})
	}
}

// note records an EventLimit if the capacity at now differs from the last
// one reported.
func (l *adaptiveLaw) note(now time.Time, reason string) {
	if c := l.capacity(now); c != l.shown {
		l.shown = c
		l.events = append(l.events, Event{Time: now, Type: EventLimit, Value: float64(c), Reason: reason})
	}
}

// tick records the events that time alone brought by now: the gate opening.
// Every entry point calls it first, so that events stay in time order.
func (l *adaptiveLaw) tick(now time.Time) {
	l.advanceRate(now)
	if l.gate.reopened(now) {
		l.events = append(l.events, Event{Time: l.gate.until, Type: EventGateOpen, Reason: "retry-after"})
	}
}

// show returns the capacity at now, first recording the events that time
// alone brought: the gate opening, the window growing, a probe becoming due.
func (l *adaptiveLaw) show(now time.Time) int {
	l.tick(now)
	l.grow(now)
	l.note(now, "probe due")
	return l.shown
}

// Clock returns the clock the strategy runs on (WithClock).
func (a *Adaptive) Clock() clock.Clock { return a.clk }
