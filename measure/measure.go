// Package measure holds what a run measured: the Summary of its accounting,
// latency Percentiles and the Timeline.
//
// It is the one declaration of these types: engine's Recorder fills them,
// reports renders them as they are, and loadgen builds a report row by
// embedding a Summary, so no field is copied (or lost) on the way from the
// measurement to the report.
//
// It imports only strategies (for the strategy's Stats), so both engine and
// reports may import it without reports reaching net/http.
package measure

import "github.com/ratelab/ratelab/strategies"

// Summary is a run's accounting, in the units reports print (times in
// seconds). Its JSON field names are part of the contract `loadgen run
// --format json` prints (reports.Result embeds it).
type Summary struct {
	Items     int `json:"items"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Canceled counts items taken but not finished: in progress when the
	// run was interrupted, or finished after a sink failed. They are neither
	// completed nor failed and reached no sink, so a resumed batch makes
	// them again. Items = Completed + Failed + Canceled, plus, for an
	// interrupted run, the items that were never taken.
	Canceled int `json:"canceled"`

	Attempts     int64 `json:"attempts"`        // HTTP attempts
	Throttled    int64 `json:"throttled"`       // 429s
	Overloaded   int64 `json:"overloaded"`      // 529 / 503
	ServerErrors int64 `json:"server_errors"`   // other 5xx
	Errors       int64 `json:"errors"`          // other failed attempts (4xx, connection, stream)
	Quota        int64 `json:"quota,omitempty"` // refused for a spent quota or spend cap (never retried)

	// Invalid counts successful responses the run's check rejected.
	Invalid int64 `json:"invalid,omitempty"`

	AttemptsPerCall    float64 `json:"attempts_per_call"`    // attempts / completed
	ThrottledByAttempt []int64 `json:"throttled_by_attempt"` // [i] = 429s on attempt i+1
	MaxAttempts        int     `json:"max_attempts"`         // most attempts any item took
	FailedTokens       int64   `json:"failed_tokens"`        // tokens reserved (Cost.Tokens) by attempts that did not succeed
	InputTokens        int64   `json:"input_tokens"`         // reported by the server, over all attempts
	OutputTokens       int64   `json:"output_tokens"`

	WallSeconds float64 `json:"wall_seconds"`

	// Latency percentiles in seconds. EndToEnd and the waits are per
	// finished item (its totals); Attempt is per attempt. Backoff is all the
	// time an item spent between its attempts: WaitRetryAfter (the server
	// asked) plus the retry policy's own backoff.
	EndToEnd       Percentiles  `json:"end_to_end"`
	Attempt        Percentiles  `json:"attempt"`
	WaitSlot       Percentiles  `json:"wait_slot"`
	WaitTokens     Percentiles  `json:"wait_tokens"`
	Backoff        Percentiles  `json:"backoff"`
	WaitRetryAfter Percentiles  `json:"wait_retry_after"`
	TTFT           *Percentiles `json:"ttft,omitempty"` // streaming only

	FinalLimit float64          `json:"final_limit,omitempty"` // the strategy's limit when the run ended
	Stats      strategies.Stats `json:"stats"`                 // the strategy's final Stats

	Timeline *Timeline `json:"timeline,omitempty"`

	Incomplete bool `json:"incomplete,omitempty"` // interrupted before every item finished
}

// Percentiles summarises a latency distribution, in seconds. engine takes
// P50, P90 and P99 from an HdrHistogram (3 significant digits); Max and Mean
// are exact.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

// Timeline samples a run at a fixed resolution, and lists the strategy's
// state changes as they happened.
type Timeline struct {
	ResolutionSeconds float64 `json:"resolution_seconds"`
	// RequestedResolutionSeconds is the resolution asked for, when it was
	// too fine to keep (engine.MaxTimelinePoints, engine.MinResolution) and
	// ResolutionSeconds is the one used instead; 0 otherwise.
	RequestedResolutionSeconds float64 `json:"requested_resolution_seconds,omitempty"`
	Points                     []Point `json:"points"`
	// Events are the strategy's state changes (a new limit, a new delay, a
	// retry-after gate closing or opening), in order; whoever observes the
	// strategy adds them (engine.Run does not). A run keeps at most
	// MaxEvents; EventsDropped counts the rest.
	Events        []StrategyEvent `json:"events,omitempty"`
	EventsDropped int             `json:"events_dropped,omitempty"`
}

// MaxEvents caps the events one timeline keeps, so a long run's report
// stays small.
const MaxEvents = 10000

// Point is one timeline sample; rates are per second over the interval that
// ends at T, and the strategy's state is as Stats reported it at T. Every
// strategy fills the same series, so switching strategy keeps a dashboard:
// Limit (its concurrency limit or window; 0 = unbounded), DelaySeconds (its
// pacing delay; 0 = unpaced), Tokens (the token budget it has available:
// its own, or adaptive's copy of a published one; 0 when it budgets none)
// and Queued (callers waiting in its Acquire).
type Point struct {
	T               float64 `json:"t"` // seconds since the run's start
	InFlight        int     `json:"in_flight"`
	MaxInFlight     int     `json:"max_in_flight,omitempty"` // the most in flight during the interval; 0 when not sampled
	CompletionsRate float64 `json:"completions_per_second"`
	ThrottlesRate   float64 `json:"throttles_per_second"`
	Limit           float64 `json:"limit"`
	DelaySeconds    float64 `json:"delay_seconds"`
	Tokens          float64 `json:"tokens_available"`
	Queued          int     `json:"queued"`
}

// StrategyEvent is one state change of a strategy, as a run records it: a
// strategies.Event with its time in seconds since the strategy's start.
type StrategyEvent struct {
	T      float64 `json:"t"`               // seconds since the strategy's start
	Type   string  `json:"type"`            // limit, delay, rate, gate_close, gate_open
	Value  float64 `json:"value,omitempty"` // the new limit, delay in seconds, or rate
	Until  float64 `json:"until,omitempty"` // gate_close: when the gate opens, seconds since the start
	Reason string  `json:"reason,omitempty"`
}
