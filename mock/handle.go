package mock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// plan is the timing of an admitted response: token i (1-based) is due at
// start + first + i×perToken. Deadlines are absolute, so waiting errors do
// not accumulate over a stream.
type plan struct {
	start    time.Time
	first    time.Duration // time before token 1's own perToken: ttft, per-input-token part, slow fault
	perToken time.Duration
	n        int  // output tokens
	capped   bool // n == max_tokens
	cutAt    int  // > 0: cut the connection after this many tokens
	failAt   int  // > 0: end with an overloaded error after this many tokens
}

// due is when token i is due.
func (p *plan) due(i int) time.Time {
	return p.start.Add(p.first + time.Duration(i)*p.perToken)
}

// dueBy is how many tokens are due at now, at most p.n.
func (p *plan) dueBy(now time.Time) int {
	if p.perToken <= 0 {
		if now.Before(p.start.Add(p.first)) {
			return 0
		}
		return p.n
	}
	elapsed := now.Sub(p.start) - p.first
	if elapsed < 0 {
		return 0
	}
	return int(min(int64(p.n), int64(elapsed/p.perToken)))
}

// cutShort is how many tokens were produced when the wait for token i
// ended early at now (the client went away), emitted of them sent.
func (p *plan) cutShort(i, emitted int, now time.Time) int {
	return min(i-1, max(emitted, p.dueBy(now)))
}

// decision is what admission decided about one attempt.
type decision struct {
	status     int // 0: admitted
	err        wire.APIError
	retryAfter time.Duration // sent as retry-after when > 0
	noRetry    bool          // send x-should-retry: false
	// shouldRetry, when set and noRetry is not, is sent as x-should-retry.
	shouldRetry *bool
	// exactWait is sent as retry-after-ms (its whole milliseconds plus
	// one) when withMS is set: Limits.RetryAfterMS.
	exactWait time.Duration
	withMS    bool
	abort     bool // the reset fault: close the connection
	snap      wire.Snapshot
	hide      bool // send no rate-limit headers: Limits.HideLimitHeaders
	now       time.Time

	// For admitted requests:
	ks       *keyState
	gen      uint64 // the Server's generation at admission
	id       uint64
	plan     plan
	reserved int // output tokens reserved at admission: max_tokens
	// levels are the pool instances charged with it besides its key's
	// (admitLevels); nil entries are none.
	levels [2]*admission.Key
	long   bool   // a long-context request: its key's buckets were not charged
	price  Price  // its model's, for Quota.USD
	lease  string // the slot taken in Config.Store; "" when none
	key    string // the API key the lease belongs to
}

func (s *Server) model(wr wire.Format) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) { s.serveModel(w, req, wr) }
}

// serveModel is the model endpoints' pipeline: auth → body limit and
// decoding → faults → global capacity → per-key limits → latency and
// content → response. It keeps its own frame small: a stream parks between
// tokens in this goroutine, and a shallow stack lets the runtime keep it at
// its minimum size.
func (s *Server) serveModel(w http.ResponseWriter, req *http.Request, wr wire.Format) {
	x := exchanges.Get().(*exchange)
	x.s, x.w, x.ctx, x.wr = s, w, req.Context(), wr
	if s.prepare(x, req) {
		x.run()
	}
	// A panic (a cut connection, a reset fault) skips this: that exchange
	// is left to the collector.
	x.free()
}

