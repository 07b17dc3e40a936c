package strategies

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Kind is the one outcome vocabulary of the tree: how an attempt ended
// (Outcome.Kind, which the strategies learn from) and how an item ended
// (engine.Result.Kind, from its last attempt). Success, Throttled,
// Overloaded, Failed and Quota are both; Canceled and Abandoned are an
// attempt's only; Unreachable is an item's only.
type Kind int

const (
	// Success is a 2xx response that was read to the end.
	Success Kind = iota
	// Throttled is a 429: the caller's own limit was exceeded. An item is
	// Throttled too when its last attempt was a stream's rate_limit_error
	// event; a 429 for a spent quota is Quota.
	Throttled
	// Overloaded is a 529 (Anthropic) or 503 (OpenAI): the provider is
	// overloaded for everyone, not just this caller. An item is Overloaded
	// too when its last attempt was a stream's overloaded_error event.
	Overloaded
	// Failed is any other error: another status, a connection error, a
	// stream cut mid-way, an invalid response. An item is Failed too when
	// a response Check rejected it, or the strategy could never admit it.
	Failed
	// Canceled means the caller's context ended the attempt.
	Canceled
	// Abandoned releases a permit without an attempt: the caller gave up
	// (its context ended) while waiting between attempts inside the permit.
	// It is passed only to Permit.Done, after at least one Permit.Observe;
	// strategies count it as a cancellation, not as an attempt, and learn
	// nothing from it.
	Abandoned
	// Quota is a refusal for a spent quota or spend cap (Anthropic's
	// spend-limit 429, OpenAI's 429 insufficient_quota): no wait makes the
	// call succeed before the quota is raised or resets, so it is never
	// retried, and strategies do not take it for congestion.
	Quota
	// Unreachable is an item whose last attempt got no response because its
	// connection failed the way a server down or restarting makes it fail
	// (refused, reset, closed before any byte). It is the runtime's word
	// for the item (engine); the attempt itself is Failed, which is what
	// a strategy observes.
	Unreachable
)

var kindNames = [...]string{"success", "throttled", "overloaded", "failed", "canceled", "abandoned", "quota", "unreachable"}

// String returns the kind's lowercase name, as used in reports.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "unknown"
	}
	return kindNames[k]
}

// Temporary reports whether the same call may succeed later unchanged, once
// the server or the network allows it: Throttled, Overloaded and
// Unreachable. Quota is not: no wait fixes it before the quota resets.
func (k Kind) Temporary() bool {
	return k == Throttled || k == Overloaded || k == Unreachable
}

