package reports

import (
	"github.com/ratelab/ratelab/internal/reportcard"
	"github.com/ratelab/ratelab/measure"
)

// Report is the result of one scenario run: one Result per strategy, in the
// scenario file's order. Its JSON form is the contract `loadgen run --format
// json` prints and report.json holds; changing a field name is a breaking
// change.
type Report struct {
	Scenario    string `json:"scenario"`
	Description string `json:"description,omitempty"`
	Target      string `json:"target"` // "embedded mock" or the target URL
	Incomplete  bool   `json:"incomplete,omitempty"`
	// Simulated marks a run in simulated time (loadgen run --virtual);
	// every format says so (SimulatedNote).
	Simulated bool     `json:"simulated,omitempty"`
	Results   []Result `json:"results"`
	// Oracle is what the oracle (Result.OracleSeconds) assumes, a line
	// each; nil when the scenario has none.
	Oracle []string `json:"oracle_assumptions,omitempty"`
	// Tune is loadgen tune's recommendation; nil from loadgen run.
	Tune *Tune `json:"tune,omitempty"`
}

// SimulatedNote is what every format says of a simulated report.
const SimulatedNote = "simulated: the embedded mock's rules in simulated time (loadgen --virtual), no real network or OS scheduling"

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

	// CostUSD is what the row's tokens cost at the mock's prices: the
	// synchronous ones for a fan-out row, the batch ones for a batch-api
	// row; 0 without prices.
	CostUSD float64 `json:"cost_usd,omitempty"`

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

	// TimerLateness is how late this process's timers fired while the row
	// ran in real time; nil when it was not measured (a row in simulated
	// time, whose timers are never late).
	TimerLateness *TimerLateness `json:"timer_lateness,omitempty"`
}

// TimerLateness is what a probe measured while a row ran: a goroutine that
// asks to sleep PeriodSeconds over and over, and records how much later
// than asked it wakes each time. On a quiet machine Go's timers wake within
// about a millisecond; on a busy one the process waits for a CPU, and so
// does every timer, read and write of the row. LostSeconds, the lateness
// beyond FloorSeconds summed over the wakes, is about the time the machine
// held the process back while the row ran: an expectation on a wall time
// allows for it (Check.Allowance).
type TimerLateness struct {
	PeriodSeconds float64 `json:"period_seconds"`
	Wakes         int     `json:"wakes"`
	// P50, P99 and Max are the wakes' lateness, s.
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	// FloorSeconds is the lateness of one wake that counts as the
	// runtime's own timer resolution, not the machine's load.
	FloorSeconds float64 `json:"floor_seconds"`
	LostSeconds  float64 `json:"lost_seconds"`
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
	// Card is the report card: how the client treated the server's
	// refusals. nil in a report written before it existed.
	Card *ReportCard `json:"report_card,omitempty"`
}

// ReportCard is the server's verdict on a client's retries and
// concurrency (docs/loadgen.md, "The report card"); with EarlyRetries
// (ServerView) it makes the card.
type ReportCard = reportcard.Card

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
	// Allowance is how far an expectation on a real-time wall was widened
	// upward for the timer lateness measured in the run (TimerLateness), in
	// the metric's unit; Expected then names both the written and the
	// widened bound. 0 in simulated time and for other metrics.
	Allowance float64 `json:"allowance,omitempty"`
	// NeededAllowance is true when the check held only with its
	// Allowance: as written, it would have failed.
	NeededAllowance bool `json:"needed_allowance,omitempty"`
}
