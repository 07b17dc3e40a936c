package admission

import (
	"context"
	"time"
)

// Limits are the rate limits each API key has. A zero limit is unlimited.
type Limits struct {
	// MaxConcurrent caps the requests in flight.
	MaxConcurrent int `yaml:"max_concurrent"`
	// RPM caps requests per minute (a token bucket of RPM requests that
	// refills continuously at RPM per minute).
	RPM int `yaml:"rpm"`
	// ITPM caps input tokens per minute (Anthropic).
	ITPM int `yaml:"itpm"`
	// OTPM caps output tokens per minute (Anthropic). A request reserves
	// its max_tokens at admission and the reservation is settled to the
	// tokens actually produced when the response ends.
	OTPM int `yaml:"otpm"`
	// TPM caps tokens per minute (OpenAI): each request is charged
	// max(max_tokens, input tokens) at admission, and not refunded.
	TPM int `yaml:"tpm"`
	// RetryAfter is the retry-after sent with a 429. Zero computes it from
	// the limit that was hit: the time until its bucket has room, or until
	// the key's earliest in-flight request is due to end, in whole seconds
	// rounded up.
	RetryAfter time.Duration `yaml:"retry_after"`
	// CountRejected makes rejected attempts use up the requests-per-minute
	// budget too, as OpenAI documents. An attempt rejected because that
	// budget is empty takes nothing: the bucket never goes negative.
	CountRejected bool `yaml:"count_rejected"`
	// Burst is how much refill each per-minute bucket (rpm, itpm, otpm,
	// tpm) holds: 0, the default, is one minute, so a key may spend a
	// whole minute's budget at once; 1s at rpm 60 admits one request at
	// once and then one a second, as Anthropic says a 60 RPM limit "may be
	// enforced as 1 request per second". The rate-limit headers still
	// report the per-minute limit; remaining is what the bucket holds. A
	// request larger than the burst but within the per-minute limit is
	// admitted when its bucket is full and then waits its whole cost out.
	Burst time.Duration `yaml:"burst,omitempty"`
	// RetryAfterMS adds retry-after-ms to every 429 of a rate limit: the
	// wait in whole milliseconds plus one (a retry at the very instant the
	// limit frees could be served just before it), which the official
	// SDKs read before retry-after (whole seconds).
	RetryAfterMS bool `yaml:"retry_after_ms,omitempty"`
	// HideLimitHeaders sends no rate-limit headers (anthropic-ratelimit-*,
	// x-ratelimit-*) with any response: the limits are enforced but not
	// published, as by a provider or gateway that publishes none. A 429
	// still carries its retry-after.
	HideLimitHeaders bool `yaml:"hide_limit_headers,omitempty"`
	// Acceleration is a ramp rule (see Acceleration), a model of
	// Anthropic's acceleration limits; off by default.
	Acceleration Acceleration `yaml:"acceleration,omitempty"`
}

// Capacity is the provider's capacity over all keys.
type Capacity struct {
	// MaxConcurrent caps the requests in flight over all keys; beyond it the
	// answer is 529 overloaded_error (Anthropic) or 503 (OpenAI). 0 is
	// unlimited.
	MaxConcurrent int `yaml:"max_concurrent"`
}

// ScheduleEntry changes the limits At a time after the server's first model
// request (after New or the last Reset), without resetting limiter state.
// Only the keys present in Limits change.
type ScheduleEntry struct {
	At     time.Duration `yaml:"at"`
	Limits LimitsPatch   `yaml:"limits"`
}

// LimitsPatch is a partial Limits: nil fields are left unchanged.
type LimitsPatch struct {
	MaxConcurrent *int           `yaml:"max_concurrent,omitempty"`
	RPM           *int           `yaml:"rpm,omitempty"`
	ITPM          *int           `yaml:"itpm,omitempty"`
	OTPM          *int           `yaml:"otpm,omitempty"`
	TPM           *int           `yaml:"tpm,omitempty"`
	RetryAfter    *time.Duration `yaml:"retry_after,omitempty"`
	CountRejected *bool          `yaml:"count_rejected,omitempty"`
	Burst         *time.Duration `yaml:"burst,omitempty"`
	RetryAfterMS  *bool          `yaml:"retry_after_ms,omitempty"`
	// HideLimitHeaders *bool: a schedule entry may stop (or start)
	// publishing the limits mid-run.
	HideLimitHeaders *bool         `yaml:"hide_limit_headers,omitempty"`
	Acceleration     *Acceleration `yaml:"acceleration,omitempty"`
}

// Apply returns l with the fields p sets replaced.
func (p LimitsPatch) Apply(l Limits) Limits {
	set := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	set(&l.MaxConcurrent, p.MaxConcurrent)
	set(&l.RPM, p.RPM)
	set(&l.ITPM, p.ITPM)
	set(&l.OTPM, p.OTPM)
	set(&l.TPM, p.TPM)
	if p.RetryAfter != nil {
		l.RetryAfter = *p.RetryAfter
	}
	if p.CountRejected != nil {
		l.CountRejected = *p.CountRejected
	}
	if p.Burst != nil {
		l.Burst = *p.Burst
	}
	if p.RetryAfterMS != nil {
		l.RetryAfterMS = *p.RetryAfterMS
	}
	if p.HideLimitHeaders != nil {
		l.HideLimitHeaders = *p.HideLimitHeaders
	}
	if p.Acceleration != nil {
		l.Acceleration = *p.Acceleration
	}
	return l
}

