package admission

import (
	"fmt"
	"math"
	"time"
)

// Demand is what one request asks of the limits it passes.
type Demand struct {
	Input     int       // input tokens charged (cache reads excluded where they do not count)
	MaxTokens int       // output tokens reserved
	End       time.Time // when the response is planned to end
	// Unbucketed passes the key's concurrency cap and acceleration ramp
	// but not its per-minute buckets: a long-context request, which the
	// long_context limits charge instead (LongContext).
	Unbucketed bool
}

// tpmCost is the OpenAI charge: max(max_tokens, prompt estimate).
func (d Demand) tpmCost() int { return max(d.MaxTokens, d.Input) }

// Verdict is the answer of an admission.
type Verdict struct {
	OK         bool
	Limit      string        // the limit that was exceeded
	RetryAfter time.Duration // whole seconds
	Wait       time.Duration // the exact wait RetryAfter rounds up (retry-after-ms)
	TooLarge   bool          // the request alone exceeds the limit; retrying cannot help
	Need, Cap  int           // for messages: what was requested and the limit
	Msg        string        // the 429's message, when the limit words it itself
	// Scope is who the exceeded limit belongs to, as the message words it:
	// "" for the API key, else a Level's Scope ("this organization").
	Scope string
}

// Key holds the limiter state of one API key (or of one pool instance: a
// per-model pool, the organization, the long-context limits). Its methods
// take the time as an argument, so its behaviour is a pure function of
// the instants it is given; the caller serializes calls.
type Key struct {
	inFlight             int
	rpm, itpm, otpm, tpm *bucket
	ends                 map[uint64]time.Time // planned ends of in-flight requests
	used                 quotaUsage           // toward Quota
	cache                promptCache          // prompt prefixes cached (cache.go)
	pools                map[string]*Key      // pool instances of this key, by name (pools.go)
	ramp                 ramp                 // requests started, for Limits.Acceleration (accel.go)
}

// NewKey returns the state of a key that has sent nothing. The zero Key
// is ready to use too.
func NewKey() *Key {
	return &Key{ends: make(map[uint64]time.Time)}
}

// Sync makes the buckets match l, keeping their levels.
func (k *Key) Sync(now time.Time, l Limits) {
	syncBucket(&k.rpm, l.RPM, l.Burst, now)
	syncBucket(&k.itpm, l.ITPM, l.Burst, now)
	syncBucket(&k.otpm, l.OTPM, l.Burst, now)
	syncBucket(&k.tpm, l.TPM, l.Burst, now)
}

// admit decides whether request id with demand d may start at now under l.
// On success it takes a concurrency slot and charges every bucket. On
// failure nothing is charged, except one request of the rpm bucket when
// l.CountRejected is set and the bucket has one.
func (k *Key) admit(now time.Time, l Limits, id uint64, d Demand) Verdict {
	k.Sync(now, l)
	v := k.check(now, l, d)
	if !v.OK {
		if l.CountRejected && !d.Unbucketed && k.rpm != nil && k.rpm.tokens(now) >= 1 {
			k.rpm.take(now, 1)
		}
		if l.RetryAfter > 0 {
			v.RetryAfter, v.Wait = l.RetryAfter, l.RetryAfter
		}
		return v
	}
	if k.ends == nil {
		k.ends = make(map[uint64]time.Time)
	}
	k.inFlight++
	k.ends[id] = d.End
	k.ramp.add(now)
	k.used.requests++
	k.used.input += int64(d.Input)
	if d.Unbucketed {
		return v
	}
	if k.rpm != nil {
		k.rpm.take(now, 1)
	}
	if k.itpm != nil {
		k.itpm.take(now, float64(d.Input))
	}
	if k.otpm != nil {
		k.otpm.take(now, float64(d.MaxTokens))
	}
	if k.tpm != nil {
		k.tpm.take(now, float64(d.tpmCost()))
	}
	return v
}

func (k *Key) check(now time.Time, l Limits, d Demand) Verdict {
	if l.MaxConcurrent > 0 && k.inFlight >= l.MaxConcurrent {
		wait, first := time.Second, true
		for _, end := range k.ends {
			if d := end.Sub(now); first || d < wait {
				wait, first = d, false
			}
		}
		return Verdict{Limit: LimitConcurrency, RetryAfter: CeilSeconds(wait), Wait: max(wait, 0), Need: 1, Cap: l.MaxConcurrent}
	}
	if a := l.Acceleration; a.Factor > 0 {
		if ok, allowed, cur, prev, wait := k.ramp.allows(now, a); !ok {
			return Verdict{Limit: LimitAcceleration, RetryAfter: CeilSeconds(wait), Wait: wait, Need: cur + 1, Cap: allowed,
				Msg: accelerationMessage(a, allowed, cur, prev)}
		}
	}
	if d.Unbucketed {
		return Verdict{OK: true}
	}
	for _, c := range []struct {
		name string
		b    *bucket
		n    int
	}{
		{LimitRPM, k.rpm, 1},
		{LimitTPM, k.tpm, d.tpmCost()},
		{LimitITPM, k.itpm, d.Input},
		{LimitOTPM, k.otpm, d.MaxTokens},
	} {
		if c.b == nil {
			continue
		}
		if w, large := c.b.wait(now, float64(c.n)), c.b.tooLarge(float64(c.n)); w > 0 || large {
			return Verdict{
				Limit:      c.name,
				RetryAfter: CeilSeconds(w),
				Wait:       w,
				TooLarge:   large,
				Need:       c.n,
				Cap:        int(c.b.limit),
			}
		}
	}
	return Verdict{OK: true}
}