// prepare runs everything before the response into x: it answers errors
// and rejections itself and returns false, or returns true for an admitted
// request.
func (s *Server) prepare(x *exchange, req *http.Request) bool {
	w, wr := x.w, x.wr
	// The header values live in an allocation of their own, not in the
	// pooled exchange: the header map is the client's response header in
	// process (InProcess) and may outlive the exchange. The request id is
	// formatted when it is needed (requestID), with the rate-limit headers
	// when there are some, from the counter value taken now.
	x.hv = new(headerValues)
	x.reqSeq = s.seq.Add(1)
	h := w.Header()
	h[wr.RequestIDHeader()] = x.hv[hvRequestID : hvRequestID+1 : hvRequestID+1]
	setAPIHeaders(h, wr) // errors are answered at once; run sets the real time
	api := wr.Name()

	key, ok, why := s.authenticate(req, wr)
	if !ok {
		s.metrics.request(api, http.StatusUnauthorized, "unauthenticated")
		wr.WriteError(w, http.StatusUnauthorized, wire.APIError{Msg: why}, x.requestID())
		return false
	}
	if e := s.checkVersion(req, wr); e != nil {
		s.countRefused(key, http.StatusBadRequest, "")
		s.metrics.request(api, http.StatusBadRequest, s.keyLabel(key))
		wr.WriteError(w, http.StatusBadRequest, *e, x.requestID())
		return false
	}
	bp := bodyBufs.Get().(*[]byte)
	body, held, status, err := s.readBody(w, req, *bp)
	received := arrived(req, s.clock.Now()) // the schedule's start: see admit
	s.calls.arrive(&x.att, req, wr, key, body)
	c := &x.call
	if err == nil {
		err = wr.Decode(body, s.cfg.Output.DefaultMaxTokens, c)
		status = http.StatusBadRequest
		if err == nil {
			err = s.checkRequest(wr, c)
		}
		s.budget.release(held)
	}
	// The decoders copy what they keep: the body's buffer serves the next
	// request. readBody caps the buffer it is given at the body's size, so
	// the pooled one is kept unless the body needed a larger one.
	if n := cap(body); n > cap(*bp) && n <= 64<<10 {
		*bp = body[:0]
	}
	bodyBufs.Put(bp)
	if err == nil {
		s.compose(c) // tool call and structured output documents (compose.go)
	}
	if err != nil {
		status, e := refusal(err, status)
		var retryAfter time.Duration
		if e.Limit == wire.LimitDecodeBudget {
			retryAfter = time.Second // readBody's retry-after: 1
		}
		s.countRefused(key, status, e.Limit)
		s.metrics.request(api, status, s.keyLabel(key))
		s.calls.end(&x.att, status, e.Limit, retryAfter)
		wr.WriteError(w, status, e, x.requestID())
		return false
	}

	d := s.admit(req, c, key, wr, &x.att, received, &x.dec)
	if d.abort {
		s.calls.end(&x.att, 0, "", 0)
		s.metrics.request(api, 0, s.keyLabel(key))
		panic(http.ErrAbortHandler)
	}
	// The request id, the message id of an admitted request and the
	// rate-limit headers' values, formatted into one string.
	b := s.appendID(x.buf[:0], "req_", x.reqSeq)
	idEnd := len(b)
	if d.status == 0 {
		b = s.appendID(b, wr.Spec().IDPrefix, s.seq.Add(1))
	}
	msgEnd := len(b)
	x.hl.N = 0
	if !d.hide {
		b = wr.AppendLimitHeaders(b, &x.hl, d.snap, d.now)
	}
	all := string(b)
	x.buf = b[:0]
	x.reqID = all[:idEnd]
	x.hv[hvRequestID] = x.reqID
	x.hl.Set(h, all, msgEnd, x.hv[hvLimits:])

	if d.status != 0 {
		s.calls.end(&x.att, d.status, d.err.Limit, d.retryAfter)
		if d.retryAfter > 0 {
			// Whole seconds, as the APIs send it, rounded up: a configured
			// retry_after of 200ms is 1, not 0 (retry at once).
			h["Retry-After"] = []string{strconv.FormatInt(int64(admission.CeilSeconds(d.retryAfter)/time.Second), 10)}
		}
		if d.withMS {
			// One more than the whole milliseconds of the wait: a retry
			// sent at the very instant a slot frees or a bucket refills
			// may be served just before it (events at one instant run in
			// any order).
			h["Retry-After-Ms"] = []string{strconv.FormatInt(int64(d.exactWait/time.Millisecond)+1, 10)}
		}
		switch {
		case d.noRetry:
			h["X-Should-Retry"] = wire.ValueFalse
		case d.shouldRetry != nil:
			h["X-Should-Retry"] = []string{strconv.FormatBool(*d.shouldRetry)}
		}
		s.metrics.request(api, d.status, s.keyLabel(key))
		wr.WriteError(w, d.status, d.err, x.reqID)
		return false
	}
	x.c, x.d, x.key = c, d, key
	x.res = wire.Result{ID: all[idEnd:msgEnd], Created: d.plan.start, Clock: s.clock, N: d.plan.n, Capped: d.plan.capped, Text: s.text}
	return true
}

// bodyBufs holds the buffers request bodies are read into.
var bodyBufs = sync.Pool{New: func() any { return new([]byte) }}

