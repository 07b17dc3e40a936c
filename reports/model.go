package reports

// Report is the result of one scenario run: one Result per strategy, in the
// scenario file's order. Its JSON form is the contract `loadgen run --format
// json` prints and report.json holds; changing a field name is a breaking
// change.
type Report struct {
	Scenario    string   `json:"scenario"`
	Description string   `json:"description,omitempty"`
	Target      string   `json:"target"` // "embedded mock" or the target URL
	Incomplete  bool     `json:"incomplete,omitempty"`
	Results     []Result `json:"results"`
}

// Result is one strategy's run.
type Result struct {
	Name   string         `json:"name"`
	Kind   string         `json:"kind"`
	Params map[string]any `json:"params,omitempty"`

	Items     int `json:"items"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`

	Attempts     int64 `json:"attempts"`      // HTTP attempts
	Throttled    int64 `json:"throttled"`     // 429s
	Overloaded   int64 `json:"overloaded"`    // 529 / 503
	ServerErrors int64 `json:"server_errors"` // other 5xx
	Errors       int64 `json:"errors"`        // other failed attempts (4xx, connection, stream)

	AttemptsPerCall    float64 `json:"attempts_per_call"`    // attempts / completed
	ThrottledByAttempt []int64 `json:"throttled_by_attempt"` // [i] = 429s on attempt i+1
	MaxAttempts        int     `json:"max_attempts"`         // most attempts any item took
	FailedTokens       int64   `json:"failed_tokens"`        // tokens reserved by attempts that did not succeed
	InputTokens        int64   `json:"input_tokens"`
	OutputTokens       int64   `json:"output_tokens"`

	WallSeconds    float64 `json:"wall_seconds"`
	OracleSeconds  float64 `json:"oracle_seconds,omitempty"` // ceil(items / limit) × call time, when defined
	WallOverOracle float64 `json:"wall_over_oracle,omitempty"`

	// Latency percentiles in seconds.
	EndToEnd   Percentiles  `json:"end_to_end"`
	Attempt    Percentiles  `json:"attempt"`
	WaitSlot   Percentiles  `json:"wait_slot"`
	WaitTokens Percentiles  `json:"wait_tokens"`
	Backoff    Percentiles  `json:"backoff"`
	TTFT       *Percentiles `json:"ttft,omitempty"` // streaming only

	FinalLimit float64 `json:"final_limit,omitempty"` // the strategy's limit when the run ended

	Timeline *Timeline `json:"timeline,omitempty"`

	Expectations []Check `json:"expectations,omitempty"`
	Incomplete   bool    `json:"incomplete,omitempty"` // interrupted before every item finished
}

// Percentiles summarises a latency distribution, in seconds.
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
	// RequestedResolutionSeconds is the resolution asked for when it was too
	// fine for the run and ResolutionSeconds was used instead (at most
	// engine.MaxTimelinePoints points are kept); 0 otherwise.
	RequestedResolutionSeconds float64 `json:"requested_resolution_seconds,omitempty"`
	Points                     []Point `json:"points"`
	// Events are the strategy's state changes (a new limit, a new delay, a
	// retry-after gate closing or opening), in order. A run keeps at most
	// MaxEvents; EventsDropped counts the rest.
	Events        []Event `json:"events,omitempty"`
	EventsDropped int     `json:"events_dropped,omitempty"`
}

// MaxEvents caps the events one timeline keeps, so a long run's report
// stays small.
const MaxEvents = 10000

// Event is one state change of a strategy (see strategies.Event).
type Event struct {
	T      float64 `json:"t"`               // seconds since the strategy's start
	Type   string  `json:"type"`            // limit, delay, rate, gate_close, gate_open
	Value  float64 `json:"value,omitempty"` // the new limit, delay in seconds, or rate
	Until  float64 `json:"until,omitempty"` // gate_close: when the gate opens, seconds since the start
	Reason string  `json:"reason,omitempty"`
}

// Point is one timeline sample; rates are per second over the sample's interval.
type Point struct {
	T               float64 `json:"t"` // seconds since the strategy's start
	InFlight        int     `json:"in_flight"`
	CompletionsRate float64 `json:"completions_per_second"`
	ThrottlesRate   float64 `json:"throttles_per_second"`
	Limit           float64 `json:"limit"`
	DelaySeconds    float64 `json:"delay_seconds"`
	Tokens          float64 `json:"tokens_available"`
}

// Check is one evaluated expectation.
type Check struct {
	Metric   string `json:"metric"`
	Expected string `json:"expected"` // e.g. "= 200", "<= 1.05", "160..180"
	Actual   string `json:"actual"`
	OK       bool   `json:"ok"`
}