// Release ends request id: it frees its slot and settles its output-token
// reservation from reserved to the tokens actually produced.
func (k *Key) Release(now time.Time, id uint64, reserved, produced int) {
	k.inFlight--
	delete(k.ends, id)
	k.used.output += int64(produced)
	if k.otpm != nil && reserved > produced {
		k.otpm.give(now, float64(reserved-produced))
	}
}

// Dimension is one rate-limit header group; limit 0 means absent.
type Dimension struct {
	Limit, Remaining int64
	Reset            time.Duration // until fully replenished
}

// Snapshot is the state the rate-limit headers report.
type Snapshot struct {
	Requests, Input, Output, Tokens Dimension
}

// Exhaust reports remaining 0 in the dimension of limit, if it has one.
func (s *Snapshot) Exhaust(limit string) {
	switch limit {
	case LimitRPM:
		s.Requests.Remaining = 0
	case LimitITPM:
		s.Input.Remaining = 0
	case LimitOTPM:
		s.Output.Remaining = 0
	case LimitTPM:
		s.Tokens.Remaining = 0
	}
}

// Merge reports pool's dimensions where it has them and s's elsewhere:
// the headers describe the limits that bind the request's model.
func (s Snapshot) Merge(pool Snapshot) Snapshot {
	pick := func(a, b Dimension) Dimension {
		if b.Limit > 0 {
			return b
		}
		return a
	}
	return Snapshot{
		Requests: pick(s.Requests, pool.Requests),
		Input:    pick(s.Input, pool.Input),
		Output:   pick(s.Output, pool.Output),
		Tokens:   pick(s.Tokens, pool.Tokens),
	}
}

func dim(b *bucket, now time.Time) Dimension {
	if b == nil {
		return Dimension{}
	}
	return Dimension{
		Limit:     int64(b.limit),
		Remaining: max(0, int64(math.Floor(b.tokens(now)))),
		Reset:     b.fullIn(now),
	}
}

// Snapshot reports the buckets at now. exceeded, when set, names the limit
// a 429 is about: its dimension reports remaining 0, and only that one. A
// concurrency 429 has no header dimension of its own, so every dimension
// reports what it really has left: a client reading requests-remaining 0
// would wait for the requests bucket's reset for nothing.
func (k *Key) Snapshot(now time.Time, exceeded string) Snapshot {
	s := Snapshot{
		Requests: dim(k.rpm, now),
		Input:    dim(k.itpm, now),
		Output:   dim(k.otpm, now),
		Tokens:   dim(k.tpm, now),
	}
	s.Exhaust(exceeded)
	return s
}

// Limit names, as used in 429 messages, Stats.ThrottledBy and metrics.
const (
	LimitConcurrency = "max_concurrent"
	LimitRPM         = "rpm"
	LimitITPM        = "itpm"
	LimitOTPM        = "otpm"
	LimitTPM         = "tpm"
	// LimitAcceleration is the limit of a 429 from Limits.Acceleration.
	LimitAcceleration = "acceleration"
	// LimitQuota is the limit of a 429 refused by a spent Quota.
	LimitQuota = "quota"
)

// Message is the 429's message of v, for a request for model.
func (v Verdict) Message(model string) string {
	if v.Msg != "" {
		return v.Msg
	}
	if v.TooLarge {
		return fmt.Sprintf("request too large for %s: it needs %d tokens and the limit is %d per minute (%s); it can never succeed", v.Limit, v.Need, v.Cap, v.Limit)
	}
	who := "this API key"
	if v.Scope != "" {
		who = v.Scope
	}
	switch v.Limit {
	case LimitConcurrency:
		if v.Cap == 1 {
			return "rate limit exceeded: max_concurrent: " + who + " may have 1 request at a time"
		}
		return fmt.Sprintf("rate limit exceeded: max_concurrent: %s may have %d concurrent requests", who, v.Cap)
	case LimitRPM:
		return fmt.Sprintf("rate limit exceeded: rpm: %s may send %d requests per minute", who, v.Cap)
	case LimitITPM:
		return fmt.Sprintf("rate limit exceeded: itpm: %s may send %d input tokens per minute; this request has %d", who, v.Cap, v.Need)
	case LimitOTPM:
		return fmt.Sprintf("rate limit exceeded: otpm: %s may use %d output tokens per minute; this request reserves max_tokens = %d", who, v.Cap, v.Need)
	case LimitTPM:
		return fmt.Sprintf("rate limit exceeded: tpm: %s may use %d tokens per minute on %s; this request is charged %d", who, v.Cap, model, v.Need)
	}
	return "rate limit exceeded: " + v.Limit
}