// keyLabel is how key appears in metrics, stats and logs: its Fingerprint,
// or "anonymous" in open mode.
func (s *Server) keyLabel(key string) string {
	if key == "" {
		return "anonymous"
	}
	if l, ok := s.labels[key]; ok {
		return l
	}
	return Fingerprint(key)
}

// refusal is the answer to a request refused before admission: err from
// readBody (answered with status), a decoder (a badRequest, or a
// wire.Refusal with a status of its own) or checkRequest (a requestError,
// which carries its own status).
func refusal(err error, status int) (int, wire.APIError) {
	var br *wire.BadRequest
	var re *requestError
	var fr *wire.Refusal
	e := wire.APIError{Msg: err.Error()}
	switch {
	case errors.As(err, &br):
		e.Param, e.Code = br.Param, br.Code
	case errors.As(err, &re):
		status, e = re.status, re.e
	case errors.As(err, &fr): // a format's Decode with a status of its own
		status, e = fr.Status, fr.E
	case status == http.StatusTooManyRequests:
		e.Limit = wire.LimitDecodeBudget
	}
	return status, e
}

// countRefused counts an attempt refused before admission: 400, 404, 413,
// or 429 for the decode budget.
func (s *Server) countRefused(key string, status int, limit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.key(key)
	ks.counts.attempts++
	countRefusal(&ks.counts, status, limit)
}

// countRefusal counts a refused attempt by its status, and a 429 by the
// limit that refused it (limitCapacity marks an overload for Capacity).
// s.mu is held.
func countRefusal(c *counts, status int, limit string) {
	switch {
	case limit == wire.LimitQuota:
		// A spend cap, not a rate limit: its dimension is counted by
		// admit, which knows it.
		c.quotaExceeded++
	case status == http.StatusTooManyRequests:
		c.throttled++
		inc(&c.throttledBy, limit)
	case status == 529 || status == http.StatusServiceUnavailable:
		c.overloaded++
		if limit == limitCapacity {
			c.capacity++
		}
	default:
		c.errors++
	}
}

