package loadgen

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"time"

	"github.com/ratelab/ratelab/mock"
)

// The oracle is the ideal a row is measured against: the wall time of the
// best any client could do, which knows every limit and every change of
// it. It is a small discrete-event computation over the scenario's items
// and the embedded mock's limits; OracleAssumptions says what it assumes.

// OracleAssumptions returns what the scenario's oracle assumes, a line
// each, for the report; nil when it has no oracle.
func (s *Scenario) OracleAssumptions() []string {
	if s.OracleSeconds() == 0 {
		return nil
	}
	if s.Target != nil {
		return []string{"the file's oracle: calls of oracle.call_time, at most oracle.limit in flight per key, each no earlier than its arrival; the target's own limits are not known"}
	}
	return oracleAssumptions
}

// oracleAssumptions are the oracle's assumptions against the embedded
// mock, as the report prints them under the table.
var oracleAssumptions = []string{
	"every call takes its group's mean call time (ttft + ttft_per_input_token × prompt tokens + mean output × per_token, or oracle.call_time): no jitter, faults, retries or prompt-cache savings",
	"a call starts as soon as every limit admits it (per key, per model pool or Azure deployment, and the organization's over all keys: max_concurrent, rpm, tpm, itpm, otpm with their burst; capacity.max_concurrent over all keys; a call above long_context.threshold_tokens passes its key's max_concurrent and its key's long-context limits instead), items of a key in file order, each no earlier than its arrival",
	"schedule: entries change the limits at their time, counted from the first call",
	"acceleration: a scope with one starts at most max(floor, factor × the previous minute's starts) in any minute, in one-second steps from its first call (the key's ramp counts its long-context calls too); quotas are not modelled",
}

// OracleSeconds returns the time the best client would take for the whole
// batch (see OracleAssumptions), or 0 when no limit bounds it. oracle.limit
// and oracle.call_time, when set, replace the mock's concurrency cap (for
// the whole run, whatever the schedule) and the call time. With a target,
// only the file's oracle counts: oracle.limit waves of oracle.call_time per
// key, arrivals included.
func (s *Scenario) OracleSeconds() float64 {
	o := Oracle{}
	if s.Oracle != nil {
		o = *s.Oracle
	}
	sim := oracleSim{embedded: s.Target == nil, fixedLimit: o.Limit}
	if sim.embedded {
		sim.server = &s.Server
		if !hasLimits(sim.server) && o.Limit == 0 {
			return 0
		}
	} else if o.Limit == 0 {
		return 0
	}
	for _, g := range s.Groups() {
		in := estimatePromptTokens(g)
		maxTokens := g.meanMaxTokens()
		out := outputTokens(&s.Server, maxTokens)
		call := o.CallTime
		if call == 0 && sim.embedded {
			call = callTime(&s.Server, in, maxTokens)
		}
		if call <= 0 {
			return 0 // calls of no duration: no ideal to compare with
		}
		sim.classes = append(sim.classes, &oracleClass{
			key: g.APIKey, model: g.Model, provider: g.Provider, count: g.Count, call: call.Seconds(),
			input: float64(in), reserve: float64(maxTokens), output: float64(out),
			charge: float64(max(in, maxTokens)),
		})
	}
	var arrive func() float64
	if s.Arrival != nil {
		sched := newSchedule(s.Arrival, s.Seed)
		arrive = func() float64 { return sched.next().Seconds() }
	}
	return sim.run(arrive)
}

// hasLimits reports whether any limit of c can make a call wait.
func hasLimits(c *ServerConfig) bool {
	bounds := func(l mock.Limits) bool {
		return l.MaxConcurrent > 0 || l.RPM > 0 || l.TPM > 0 || l.ITPM > 0 || l.OTPM > 0 || l.Acceleration.Factor > 0
	}
	if bounds(c.Limits) || c.Capacity.MaxConcurrent > 0 || len(c.LimitsByModel) > 0 ||
		bounds(c.Organization.Limits) || c.LongContext.ThresholdTokens > 0 && bounds(c.LongContext.Limits) {
		return true
	}
	for _, d := range c.Azure.Deployments {
		if bounds(d.Limits) {
			return true
		}
	}
	for _, e := range c.Schedule {
		p := e.Limits
		if p.MaxConcurrent != nil || p.RPM != nil || p.TPM != nil || p.ITPM != nil || p.OTPM != nil || p.Acceleration != nil {
			return true
		}
	}
	return false
}

