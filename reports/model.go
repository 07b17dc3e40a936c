package reports

import "github.com/ratelab/ratelab/measure"

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
	// Tune is loadgen tune's recommendation; nil from loadgen run.
	Tune *Tune `json:"tune,omitempty"`
}

// Result is one strategy's run: the row's name, kind and parameters, what
// the run measured (measure.Summary, embedded as it is, so its fields are
// Result's fields and its JSON keys are Result's keys), the oracle figures
// and the expectations checked against it.
type Result struct {
	Name   string         `json:"name"`
	Kind   string         `json:"kind"`
	Params map[string]any `json:"params,omitempty"`
	// Sweep is what a sweep set on this row (its values are in Params
	// too); nil for a row that is not part of a sweep.
	Sweep []Swept `json:"sweep,omitempty"`

	measure.Summary

	OracleSeconds  float64 `json:"oracle_seconds,omitempty"` // ceil(items / limit) × call time, when defined
	WallOverOracle float64 `json:"wall_over_oracle,omitempty"`

	Expectations []Check `json:"expectations,omitempty"`

	// The server's view (the embedded mock's call accounting): present on
	// every row run against the embedded mock, built-in or command, and nil
	// against a target, where the server cannot be asked. Embedded so its
	// keys are Result's keys; absent from the JSON when unknown.
	*ServerView

	// Arrivals is how items arrived and queued, on a row of a scenario
	// with arrival:; nil otherwise.
	Arrivals *Arrivals `json:"arrivals,omitempty"`

	// Command is how a command row's program ran; nil on other rows.
	Command *Command `json:"command,omitempty"`
}

// ServerView is what the embedded mock measured of a row, from its call
// accounting (mock.CallStats): the same figures for every kind of row.
type ServerView struct {
	// EarlyRetries counts attempts that arrived before the retry-after
	// their call was given.
	EarlyRetries int64 `json:"early_retries"`
	// PeakConcurrency is the most attempts in flight at once.
	PeakConcurrency int `json:"peak_concurrency"`
	// ThrottledBy counts 429s by the limit that refused them
	// ("concurrency", "rpm", "itpm", …).
	ThrottledBy map[string]int64 `json:"throttled_by,omitempty"`
}

// Server returns the server's view of the row, and whether there is one
// (false against a target).
func (r Result) Server() (ServerView, bool) {
	if r.ServerView == nil {
		return ServerView{}, false
	}
	return *r.ServerView, true
}

// SetOracle records the oracle time (ceil(items / limit) × call time) and
// the wall time's ratio to it; an oracle of 0 (undefined) sets neither.
func (r *Result) SetOracle(oracle float64) {
	if oracle > 0 {
		r.OracleSeconds = oracle
		r.WallOverOracle = r.WallSeconds / oracle
	}
}

// Check is one evaluated expectation.
type Check struct {
	Metric   string `json:"metric"`
	Expected string `json:"expected"` // e.g. "= 200", "<= 1.05", "160..180"
	Actual   string `json:"actual"`
	OK       bool   `json:"ok"`
}