// Acceleration is a ramp rule, a model of Anthropic's acceleration limits:
// "if your organization has a sharp increase in usage, you might see 429
// errors due to acceleration limits" (its errors page; docs/mockllm.md,
// "Limits, and what a 429 looks like"). Anthropic publishes no figures
// and no algorithm; this rule is the mock's own. With Factor set, a key may
// start at most max(Floor, Factor × the requests it started in the minute
// before) requests in any minute, counted in one-second steps, even below
// its other limits: a key that has been idle may start Floor a minute, and
// each minute may grow its traffic by Factor. The zero value is off.
type Acceleration struct {
	// Factor is how much a minute's requests may exceed the previous
	// minute's; 0 turns the rule off, else at least 1.
	Factor float64 `yaml:"factor,omitempty"`
	// Floor is how many requests a minute are always allowed.
	Floor int `yaml:"floor,omitempty"`
}

// DefaultCacheMinTokens is Cache.MinTokens when it is 0: the shortest
// prefix cached, Anthropic's minimum for its Sonnet and Opus models and
// OpenAI's for automatic caching.
const DefaultCacheMinTokens = 1024

// Cache is the prompt cache model. The zero value caches as the providers
// do.
type Cache struct {
	// Off turns prompt caching off: every request pays for its whole
	// prompt and reports no cache tokens.
	Off bool `yaml:"off,omitempty"`
	// MinTokens is the shortest prefix that is cached; 0 means
	// DefaultCacheMinTokens (1,024). Anthropic's Haiku models need 2,048.
	MinTokens int `yaml:"min_tokens,omitempty"`
	// ReadsCountITPM makes cache reads count toward itpm, as they do for
	// the older Anthropic models its rate-limits page marks with †.
	ReadsCountITPM bool `yaml:"reads_count_itpm,omitempty"`
}

func (c Cache) minTokens() int {
	if c.MinTokens > 0 {
		return c.MinTokens
	}
	return DefaultCacheMinTokens
}

// Quota dimensions, as Stats.QuotaExceededBy and the metric's label name
// them.
const (
	QuotaRequests     = "requests"
	QuotaInputTokens  = "input_tokens"
	QuotaOutputTokens = "output_tokens"
	QuotaUSD          = "usd"
)

// Quota caps what each API key may use in total, since the server started
// or was last Reset: a spend cap, which unlike a rate limit does not come
// back with time. Once a key has used a dimension up, each of its requests
// gets the answer the providers give an account out of money, with no
// retry-after: Anthropic 429 rate_limit_error with details.error_code
// enforced_spend_limit_reached (its monthly tier spend cap), OpenAI 429
// insufficient_quota. Zero fields are unlimited.
//
// A request is refused when a dimension is already used up; the request
// that crosses a quota is admitted, as a spend cap is checked against what
// was spent before. Requests and input tokens are counted at admission,
// output tokens as produced, when a response ends.
//
// USD is a dollar spend cap: each request costs its tokens at the prices
// of its model (Config.Prices), input (uncached input, cache writes and
// cache reads each at its own price) at admission, output as produced.
type Quota struct {
	Requests     int64   `yaml:"requests,omitempty"`
	InputTokens  int64   `yaml:"input_tokens,omitempty"`
	OutputTokens int64   `yaml:"output_tokens,omitempty"`
	USD          float64 `yaml:"usd,omitempty"`
	// ShouldRetry, when set, sends x-should-retry with every quota error,
	// which the official SDKs obey before the status: false makes them
	// give up at once. Unset (the default) sends none, as neither provider
	// is known to, so the SDKs retry a quota 429 like any 429: with their
	// default of 2 retries, 3 attempts in all.
	ShouldRetry *bool `yaml:"should_retry,omitempty"`
}

// MaxUSD bounds Quota.USD and each Price, so that sums of costs stay exact
// enough and NaN or infinity is refused.
const MaxUSD = 1e12

// Price is what a model's tokens cost, in USD per million tokens, as the
// providers publish them (docs/mockllm.md, "Quota: spend caps"). CacheWrite is
// a cache_control write with the 5-minute TTL, CacheWrite1h one with "ttl":
// "1h" (CacheWrite when 0); CacheRead is a cache hit (OpenAI's cached input
// too). Zero fields cost nothing.
type Price struct {
	Input        float64 `yaml:"input,omitempty"`
	Output       float64 `yaml:"output,omitempty"`
	CacheWrite   float64 `yaml:"cache_write,omitempty"`
	CacheWrite1h float64 `yaml:"cache_write_1h,omitempty"`
	CacheRead    float64 `yaml:"cache_read,omitempty"`
	// BatchInput and BatchOutput are the batch APIs' prices; 0 is half
	// of Input and Output, as both providers price batches.
	BatchInput  float64 `yaml:"batch_input,omitempty"`
	BatchOutput float64 `yaml:"batch_output,omitempty"`
}