// oracleClass is one item group's items: identical calls of one key.
type oracleClass struct {
	key, model, provider string
	count                int     // items in all
	arrived              int     // of them arrived so far
	started              int     // of them started
	call                 float64 // seconds
	// per call: input tokens, output reserved (max_tokens), output
	// produced, and OpenAI's tpm charge, max(input, max_tokens)
	input, reserve, output, charge float64
	// keyScope is the key's: its max_concurrent (keyCap) always, its
	// buckets unless long. levels are the other scopes the server's
	// admitLevels gives the call: the key's long-context instance for a
	// long one, else its model pool's or deployment's instance and the
	// organization's (shared by every key).
	keyScope *oracleScope
	long     bool
	levels   []*oracleScope
}

// oracleScope is the admission state of one API key, one key's model
// pool, deployment or long-context instance, or the organization: calls
// in flight, per-minute buckets and the acceleration ramp.
type oracleScope struct {
	inFlight             int
	limit                int // max_concurrent of a scope other than a key's (keyCap); 0: none
	rpm, tpm, itpm, otpm oracleBucket
	ramp                 oracleRamp
}

// oracleRamp is a scope's acceleration ramp, as the mock's
// (mock/internal/admission/accel.go): the calls started in each second
// since the scope's first, of which any minute (60 one-second steps, the
// current one included) may hold max(Floor, Factor × the minute before's).
type oracleRamp struct {
	a      mock.Acceleration
	epoch  float64 // the first start; NaN before it
	counts []int   // starts by second since epoch
}

func (r *oracleRamp) on() bool { return r.a.Factor > 0 }

// second is now's one-second step since the epoch (0 before the first start).
func (r *oracleRamp) second(now float64) int {
	if r.counts == nil {
		return 0
	}
	return int(math.Floor(now - r.epoch + oracleEpsilon))
}

// room returns how many calls may start in second s.
func (r *oracleRamp) room(s int) int {
	sum := func(from, to int) int { // seconds [from, to]
		n := 0
		for i := max(from, 0); i <= to && i < len(r.counts); i++ {
			n += r.counts[i]
		}
		return n
	}
	cur, prev := sum(s-59, s), sum(s-119, s-60)
	return max(r.a.Floor, int(r.a.Factor*float64(prev))) - cur
}

// wait returns how long until a call may start (0: now).
func (r *oracleRamp) wait(now float64) float64 {
	if !r.on() || r.counts == nil {
		return 0
	}
	s := r.second(now)
	for k := 0; k <= 120; k++ {
		if r.room(s+k) >= 1 {
			if k == 0 {
				return 0
			}
			return r.epoch + float64(s+k) - now
		}
	}
	return 120 // unreachable: within two minutes every start has aged out
}

// add counts a call started at now.
func (r *oracleRamp) add(now float64) {
	if !r.on() {
		return
	}
	if r.counts == nil {
		r.epoch, r.counts = now, []int{}
	}
	s := r.second(now)
	for len(r.counts) <= s {
		r.counts = append(r.counts, 0)
	}
	r.counts[s]++
}

// oracleBucket is a per-minute token bucket, refilled continuously, as the
// mock's: a call larger than its capacity is admitted when the bucket is
// full and takes it below zero.
type oracleBucket struct {
	perSecond, capacity, level float64
}

// resize makes the bucket perMinute with burst, keeping its level (capped
// at the new capacity); a bucket that appears starts full.
func (b *oracleBucket) resize(perMinute int, burst time.Duration, l mock.Limits) {
	if perMinute <= 0 {
		*b = oracleBucket{}
		return
	}
	was := b.perSecond > 0
	l.Burst = burst
	b.perSecond, b.capacity = float64(perMinute)/60, l.BurstSize(perMinute)
	if !was {
		b.level = b.capacity
	}
	b.level = math.Min(b.level, b.capacity)
}

