package reports

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// A column is one column of the per-strategy summary that the table,
// Markdown and HTML renderers share, so the three always agree.
type column struct {
	short  string // header in the terminal table, where width is scarce
	long   string // header in Markdown and HTML
	title  string // what the column means, for HTML tooltips
	number bool   // right-aligned
	cell   func(Result) string
}

// summaryColumns are the columns of the guide's table and then some, in
// display order.
var summaryColumns = []column{
	{"strategy", "strategy", "the strategy's name in the scenario", false, func(r Result) string { return r.Name }},
	{"completed", "completed", "items completed of items started", true, completedCell},
	{"attempts", "attempts", "HTTP attempts", true, func(r Result) string { return formatInt(r.Attempts) }},
	{"429s", "429s", "attempts rejected with 429 (rate limited)", true, func(r Result) string { return formatInt(r.Throttled) }},
	{"5xx", "529/5xx", "attempts answered 529 or 503 (overloaded) or another 5xx", true, func(r Result) string { return formatInt(r.Overloaded + r.ServerErrors) }},
	{"errors", "errors", "other failed attempts: 4xx, connection and stream errors", true, func(r Result) string { return formatInt(r.Errors) }},
	{"att/call", "attempts/call", "HTTP attempts per completed item", true, attemptsPerCallCell},
	{"wall s", "wall s", "wall-clock time of the run, seconds", true, func(r Result) string { return formatFixed(r.WallSeconds, 2) }},
	{"oracle s", "oracle s", "ideal time: ceil(items / server limit) × call time, seconds", true, oracleCell},
	{"wall/oracle", "wall/oracle", "wall time over oracle time; 1.00 is ideal", true, wallOverOracleCell},
	{"p50", "p50", "median end-to-end time per item, including waits and retries", true, func(r Result) string { return formatPercentile(r.EndToEnd, r.EndToEnd.P50) }},
	{"p99", "p99", "99th percentile end-to-end time per item", true, func(r Result) string { return formatPercentile(r.EndToEnd, r.EndToEnd.P99) }},
}

func completedCell(r Result) string {
	if r.Items == 0 {
		return formatInt(r.Completed)
	}
	return formatInt(r.Completed) + " of " + formatInt(r.Items)
}

func attemptsPerCallCell(r Result) string {
	if r.Completed == 0 {
		return "-"
	}
	return formatFixed(r.AttemptsPerCall, 2)
}

func oracleCell(r Result) string {
	if r.OracleSeconds <= 0 {
		return "-"
	}
	return formatFixed(r.OracleSeconds, 2)
}

// wallOverOracle is the result's wall/oracle ratio, derived when the run
// left it out, and false when there is no oracle.
func wallOverOracle(r Result) (float64, bool) {
	if r.OracleSeconds <= 0 {
		return 0, false
	}
	if r.WallOverOracle > 0 {
		return r.WallOverOracle, true
	}
	return r.WallSeconds / r.OracleSeconds, true
}

func wallOverOracleCell(r Result) string {
	v, ok := wallOverOracle(r)
	if !ok {
		return "-"
	}
	return formatFixed(v, 2)
}

// expectationTally counts a report's evaluated expectations.
func expectationTally(r Report) (total, failed int) {
	for _, res := range r.Results {
		for _, c := range res.Expectations {
			total++
			if !c.OK {
				failed++
			}
		}
	}
	return total, failed
}

// failedCheckLine describes one failed expectation in one line of text.
func failedCheckLine(strategy string, c Check) string {
	return fmt.Sprintf("%s: %s: expected %s, got %s", strategy, c.Metric, c.Expected, c.Actual)
}

// serverColumns are the server's view of a row (ServerView). Markdown and
// HTML append them to summaryColumns when any row has that view; the
// terminal table, already about 120 columns wide, leaves them out and names
// the rows with early retries under the table instead (see serverNotes).
var serverColumns = []column{
	{"peak", "peak concurrency", "most attempts in flight at once, as the server counted them", true, func(r Result) string {
		v, ok := r.Server()
		if !ok {
			return "-"
		}
		return formatInt(v.PeakConcurrency)
	}},
	{"early", "early retries", "attempts that arrived before the retry-after their call was given, as the server counted them", true, func(r Result) string {
		v, ok := r.Server()
		if !ok {
			return "-"
		}
		return formatInt(v.EarlyRetries)
	}},
}