// admit runs the admission steps that need the server's state, under its
// lock, into d, and returns d. a is the attempt in the call accounting;
// a.n its number within its logical call (0 when the accounting is off).
//
// An admitted response's schedule starts at received, when the request
// arrived (arrival.go: the kernel's receive time of its last bytes where
// it is known, else when its body was in): waiting to be read, decoding
// and waiting for the lock count toward its time to first token, as a
// provider's processing does, rather than delaying every token (under a
// burst of requests, admission lags arrival). When a Store was asked for a
// slot, the schedule starts after it answered instead: that wait can last
// seconds.
//
// The refusals are methods of their own (reject, scripted, limited): a
// stack frame holds every temporary of the code inlined into it, and
// admit's runs on every request's goroutine, so it keeps only the path of
// an admitted request.
func (s *Server) admit(req *http.Request, c *wire.Call, key string, wr wire.Format, a *callAttempt, received time.Time, d *decision) *decision {
	n := a.n
	// A shared slot taken for an attempt then refused is given back after
	// the lock is released: Store calls are network round trips.
	defer func() {
		if d.status != 0 {
			s.releaseShared(d)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if s.epoch.IsZero() {
		s.epoch = now
	}
	s.applySchedule(now)
	s.calls.place(a, now, s.cardChain(c)) // the report card's caps (card.go)
	ks := s.key(key)
	*d = decision{now: now, hide: s.limits.HideLimitHeaders}
	ks.counts.attempts++
	ks.lim.Sync(now, s.limits)
	d.snap = wireSnapshot(ks.lim.Snapshot(now, ""))

	// Scripted failures: the attempt index comes from the SDK's header or,
	// for a client sending an Idempotency-Key, from the call accounting,
	// which groups attempts by that key (calls.go).
	if len(s.faults.Script) > 0 && s.scripted(req, wr, n, ks, d) {
		return d
	}

	f := &s.faults
	if s.chance(f.Reset) {
		countFault(ks, "reset")
		d.abort = true
		return d
	}
	if s.chance(f.Error500) {
		countFault(ks, "error_500")
		return d.reject(ks, http.StatusInternalServerError, wire.APIError{Msg: "Internal server error (injected)"}, 0)
	}
	if s.chance(f.Overloaded) {
		countFault(ks, "overloaded")
		return d.reject(ks, wr.OverloadStatus(), wire.APIError{Msg: "Overloaded"}, 0)
	}
	if st := s.cfg.Store; st != nil && s.limits.MaxConcurrent > 0 {
		if s.shared(req, st, key, wr, &ks, &now, d) {
			return d
		}
		received = now
	}
	if cap := s.cfg.Capacity.MaxConcurrent; cap > 0 && s.inFlight >= cap {
		return d.reject(ks, wr.OverloadStatus(), wire.APIError{Msg: "Overloaded", Limit: limitCapacity}, 0)
	}

	if dim := ks.lim.Exhausted(s.quota); dim != "" {
		return s.quotaSpent(wr, ks, dim, d)
	}

	auto := wr.Spec().AutoCache // OpenAI caches automatically; Anthropic at cache_control breakpoints
	cu := ks.lim.CacheLookup(now, s.cfg.Cache, c.Input, len(c.Prefixes), func(i int) admission.Prefix {
		p := &c.Prefixes[i]
		return admission.Prefix{Hash: p.Hash, Tokens: p.Tokens, TTL: p.TTL}
	}, auto)
	c.CacheRead, c.CacheWrite = cu.Read, cu.Write
	charged := c.Input // toward itpm and tpm
	if !auto && !s.cfg.Cache.ReadsCountITPM {
		charged -= cu.Read
	}
	p := s.plan(received, c, ks)
	d.id = s.seq.Add(1)
	dem := admission.Demand{Input: charged, MaxTokens: c.MaxTokens, End: p.due(p.n)}
	levels := s.admitLevels(ks, c, &dem)
	v, by := ks.lim.Admit(now, s.limits, d.id, dem, levels[:]...)
	if !v.OK {
		return s.limited(now, wr, c, ks, &levels, &v, by, d)
	}
	snap := ks.lim.Snapshot(now, "")
	for i := range levels {
		if k := levels[i].K; k != nil {
			snap = snap.Merge(k.Snapshot(now, ""))
			d.levels[i] = k
		}
	}
	d.snap = wireSnapshot(snap)
	d.long = dem.Unbucketed
	ks.lim.CacheCommit(now, p.start.Add(p.first), cu)
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	kc := &ks.counts
	kc.admitted++
	kc.inFlight++
	kc.maxInFlight = max(kc.maxInFlight, kc.inFlight)
	kc.inputTokens += int64(c.Input)
	d.price = admission.PriceOf(s.cfg.Prices, c.Model)
	ks.lim.AddUSD(d.price.InputUSD(c.Input, c.CacheRead, c.CacheWrite, anthropic.CacheWriteLong(c)))
	d.ks, d.gen, d.plan, d.reserved = ks, s.gen, p, c.MaxTokens
	return d
}

// admitLevels returns the limits request c passes besides its key's own,
// in the order they are checked (admission.Key.Admit): a long-context
// request (Config.LongContext) its key's long-context instance alone, and
// d made to skip its key's buckets; any other request the organization's
// pool (Config.Organization) and its model's pool (a deployment's, which
// the format named, or the longest LimitsByModel pattern). s.mu is held.
func (s *Server) admitLevels(ks *keyState, c *wire.Call, d *admission.Demand) [2]admission.Level {
	var lv [2]admission.Level
	if lc := &s.cfg.LongContext; lc.ThresholdTokens > 0 && c.Input > lc.ThresholdTokens {
		d.Unbucketed = true
		lv[0] = admission.Level{K: ks.lim.Pool(longContextPool), L: lc.Limits, Scope: s.longScope}
		return lv
	}
	if s.org != nil {
		lv[0] = admission.Level{K: s.org, L: s.cfg.Organization.Limits, Scope: "this organization"}
	}
	if c.Pool != "" { // the format named it (a deployment's: wire.Call.Pool)
		lv[1] = admission.Level{K: ks.lim.Pool(c.Pool), L: s.deploymentPools[c.Pool]}
	} else if name := admission.PoolFor(s.pools, c.Model); name != "" {
		lv[1] = admission.Level{K: ks.lim.Pool(name), L: s.pools[name]}
	}
	return lv
}

// longContextPool names each key's long-context instance apart from every
// model pattern and deployment: neither can start with a NUL and an "l".
const longContextPool = "\x00long context"

// reject refuses the attempt d is about with status and counts the refusal
// on ks. s.mu is held.
//
//go:noinline
func (d *decision) reject(ks *keyState, status int, e wire.APIError, retryAfter time.Duration) *decision {
	d.status, d.err, d.retryAfter = status, e, retryAfter
	countRefusal(&ks.counts, status, e.Limit)
	return d
}

// scripted applies Faults.Script: true when it refused the attempt into d.
// s.mu is held.
//
//go:noinline
func (s *Server) scripted(req *http.Request, wr wire.Format, n int, ks *keyState, d *decision) bool {
	attempt := attemptIndex(req, wr)
	if attempt < 0 && n > 0 && req.Header.Get("Idempotency-Key") != "" {
		attempt = n - 1
	}
	if attempt < 0 {
		return false
	}
	index := attempt
	for _, step := range s.faults.Script {
		if attempt < step.Attempts {
			countFault(ks, "script")
			e := wire.APIError{Msg: fmt.Sprintf("scripted failure: attempt %d gets %d", index, step.Status), Limit: wire.LimitScript}
			if step.Status == 529 || step.Status == http.StatusServiceUnavailable {
				e.Msg = "Overloaded (scripted)"
			}
			d.reject(ks, step.Status, e, step.RetryAfter)
			return true
		}
		attempt -= step.Attempts
	}
	return false
}

// shared takes a slot of Config.Store's shared concurrency limit for key,
// without the lock (one slow store must not stall every key): true when it
// refused the attempt into d. It then reads the time and the key's state
// anew into *now and *ks. s.mu is held on entry and return.
//
//go:noinline
func (s *Server) shared(req *http.Request, st Store, key string, wr wire.Format, ks **keyState, now *time.Time, d *decision) bool {
	limit, ra := s.limits.MaxConcurrent, s.limits.RetryAfter
	s.mu.Unlock()
	r := s.admitShared(req.Context(), st, key, limit, ra, d, wr)
	s.mu.Lock()
	*now, *ks = s.clock.Now(), s.key(key)
	(*ks).lim.Sync(*now, s.limits)
	if r == nil {
		return false
	}
	d.snap = wireSnapshot((*ks).lim.Snapshot(*now, r.limit))
	if r.status == http.StatusTooManyRequests && s.limits.RetryAfterMS {
		d.exactWait, d.withMS = r.retryAfter, true
	}
	d.reject(*ks, r.status, r.err, r.retryAfter)
	return true
}

// quotaSpent refuses an attempt of a key whose Config.Quota dimension dim
// is spent. s.mu is held.
//
//go:noinline
func (s *Server) quotaSpent(wr wire.Format, ks *keyState, dim string, d *decision) *decision {
	inc(&ks.counts.quotaExceededBy, dim)
	d.shouldRetry = s.quota.ShouldRetry
	return d.reject(ks, http.StatusTooManyRequests, wire.APIError{Msg: wr.Spec().QuotaMessage(admission.QuotaLimit(s.quota, dim), dim), Limit: wire.LimitQuota}, 0)
}

// limited refuses an attempt that a per-key or per-pool limit does not
// admit (v; by is the index of the level that refused it, -1 for the key),
// with the headers of the key's and its levels' state: the refusing
// level's dimension, or the merged one when the key refused, reports
// remaining 0. s.mu is held.
//
//go:noinline
func (s *Server) limited(now time.Time, wr wire.Format, c *wire.Call, ks *keyState, levels *[2]admission.Level, v *admission.Verdict, by int, d *decision) *decision {
	snap := ks.lim.Snapshot(now, "")
	for i := range levels {
		if k := levels[i].K; k != nil {
			ex := ""
			if i == by {
				ex = v.Limit
			}
			snap = snap.Merge(k.Snapshot(now, ex))
		}
	}
	if by < 0 {
		snap.Exhaust(v.Limit)
	}
	d.snap = wireSnapshot(snap)
	e := wire.APIError{Msg: v.Message(c.Model), Limit: v.Limit}
	if v.TooLarge {
		d.noRetry = true
		return d.reject(ks, http.StatusTooManyRequests, e, 0)
	}
	if s.limits.RetryAfterMS || wr.Spec().RetryAfterMS {
		d.exactWait, d.withMS = v.Wait, true
	}
	if wr.Spec().ShouldRetryLimited {
		d.shouldRetry = &yes
	}
	return d.reject(ks, http.StatusTooManyRequests, e, v.RetryAfter)
}

func countFault(ks *keyState, name string) { inc(&ks.counts.faults, name) }

var yes = true

// chance draws from the seeded source; a zero rate draws nothing, so adding
// a fault does not change the draws of a config without it.
func (s *Server) chance(rate float64) bool {
	return rate > 0 && s.rng.Float64() < rate
}

// plan draws the output length, latency and stream faults of a request.
func (s *Server) plan(now time.Time, c *wire.Call, ks *keyState) plan {
	l, f := s.latency, s.faults
	n, capped := s.outputLength(c) // compose.go
	if s.chance(f.Malformed) {
		countFault(ks, "malformed")
		n, capped = max(1, n/2), false
	}
	// Config.Validate keeps these within MaxLatency for any request;
	// SetLatency does not validate, so clamp as well.
	// Cached input adds nothing to the time to first token.
	first := satAdd(l.TTFT, satMul(l.TTFTPerInputToken, c.Input-c.CacheRead))
	if s.chance(f.Slow.Rate) {
		countFault(ks, "slow")
		first = satAdd(first, f.Slow.Extra)
	}
	// Half of MaxLatency each, before a jitter factor below 2: the sum in
	// plan.due stays below the largest Duration.
	first = min(first, MaxLatency/2)
	perToken := min(l.PerToken, MaxLatency/2/wire.MaxOutputTokens)
	if l.Jitter > 0 {
		k := 1 + l.Jitter*(2*s.rng.Float64()-1)
		first = time.Duration(float64(first) * k)
		perToken = time.Duration(float64(perToken) * k)
	}
	p := plan{start: now, first: first, perToken: perToken, n: n, capped: capped}
	half := max(1, n/2)
	if s.chance(f.CutStream) {
		countFault(ks, "cut_stream")
		p.cutAt = half
	} else if s.chance(f.StreamError) {
		countFault(ks, "stream_error")
		p.failAt = half
	}
	return p
}

// satMul and satAdd compute latencies, saturating at MaxLatency.
func satMul(d time.Duration, n int) time.Duration {
	if n > 0 && d > MaxLatency/time.Duration(n) {
		return MaxLatency
	}
	return d * time.Duration(n)
}

func satAdd(a, b time.Duration) time.Duration {
	return min(min(a, MaxLatency)+min(b, MaxLatency), MaxLatency) // each <= MaxInt64/2: no wrap
}

// release ends an admitted request: frees its slots and settles its output
// tokens. It is called before the last byte of the response is written.
func (s *Server) release(d *decision, produced, merged int) {
	defer s.releaseShared(d) // after the Unlock: a network round trip
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	keyReserved := d.reserved
	if d.long {
		keyReserved = produced // its key's otpm bucket was not charged: nothing to give back
	}
	d.ks.lim.Release(now, d.id, keyReserved, produced)
	d.ks.lim.AddUSD(d.price.OutputUSD(produced))
	for _, k := range d.levels {
		if k != nil {
			k.Release(now, d.id, d.reserved, produced)
		}
	}
	if d.gen != s.gen {
		// A Reset happened since: the counters since then do not include
		// it; /metrics, which counts from the start, does.
		s.pastInFlight--
		s.past.outputTokens += int64(produced)
		s.past.mergedEvents += int64(merged)
		return
	}
	s.inFlight--
	d.ks.counts.inFlight--
	d.ks.counts.outputTokens += int64(produced)
	d.ks.counts.mergedEvents += int64(merged)
}

// exchange is a request being answered. Its state lives on the heap, not
// in the frames of the goroutine that parks between tokens. Exchanges are
// pooled (exchanges), so nothing may keep a pointer into one once its
// handler has returned: the response's header values live in hv, an
// allocation of their own.
type exchange struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	ctx     context.Context
	wr      wire.Format
	c       *wire.Call // &call once admitted
	call    wire.Call
	d       *decision
	dec     decision        // what d points to for admitted requests
	hv      *headerValues   // the values of the headers set from the exchange
	hl      wire.HeaderList // the rate-limit headers, set from hv
	reqSeq  uint64          // the counter value of the request id (Server.appendID)
	key     string
	reqID   string
	res     wire.Result
	timer   *time.Timer // clock.Real's waits between tokens (sleepUntil)
	buf     []byte      // the header values, then the response body or the stream's frames; kept across requests
	emitted int         // output tokens produced so far
	merged  int         // stream events that carried more than one token
	done    bool        // released
	status  int         // for metrics; 499 when the client went away
	att     callAttempt
}

// exchanges are the exchanges of finished requests, for the next ones:
// allocating one per request cost a kilobyte of garbage each.
var exchanges = sync.Pool{New: func() any { return new(exchange) }}

// free resets x, keeping its buffer (unless a large response grew it),
// and puts it back in exchanges. The timer is not kept: a timer belongs to
// the synctest bubble it was made in, and the next request may run in
// another.
func (x *exchange) free() {
	b := x.buf[:0]
	if cap(b) > 64<<10 {
		b = nil
	}
	*x = exchange{buf: b}
	exchanges.Put(x)
}

// requestID is the request's id, formatted from the counter value taken at
// its arrival the first time it is asked for.
func (x *exchange) requestID() string {
	if x.reqID == "" {
		x.reqID = string(x.s.appendID(x.buf[:0], "req_", x.reqSeq))
		x.hv[hvRequestID] = x.reqID
	}
	return x.reqID
}

// headerValues are the values of the headers an exchange sets, each the
// backing array of its header's []string.
type headerValues [hvLimits + len(wire.HeaderList{}.Names)]string

// The slots of headerValues.
const (
	hvRequestID     = iota // request-id or x-request-id
	hvContentLength        // content-length
	hvProcessing           // openai-processing-ms
	hvLimits               // the rate-limit headers, in headerList's order
)

// run paces and writes the response, releasing the request's slot before
// the final bytes are written.
func (x *exchange) run() {
	x.status = http.StatusOK
	defer x.finish()
	if x.c.Stream {
		x.stream()
	} else {
		x.json()
	}
}

// finish releases the request if a path did not (the client went away, a
// cut), stops the timer and records the metrics.
func (x *exchange) finish() {
	x.release()
	if x.timer != nil {
		x.timer.Stop()
	}
	x.s.metrics.observe(x.wr.Name(), x.status, x.s.keyLabel(x.key), clock.Since(x.s.clock, x.d.plan.start))
}

// release ends the request in the limiter, once.
func (x *exchange) release() {
	if !x.done {
		x.done = true
		x.s.release(x.d, x.emitted, x.merged)
		x.s.calls.end(&x.att, x.callStatus(), "", 0)
	}
}

// wait sleeps until token i is due; false when the client went away.
func (x *exchange) wait(i int) bool {
	if sleepUntil(x.ctx, x.s.clock, &x.timer, x.d.plan.due(i)) != nil {
		x.emitted = x.d.plan.cutShort(i, x.emitted, x.s.clock.Now())
		x.status = 499
		return false
	}
	return true
}

func (x *exchange) json() {
	p := &x.d.plan
	end := p.n
	if p.failAt > 0 {
		end = p.failAt
	}
	if !x.wait(end) {
		return
	}
	x.emitted = end
	if p.failAt > 0 {
		x.status = x.wr.OverloadStatus()
		x.release()
		x.processed(x.w.Header())
		x.wr.WriteError(x.w, x.status, wire.APIError{Msg: "Overloaded"}, x.reqID)
		return
	}
	body, err := x.wr.Body(x.buf[:0], x.c, &x.res)
	if err != nil {
		panic(fmt.Errorf("mock: encoding response: %w", err))
	}
	x.buf = body // Write copies it (into the connection's buffer or the socket)
	h := x.w.Header()
	h["Content-Type"] = wire.ValueJSON
	x.hv[hvContentLength] = strconv.Itoa(len(body))
	h["Content-Length"] = x.hv[hvContentLength : hvContentLength+1 : hvContentLength+1]
	x.processed(h)
	x.release()
	x.w.WriteHeader(http.StatusOK)
	if p.cutAt > 0 {
		x.w.Write(body[:len(body)/2])
		http.NewResponseController(x.w).Flush()
		panic(http.ErrAbortHandler)
	}
	x.w.Write(body)
}

func (x *exchange) stream() {
	p := &x.d.plan
	h := x.w.Header()
	h["Content-Type"] = wire.ValueEventStream
	if ct := x.wr.Spec().StreamContentType; ct != nil {
		h["Content-Type"] = ct
	}
	h["Cache-Control"] = wire.ValueNoCache
	x.processed(h)
	x.w.WriteHeader(http.StatusOK)
	x.w = pastHeader(x.w)
	x.rc = http.NewResponseController(x.w)
	x.buf = x.wr.StreamStart(slices.Grow(x.buf[:0], 512), x.c, &x.res)
	if !x.flush() {
		return
	}
	stopAt := p.n
	switch {
	case p.cutAt > 0:
		stopAt = p.cutAt
	case p.failAt > 0:
		stopAt = p.failAt
	}
	if !x.tokens(stopAt) {
		return
	}
	x.release()
	switch {
	case p.cutAt > 0:
		x.flush()
		panic(http.ErrAbortHandler)
	case p.failAt > 0:
		x.buf = x.wr.StreamError(x.buf, x.c, &x.res)
	default:
		x.buf = x.wr.StreamEnd(x.buf, x.c, &x.res)
	}
	// Not flushed: net/http flushes the final frames when the handler
	// returns, in the one write that ends the chunked body, rather than in
	// two system calls (a tenth of a one-token stream's CPU under a burst).
	x.w.Write(x.buf)
}

// tokens paces and writes the stream's deltas up to token stopAt, the last
// of them left in x.buf for the final frames; false when the client went
// away.
//
// Between two tokens the goroutine parks for tens of milliseconds among
// many other streams, and wakes with the exchange out of the processor's
// caches: under 1,000 streams, perf put two thirds of the loop's own
// samples on its first read of the exchange. So the loop reads what every
// token needs from locals, copied once onto the stack that waking the
// goroutine touches anyway, and writes the exchange's counts back when it
// ends.
func (x *exchange) tokens(stopAt int) bool {
	p, clk, ctx := x.d.plan, x.s.clock, x.ctx
	wr, c, r, w, rc := x.wr, x.c, &x.res, x.w, x.rc
	buf, timer := x.buf, x.timer
	emitted, merged := x.emitted, x.merged
	ok := true
	for emitted < stopAt {
		next := emitted + 1
		if sleepUntil(ctx, clk, &timer, p.due(next)) != nil {
			emitted = p.cutShort(next, emitted, clk.Now())
			x.status, ok = 499, false
			break
		}
		// Tokens that fell due while this one was late go out with it, in
		// one event: a stream behind its schedule catches up at once
		// rather than staying late by its backlog (docs/mockllm.md: Latency and
		// content; counted in mockllm_stream_merged_events_total).
		upto := next
		if now := clk.Now(); !now.Before(p.due(next + 1)) {
			upto = max(next, min(stopAt, p.dueBy(now)))
		}
		if upto > next {
			merged++
		}
		buf = wr.StreamDelta(buf[:0], c, r, emitted, upto)
		emitted = upto
		if emitted == stopAt {
			break // the last delta goes out with the final frames
		}
		if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
			x.status, ok = 499, false
			break
		}
	}
	x.buf, x.timer, x.emitted, x.merged = buf, timer, emitted, merged
	return ok
}