func (b *oracleBucket) on() bool { return b.perSecond > 0 }

// wait returns how long until n tokens may be taken (0: now).
func (b *oracleBucket) wait(n float64) float64 {
	if !b.on() {
		return 0
	}
	n = math.Min(n, b.capacity)
	if b.level >= n-oracleTokenSlack {
		return 0
	}
	return (n - b.level) / b.perSecond
}

func (b *oracleBucket) take(n float64) {
	if b.on() {
		b.level -= n
	}
}

func (b *oracleBucket) give(n float64) {
	if b.on() {
		b.level = math.Min(b.capacity, b.level+n)
	}
}

func (b *oracleBucket) advance(dt float64) {
	if b.on() {
		b.level = math.Min(b.capacity, b.level+dt*b.perSecond)
	}
}

// oracleEpsilon absorbs float error in event times (seconds), and
// oracleTokenSlack in bucket levels (tokens).
const (
	oracleEpsilon    = 1e-9
	oracleTokenSlack = 1e-6
)

type oracleSim struct {
	embedded   bool
	server     *ServerConfig // nil with a target
	fixedLimit int           // oracle.limit, 0 for the mock's
	classes    []*oracleClass

	limits   mock.Limits // the key limits in force
	next     int         // the next schedule entry
	keys     map[string]*oracleScope
	pools    map[string]*oracleScope // a key's pool instances, by kind + key + "\x00" + name
	org      *oracleScope            // the organization's, nil for none
	inFlight int                     // over all keys
	ends     oracleEnds
}

// levels returns the scopes c's calls pass besides their key's, as the
// server's admitLevels (mock/handle.go) picks them, adding those new.
func (sim *oracleSim) levels(c *oracleClass) []*oracleScope {
	if sim.server == nil {
		return nil
	}
	cfg := sim.server
	instance := func(kind, name string, l mock.Limits) *oracleScope {
		id := kind + c.key + "\x00" + name
		s := sim.pools[id]
		if s == nil {
			s = newOracleScope(l)
			sim.pools[id] = s
		}
		return s
	}
	if lc := cfg.LongContext; lc.ThresholdTokens > 0 && c.input > float64(lc.ThresholdTokens) {
		c.long = true
		return []*oracleScope{instance("l\x00", "", lc.Limits)}
	}
	var lv []*oracleScope
	if org := cfg.Organization.Limits; org != (mock.Limits{}) {
		if sim.org == nil {
			sim.org = newOracleScope(org)
		}
		lv = append(lv, sim.org)
	}
	model := c.model
	if d, ok := cfg.Azure.Deployments[c.model]; ok && c.provider == "azure-openai" {
		if d.Limits != (mock.Limits{}) {
			return append(lv, instance("d\x00", c.model, d.Limits))
		}
		model = d.Model
	}
	if p := mock.PoolFor(cfg.LimitsByModel, model); p != "" {
		lv = append(lv, instance("p\x00", p, cfg.LimitsByModel[p]))
	}
	return lv
}

func newOracleScope(l mock.Limits) *oracleScope {
	s := &oracleScope{limit: l.MaxConcurrent}
	s.resize(l)
	return s
}