// wideColumns are the summary columns of Markdown and HTML: tableColumns,
// then serverColumns when any result has a server view (a run against a
// target has none, and a column of dashes says nothing).
func wideColumns(results []Result) []column {
	cols := tableColumns(results)
	for _, r := range results {
		if _, ok := r.Server(); ok {
			return append(slices.Clip(cols), serverColumns...)
		}
	}
	return cols
}

// tableColumns are the terminal table's columns: summaryColumns, then
// arrivalColumns when any result is open-loop (a scenario with arrival:),
// so that a closed-loop table is as it always was.
func tableColumns(results []Result) []column {
	cols := summaryColumns
	if openLoop(results) {
		cols = append(slices.Clip(cols), arrivalColumns...)
	}
	if comparesCost(results) {
		cols = append(slices.Clip(cols), costColumn)
	}
	return cols
}

// comparesCost reports whether a row is a provider batch API's (kind
// batch-api), whose point beside fan-out rows is its price: the table then
// shows every row's cost.
func comparesCost(results []Result) bool {
	return slices.ContainsFunc(results, func(r Result) bool { return r.Kind == "batch-api" })
}

// costColumn is what a row's tokens cost at the mock's prices (CostUSD).
var costColumn = column{"cost $", "cost (USD)", "what the row's tokens cost at the mock's prices (batch prices for a batch-api row)", true, func(r Result) string {
	return formatFixed(r.CostUSD, 2)
}}

// openLoop reports whether any result has open-loop figures.
func openLoop(results []Result) bool {
	return slices.ContainsFunc(results, func(r Result) bool { return r.Arrivals != nil })
}

// arrivalColumns are an open-loop row's figures (Arrivals): how much it
// served of what arrived, and how long items queued before their first
// attempt.
var arrivalColumns = []column{
	{"goodput/s", "goodput /s", "completed items per second of wall time, against the arrival rate", true, fromArrivals(func(a Arrivals) string {
		return formatFixed(a.GoodputPerSecond, 2)
	})},
	{"queue p50", "queueing p50", "median time from an item's arrival to its first attempt", true, fromArrivals(func(a Arrivals) string {
		return formatPercentile(a.QueueingDelay, a.QueueingDelay.P50)
	})},
	{"queue p99", "queueing p99", "99th percentile time from an item's arrival to its first attempt", true, fromArrivals(func(a Arrivals) string {
		return formatPercentile(a.QueueingDelay, a.QueueingDelay.P99)
	})},
}

// fromArrivals is a cell of the open-loop figures: "-" on a row without
// them.
func fromArrivals(f func(Arrivals) string) func(Result) string {
	return func(r Result) string {
		if r.Arrivals == nil {
			return "-"
		}
		return f(*r.Arrivals)
	}
}

// arrivalLine describes how items arrived, from the first open-loop row:
// "items arrive as a poisson process at 20/s, the last at 11.10 s"; "" for
// a closed-loop run.
func arrivalLine(results []Result) string {
	for _, r := range results {
		if a := r.Arrivals; a != nil {
			return fmt.Sprintf("items arrive as a %s process at %s/s, the last at %s s", a.Process,
				formatRate(a.RatePerSecond), formatFixed(a.ArrivalSeconds, 2))
		}
	}
	return ""
}

// formatRate formats a rate per second with the decimals it needs, up to
// three: 20, 0.5, 16.667.
func formatRate(f float64) string {
	for d := range 3 {
		if p := math.Pow10(d); math.Abs(f*p-math.Round(f*p)) < 1e-9*p {
			return formatFixed(f, d)
		}
	}
	return formatFixed(f, 3)
}

// commandLine describes how a command row's program ran, in one clause
// without a final period: its own run time (start to exit), how it ended,
// and the span of its requests as the server saw them (the row's wall
// time); "" for other rows.
func commandLine(r Result) string {
	c := r.Command
	if c == nil {
		return ""
	}
	s := fmt.Sprintf("ran %s s, %s", formatFixed(c.Seconds, 2), c.Status)
	if r.Attempts > 0 {
		s += fmt.Sprintf("; its requests spanned %s s (first request to last response)", formatFixed(r.WallSeconds, 2))
	}
	return s
}

// throttledByLimit formats 429s by the limit that refused them as
// "max_concurrent 480, rpm 12", in limit order; "" when unknown or none.
func throttledByLimit(r Result) string {
	v, _ := r.Server()
	keys := slices.Sorted(maps.Keys(v.ThrottledBy))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if n := v.ThrottledBy[k]; n > 0 {
			parts = append(parts, k+" "+formatInt(n))
		}
	}
	return strings.Join(parts, ", ")
}