// processed sets openai-processing-ms to the time from the schedule's
// start (the request's arrival) to the response's headers (0, already
// set, for Anthropic's headers and instant answers).
func (x *exchange) processed(h http.Header) {
	if !x.wr.Spec().Processing {
		return
	}
	if ms := clock.Since(x.s.clock, x.d.plan.start).Milliseconds(); ms > 0 {
		x.hv[hvProcessing] = strconv.FormatInt(ms, 10)
		h["Openai-Processing-Ms"] = x.hv[hvProcessing : hvProcessing+1 : hvProcessing+1]
	}
}

// flush writes and flushes the buffered frames; false when the client
// went away.
func (x *exchange) flush() bool {
	if _, err := x.w.Write(x.buf); err != nil || x.rc.Flush() != nil {
		x.status = 499
		return false
	}
	return true
}

// sleepUntil waits on c for deadline or for ctx to end. In real time it
// reuses one timer per request rather than a goroutine or a timer per
// token; another clock waits its own way.
func sleepUntil(ctx context.Context, c clock.Clock, t **time.Timer, deadline time.Time) error {
	if c != clock.Real {
		return c.Sleep(ctx, deadline.Sub(c.Now()))
	}
	d := time.Until(deadline)
	if d <= 0 {
		return ctx.Err()
	}
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	select {
	case <-(*t).C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wireSnapshot is admission's snapshot of the buckets as the formats'
// rate-limit headers read it.
func wireSnapshot(s admission.Snapshot) wire.Snapshot {
	return wire.Snapshot{
		Requests: wire.Dimension(s.Requests),
		Input:    wire.Dimension(s.Input),
		Output:   wire.Dimension(s.Output),
		Tokens:   wire.Dimension(s.Tokens),
	}
}