// run computes the oracle: arrive yields the arrival offsets of items in
// file order (nil: every item is there at 0).
func (sim *oracleSim) run(arrive func() float64) float64 {
	sim.keys = make(map[string]*oracleScope)
	sim.pools = make(map[string]*oracleScope)
	if sim.server != nil {
		sim.limits = sim.server.Limits
	}
	total := 0
	for _, c := range sim.classes {
		total += c.count
		if c.keyScope = sim.keys[c.key]; c.keyScope == nil {
			c.keyScope = &oracleScope{}
			sim.keys[c.key] = c.keyScope
		}
		c.levels = sim.levels(c)
	}
	sim.resizeKeys()
	// Arrivals, in file order: class ci's items are numbered after the
	// classes before it.
	nextArrival, ai, ci := math.Inf(1), 0, 0
	if arrive == nil {
		for _, c := range sim.classes {
			c.arrived = c.count
		}
	} else if total > 0 {
		nextArrival = arrive()
	}
	order := slices.Clone(sim.classes) // sim.classes stays in file order, for arrivals
	now, last, done := 0.0, 0.0, 0
	for done < total {
		sim.applySchedule(now)
		for sim.ends.Len() > 0 && sim.ends[0].at <= now+oracleEpsilon {
			e := heap.Pop(&sim.ends).(oracleEnd)
			sim.finish(e)
			done += e.n
			last = math.Max(last, e.at)
		}
		for nextArrival <= now+oracleEpsilon {
			for ci < len(sim.classes) && sim.classes[ci].arrived == sim.classes[ci].count {
				ci++
			}
			sim.classes[ci].arrived++
			if ai++; ai < total {
				nextArrival = arrive()
			} else {
				nextArrival = math.Inf(1)
			}
		}
		// Start every call the limits admit now, the classes with the
		// longest tail first; note when a bucket would admit the next one.
		slices.SortStableFunc(order, func(a, b *oracleClass) int { return cmp.Compare(sim.tail(b), sim.tail(a)) })
		wake := math.Inf(1)
		for _, c := range order {
			if n := sim.startable(c); n > 0 {
				sim.start(c, n, now)
			}
			if c.started < c.arrived {
				if w := sim.bucketWait(c, now); w > 0 {
					wake = math.Min(wake, now+w)
				}
			}
		}
		if done == total {
			break
		}
		at := math.Min(wake, nextArrival)
		if sim.ends.Len() > 0 {
			at = math.Min(at, sim.ends[0].at)
		}
		if sim.server != nil && sim.next < len(sim.server.Schedule) {
			at = math.Min(at, sim.server.Schedule[sim.next].At.Seconds())
		}
		if math.IsInf(at, 1) {
			return 0 // nothing can ever start: a limit of 0 calls
		}
		// A step shorter than float resolution at now would not move
		// time: take at least oracleEpsilon.
		at = math.Max(at, now+oracleEpsilon)
		sim.advance(at - now)
		now = at
	}
	return last
}

// applySchedule applies the schedule entries due at now.
func (sim *oracleSim) applySchedule(now float64) {
	if sim.server == nil {
		return
	}
	changed := false
	for sim.next < len(sim.server.Schedule) && sim.server.Schedule[sim.next].At.Seconds() <= now+oracleEpsilon {
		sim.limits = sim.server.Schedule[sim.next].Limits.Apply(sim.limits)
		sim.next++
		changed = true
	}
	if changed {
		sim.resizeKeys()
	}
}

func (sim *oracleSim) resizeKeys() {
	for _, k := range sim.keys {
		k.resize(sim.limits)
	}
}

func (s *oracleScope) resize(l mock.Limits) {
	s.rpm.resize(l.RPM, l.Burst, l)
	s.tpm.resize(l.TPM, l.Burst, l)
	s.itpm.resize(l.ITPM, l.Burst, l)
	s.otpm.resize(l.OTPM, l.Burst, l)
	s.ramp.a = l.Acceleration
}

func (s *oracleScope) advance(dt float64) {
	s.rpm.advance(dt)
	s.tpm.advance(dt)
	s.itpm.advance(dt)
	s.otpm.advance(dt)
}

func (sim *oracleSim) advance(dt float64) {
	if dt <= 0 {
		return
	}
	for _, k := range sim.keys {
		k.advance(dt)
	}
	for _, p := range sim.pools {
		p.advance(dt)
	}
	if sim.org != nil {
		sim.org.advance(dt)
	}
}

// keyCap is the concurrency cap per key in force (0: none).
func (sim *oracleSim) keyCap() int {
	if sim.fixedLimit > 0 {
		return sim.fixedLimit
	}
	if !sim.embedded {
		return 0
	}
	return sim.limits.MaxConcurrent
}