// MarshalText encodes the kind as its name, so that it is a string in JSON.
func (k Kind) MarshalText() ([]byte, error) {
	if k < 0 || int(k) >= len(kindNames) {
		return nil, fmt.Errorf("strategies: invalid Kind %d", k)
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText decodes a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, name := range kindNames {
		if string(b) == name {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("strategies: unknown kind %q (want one of %s)", b, strings.Join(kindNames[:], ", "))
}

// Usage is the token usage a server reported for an attempt.
type Usage struct {
	// InputTokens is the provider's input count: Anthropic's input_tokens
	// (the input neither read from nor written to its prompt cache),
	// OpenAI's prompt_tokens or input_tokens (all of it, cached included).
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CacheReadInputTokens is the input read from the provider's prompt
	// cache: Anthropic's cache_read_input_tokens, not in InputTokens and
	// not counted toward its input-tokens limit for current models;
	// OpenAI's cached_tokens, part of InputTokens and of its limit.
	CacheReadInputTokens int `json:"cache_read_input_tokens,omitempty"`
	// CacheCreationInputTokens is Anthropic's cache_creation_input_tokens:
	// input written to the cache, not in InputTokens but counted toward
	// its input-tokens limit.
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
}

// Counted returns the tokens of u that count toward a provider's token
// limits: InputTokens, CacheCreationInputTokens and OutputTokens. Cache
// reads count only where the provider includes them in InputTokens
// (OpenAI); Anthropic reports them apart because its limits leave them out.
func (u Usage) Counted() int { return u.InputTokens + u.CacheCreationInputTokens + u.OutputTokens }

// Limit is one dimension of a provider's rate-limit headers. The zero value
// means the header was absent.
type Limit struct {
	Limit     int64     // the ceiling (e.g. requests per minute); 0 when absent
	Remaining int64     // what is left now
	Reset     time.Time // when the bucket is fully replenished; zero when absent
}

// Known reports whether the response carried this dimension.
func (l Limit) Known() bool { return l.Limit > 0 }

// Limits are the parsed rate-limit headers of one response
// (anthropic-ratelimit-* or x-ratelimit-*).
type Limits struct {
	Requests     Limit
	Tokens       Limit // combined (Anthropic) or the only token budget (OpenAI)
	InputTokens  Limit // Anthropic only
	OutputTokens Limit // Anthropic only
}

// Outcome is what one attempt taught the client.
type Outcome struct {
	Kind    Kind
	Status  int           // HTTP status; 0 when no response arrived
	Latency time.Duration // from sending the request to the end of the response

	// RetryAfter is the server's requested delay: retry-after-ms, then
	// retry-after as seconds or an HTTP date (already converted to a duration
	// at receipt). Meaningful only when HasRetryAfter is set.
	RetryAfter    time.Duration
	HasRetryAfter bool

	// ShouldRetry is the x-should-retry header: nil when absent.
	ShouldRetry *bool

	Limits Limits
	Usage  Usage
	Err    error // the error for Failed and Canceled; nil otherwise
}

// Cost is what an attempt is expected to consume, as far as the caller knows
// before sending it. Strategies that budget tokens use it; others ignore it.
type Cost struct {
	// Provider and Key identify the limit the call counts against: a provider
	// name ("anthropic", "openai") and a key fingerprint, never the key.
	Provider string
	Key      string
	// InputTokens is the caller's estimate of the prompt's tokens.
	InputTokens int
	// CachedInputTokens is the part of InputTokens the caller expects the
	// provider to read from its prompt cache and leave out of its
	// input-tokens limit (Anthropic, for current models; not OpenAI, whose
	// limits count cached input). 0 when none is expected.
	CachedInputTokens int
	// MaxTokens is the request's max_tokens.
	MaxTokens int
}

// Tokens returns the reservation a token budget takes for the call: the
// uncached input (InputTokens less CachedInputTokens) + MaxTokens.
func (c Cost) Tokens() int { return c.uncachedInput() + c.MaxTokens }

// uncachedInput returns the input a provider's input-tokens limit counts:
// InputTokens less CachedInputTokens.
func (c Cost) uncachedInput() int { return max(c.InputTokens-c.CachedInputTokens, 0) }

// A Strategy decides when an attempt may start and learns from how it ended.
// Implementations are safe for concurrent use.
type Strategy interface {
	// Acquire waits until an attempt with cost c may start, or ctx ends.
	// Each Permit it returns must be finished with exactly one Done.
	Acquire(ctx context.Context, c Cost) (Permit, error)
	// Stats returns a snapshot of the strategy's counters and state, with the
	// same fields for every strategy.
	Stats() Stats
}

// A Permit is the right to make one attempt (or, with retries inside the
// slot, a sequence of attempts) that a Strategy granted.
type Permit interface {
	// Observe reports an attempt that ended with o while the permit stays
	// held, because the retry policy retries inside the slot.
	Observe(o Outcome)
	// Done reports the last attempt made under the permit and releases it.
	// It must be called exactly once.
	Done(o Outcome)
}

// Stats is the common snapshot every strategy reports, so that switching
// strategy does not change what a dashboard can show. Fields a strategy has no
// use for stay zero.
type Stats struct {
	InFlight int     `json:"in_flight"`
	Limit    float64 `json:"limit"`            // current concurrency limit or window; 0 = unbounded
	Delay    float64 `json:"delay_seconds"`    // current pacing delay between dispatches
	Rate     float64 `json:"rate_per_second"`  // current pacing rate; 0 = unpaced
	Tokens   float64 `json:"tokens_available"` // token budget available now (adaptive: its scarcest copy of a published one, summed over keys); 0 when not budgeting
	Queued   int     `json:"queued"`           // callers waiting in Acquire

	// Bound names the strategy's own configured bound that its state sits
	// at, as the scenario key and value ("max: 40" for a window at its Max,
	// "min_delay: 10ms" for a delay at its Min; "min" only above 1): a run
	// that ends there was held by its configuration, not by the server.
	// Empty when the state is inside its bounds, or the strategy adapts
	// nothing.
	Bound string `json:"bound,omitempty"`

	WaitSlot       time.Duration `json:"wait_slot_ns"`        // total time callers waited for a slot
	WaitTokens     time.Duration `json:"wait_tokens_ns"`      // total time waited for token budget
	WaitRetryAfter time.Duration `json:"wait_retry_after_ns"` // total time waited on a retry-after gate

	Permits   int64 `json:"permits"` // permits granted by Acquire; each ends with one Done
	Attempts  int64 `json:"attempts"`
	Successes int64 `json:"successes"`
	Throttles int64 `json:"throttles"`
	Overloads int64 `json:"overloads"`
	Errors    int64 `json:"errors"`
	Cancels   int64 `json:"cancels"`
	Quota     int64 `json:"quota,omitempty"` // attempts refused for a spent quota or spend cap
}

// EventType names a change in a strategy's state.
type EventType string

// The state changes a strategy reports.
const (
	EventLimit     EventType = "limit"      // a new concurrency limit or window
	EventDelay     EventType = "delay"      // a new pacing delay
	EventRate      EventType = "rate"       // a new pacing rate
	EventGateClose EventType = "gate_close" // a retry-after gate closed until Until
	EventGateOpen  EventType = "gate_open"  // the gate opened again
)

// Event is one state change, for the run's timeline.
type Event struct {
	Time   time.Time
	Type   EventType
	Value  float64   // the new limit, delay in seconds, or rate
	Until  time.Time // for EventGateClose
	Reason string    // e.g. "throttle", "slow start", "headers"
}

// Observer receives a strategy's events. It is called synchronously and must
// not block or call back into the strategy.
type Observer func(Event)