// A Store holds the concurrency slots of the API keys that several replicas
// of the mock share (Config.Store), so that N replicas behind a load
// balancer enforce one limits.max_concurrent per key between them; the
// per-minute buckets stay per replica. The Server calls it without its lock
// held, with the request's context, so a slow store delays only the
// requests that wait for it. Its state survives Reset.
type Store interface {
	// Acquire takes one of limit slots of key for a request until Release.
	// ok is false when all are taken. It may wait (for ctx at most).
	Acquire(ctx context.Context, key string, limit int) (lease string, ok bool, err error)
	// Release frees a slot Acquire took.
	Release(key, lease string)
}

// ValidateLimits checks l, reporting each invalid value at path.KEY
// through check; maxWait is the longest duration the caller can plan.
func ValidateLimits(l Limits, path string, maxWait time.Duration, check func(bool, string, string, ...any)) {
	for _, f := range []struct {
		key string
		v   int
	}{{"max_concurrent", l.MaxConcurrent}, {"rpm", l.RPM}, {"itpm", l.ITPM}, {"otpm", l.OTPM}, {"tpm", l.TPM}} {
		check(f.v >= 0, path+"."+f.key, "must not be negative, got %d", f.v)
	}
	check(l.RetryAfter >= 0, path+".retry_after", "must not be negative, got %v", l.RetryAfter)
	check(l.RetryAfter <= maxWait, path+".retry_after", "%v is above the longest duration the mock can plan, %v", l.RetryAfter, maxWait)
	check(l.Burst >= 0 && l.Burst <= MaxBurst, path+".burst", "must be in [0, %v] (0 is one minute), got %v", MaxBurst, l.Burst)
	a := l.Acceleration
	check(a.Factor == 0 || a.Factor >= 1 && a.Factor <= 1e6, path+".acceleration.factor", "must be 0 (off) or in [1, 1e6], got %v", a.Factor)
	check(a.Floor >= 0, path+".acceleration.floor", "must not be negative, got %d", a.Floor)
	check(a.Factor == 0 || a.Floor >= 1, path+".acceleration.floor", "must be at least 1 with a factor, or no request could ever start, got %d", a.Floor)
}

// MaxBurst is the longest Limits.Burst: a day of refill.
const MaxBurst = 24 * time.Hour

// Organization is a pool of limits above the API keys, as the providers
// apply theirs: Anthropic's limits are the organization's, and OpenAI's
// the organization's and the project's, shared by every key of it
// (docs/mockllm.md, "Organizations and long context"). One instance of
// Limits is shared by every API key of the server; each standard request
// passes it as well as its key's Limits and its model's pool, and is
// charged to none of them unless all admit it. The zero value is off.
type Organization struct {
	// Limits are the organization's. Zero fields are unlimited.
	Limits Limits `yaml:"limits"`
}

// LongContext is a separate set of limits for long-context requests, as
// Anthropic counts a request above 200,000 input tokens to a 1M-context
// model against long-context rate limits separate from the standard ones,
// and OpenAI gives its long-context models (above 128,000 input tokens) a
// separate limit too (docs/mockllm.md, "Organizations and long context").
// A request with more input tokens than ThresholdTokens passes Limits, one
// instance per API key, in place of its key's per-minute buckets, its
// model's pool and the organization's pool; its key's max_concurrent,
// acceleration and Quota still apply. The zero value is off.
type LongContext struct {
	// ThresholdTokens is the input tokens above which a request is a
	// long-context one (Anthropic: 200000); 0 turns long-context limits off.
	ThresholdTokens int `yaml:"threshold_tokens"`
	// Limits are the long-context limits. Zero fields are unlimited.
	Limits Limits `yaml:"limits"`
}

// ValidateLongContext checks lc under path (long_context), input tokens
// being at most maxInput.
func ValidateLongContext(lc LongContext, path string, maxInput int, maxWait time.Duration, check func(bool, string, string, ...any)) {
	check(lc.ThresholdTokens >= 0 && lc.ThresholdTokens <= maxInput, path+".threshold_tokens",
		"must be 0 (off) or in [1, %d] input tokens, got %d", maxInput, lc.ThresholdTokens)
	ValidateLimits(lc.Limits, path+".limits", maxWait, check)
	check(lc.Limits == (Limits{}) || lc.ThresholdTokens > 0, path+".threshold_tokens",
		"required with long_context.limits: the input tokens above which a request is a long-context one, e.g. 200000")
	check(lc.ThresholdTokens == 0 || lc.Limits != (Limits{}), path+".limits",
		"required with long_context.threshold_tokens: set at least one limit, or long-context requests would pass no per-minute limit at all")
}