// tail is how long c's calls not yet started would take at its own
// concurrency cap: a class that shares its key's slots with others but has
// a tighter cap of its own (a model pool) goes first, so that its calls
// overlap the others' rather than follow them.
func (sim *oracleSim) tail(c *oracleClass) float64 {
	left := c.count - c.started
	if left == 0 {
		return 0
	}
	limit := sim.keyCap()
	for _, s := range c.levels {
		if s.limit > 0 && (limit == 0 || s.limit < limit) {
			limit = s.limit
		}
	}
	if limit == 0 {
		limit = left
	}
	return float64((left+limit-1)/limit) * c.call
}

// startable returns how many of c's waiting calls the concurrency caps
// and the buckets admit now, at most.
func (sim *oracleSim) startable(c *oracleClass) int {
	n := c.arrived - c.started
	capLeft := func(limit, inFlight int) {
		if limit > 0 {
			n = min(n, max(limit-inFlight, 0))
		}
	}
	capLeft(sim.keyCap(), c.keyScope.inFlight)
	if sim.server != nil {
		capLeft(sim.server.Capacity.MaxConcurrent, sim.inFlight)
	}
	for _, s := range c.levels {
		capLeft(s.limit, s.inFlight)
	}
	return n
}

// bucketed returns the scopes whose buckets c's calls are charged to:
// their key's (unless long-context) and their levels.
func (c *oracleClass) bucketed() []*oracleScope {
	if c.long {
		return c.levels
	}
	return append([]*oracleScope{c.keyScope}, c.levels...)
}

// ramped returns the scopes whose acceleration ramps c's calls pass: their
// key's (long-context calls too, as the mock's Unbucketed demand) and
// their levels.
func (c *oracleClass) ramped() []*oracleScope {
	return append([]*oracleScope{c.keyScope}, c.levels...)
}

// bucketWait returns how long until every bucket and ramp of c's scopes
// admits one more of its calls at now (0: now).
func (sim *oracleSim) bucketWait(c *oracleClass, now float64) float64 {
	w := 0.0
	for _, s := range c.bucketed() {
		w = max(w, s.rpm.wait(1), s.tpm.wait(c.charge), s.itpm.wait(c.input), s.otpm.wait(c.reserve))
	}
	for _, s := range c.ramped() {
		w = max(w, s.ramp.wait(now))
	}
	return w
}

// start starts up to n of c's calls at now, one at a time while the
// buckets admit them.
func (sim *oracleSim) start(c *oracleClass, n int, now float64) {
	started := 0
	for started < n && sim.bucketWait(c, now) == 0 {
		for _, s := range c.levels {
			s.inFlight++
		}
		c.keyScope.inFlight++
		for _, s := range c.bucketed() {
			s.rpm.take(1)
			s.tpm.take(c.charge)
			s.itpm.take(c.input)
			s.otpm.take(c.reserve)
		}
		for _, s := range c.ramped() {
			s.ramp.add(now)
		}
		sim.inFlight++
		started++
	}
	if started > 0 {
		c.started += started
		heap.Push(&sim.ends, oracleEnd{at: now + c.call, c: c, n: started})
	}
}

// finish ends e's calls: their slots are freed and their output
// reservations settled.
func (sim *oracleSim) finish(e oracleEnd) {
	for _, s := range e.c.levels {
		s.inFlight -= e.n
	}
	e.c.keyScope.inFlight -= e.n
	for _, s := range e.c.bucketed() {
		s.otpm.give(float64(e.n) * math.Max(e.c.reserve-e.c.output, 0))
	}
	sim.inFlight -= e.n
}

// oracleEnd is n calls of c that end at at.
type oracleEnd struct {
	at float64
	c  *oracleClass
	n  int
}

type oracleEnds []oracleEnd

func (h oracleEnds) Len() int           { return len(h) }
func (h oracleEnds) Less(i, j int) bool { return h[i].at < h[j].at }
func (h oracleEnds) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *oracleEnds) Push(x any)        { *h = append(*h, x.(oracleEnd)) }
func (h *oracleEnds) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
