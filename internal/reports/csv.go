package reports

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// csvColumns are CSV's columns in their fixed order. Names are the JSON
// field names (percentiles flattened as <distribution>_<percentile>), so a
// script can switch between the two formats. New columns are only ever
// appended.
var csvColumns = []struct {
	name  string
	value func(Report, Result) string
}{
	{"scenario", func(r Report, _ Result) string { return r.Scenario }},
	{"name", func(_ Report, x Result) string { return x.Name }},
	{"kind", func(_ Report, x Result) string { return x.Kind }},
	{"items", func(_ Report, x Result) string { return strconv.Itoa(x.Items) }},
	{"completed", func(_ Report, x Result) string { return strconv.Itoa(x.Completed) }},
	{"failed", func(_ Report, x Result) string { return strconv.Itoa(x.Failed) }},
	{"attempts", func(_ Report, x Result) string { return strconv.FormatInt(x.Attempts, 10) }},
	{"throttled", func(_ Report, x Result) string { return strconv.FormatInt(x.Throttled, 10) }},
	{"overloaded", func(_ Report, x Result) string { return strconv.FormatInt(x.Overloaded, 10) }},
	{"server_errors", func(_ Report, x Result) string { return strconv.FormatInt(x.ServerErrors, 10) }},
	{"errors", func(_ Report, x Result) string { return strconv.FormatInt(x.Errors, 10) }},
	{"attempts_per_call", func(_ Report, x Result) string { return number(x.AttemptsPerCall) }},
	{"max_attempts", func(_ Report, x Result) string { return strconv.Itoa(x.MaxAttempts) }},
	{"failed_tokens", func(_ Report, x Result) string { return strconv.FormatInt(x.FailedTokens, 10) }},
	{"input_tokens", func(_ Report, x Result) string { return strconv.FormatInt(x.InputTokens, 10) }},
	{"output_tokens", func(_ Report, x Result) string { return strconv.FormatInt(x.OutputTokens, 10) }},
	{"wall_seconds", func(_ Report, x Result) string { return number(x.WallSeconds) }},
	{"oracle_seconds", func(_ Report, x Result) string { return optional(x.OracleSeconds) }},
	{"wall_over_oracle", func(_ Report, x Result) string {
		if v, ok := wallOverOracle(x); ok {
			return number(v)
		}
		return ""
	}},
	{"end_to_end_p50", func(_ Report, x Result) string { return number(x.EndToEnd.P50) }},
	{"end_to_end_p90", func(_ Report, x Result) string { return number(x.EndToEnd.P90) }},
	{"end_to_end_p99", func(_ Report, x Result) string { return number(x.EndToEnd.P99) }},
	{"end_to_end_max", func(_ Report, x Result) string { return number(x.EndToEnd.Max) }},
	{"attempt_p50", func(_ Report, x Result) string { return number(x.Attempt.P50) }},
	{"attempt_p99", func(_ Report, x Result) string { return number(x.Attempt.P99) }},
	{"wait_slot_p50", func(_ Report, x Result) string { return number(x.WaitSlot.P50) }},
	{"wait_slot_p99", func(_ Report, x Result) string { return number(x.WaitSlot.P99) }},
	{"wait_tokens_p50", func(_ Report, x Result) string { return number(x.WaitTokens.P50) }},
	{"wait_tokens_p99", func(_ Report, x Result) string { return number(x.WaitTokens.P99) }},
	{"backoff_p50", func(_ Report, x Result) string { return number(x.Backoff.P50) }},
	{"backoff_p99", func(_ Report, x Result) string { return number(x.Backoff.P99) }},
	{"ttft_p50", func(_ Report, x Result) string {
		if x.TTFT == nil {
			return ""
		}
		return number(x.TTFT.P50)
	}},
	{"ttft_p99", func(_ Report, x Result) string {
		if x.TTFT == nil {
			return ""
		}
		return number(x.TTFT.P99)
	}},
	{"final_limit", func(_ Report, x Result) string { return optional(x.FinalLimit) }},
	{"expectations", func(_ Report, x Result) string { return strconv.Itoa(len(x.Expectations)) }},
	{"expectations_failed", func(_ Report, x Result) string {
		n := 0
		for _, c := range x.Expectations {
			if !c.OK {
				n++
			}
		}
		return strconv.Itoa(n)
	}},
	{"incomplete", func(r Report, x Result) string { return strconv.FormatBool(r.Incomplete || x.Incomplete) }},
	{"canceled", func(_ Report, x Result) string { return strconv.Itoa(x.Canceled) }},
	{"invalid", func(_ Report, x Result) string { return strconv.FormatInt(x.Invalid, 10) }},
	{"wait_retry_after_p50", func(_ Report, x Result) string { return number(x.WaitRetryAfter.P50) }},
	{"wait_retry_after_p99", func(_ Report, x Result) string { return number(x.WaitRetryAfter.P99) }},
	{"wait_retry_after_max", func(_ Report, x Result) string { return number(x.WaitRetryAfter.Max) }},
	// The server's view (empty against a target) and a command row's
	// program (empty on other rows).
	{"early_retries", fromServer(func(v ServerView) string { return strconv.FormatInt(v.EarlyRetries, 10) })},
	{"peak_concurrency", fromServer(func(v ServerView) string { return strconv.Itoa(v.PeakConcurrency) })},
	{"command_status", fromCommand(func(c *Command) string { return c.Status })},
	{"command_exit_code", fromCommand(func(c *Command) string { return strconv.Itoa(c.ExitCode) })},
	{"command_timed_out", fromCommand(func(c *Command) string { return strconv.FormatBool(c.TimedOut) })},
	{"command_seconds", fromCommand(func(c *Command) string { return number(c.Seconds) })},
	{"simulated", func(r Report, _ Result) string { return strconv.FormatBool(r.Simulated) }},
}

// csvArrivalColumns are appended to csvColumns when any row is open-loop
// (a scenario with arrival:), so that a closed-loop CSV is as it always
// was. Names are the JSON fields under "arrivals", prefixed where alone
// they would be ambiguous.
var csvArrivalColumns = []struct {
	name  string
	value func(Report, Result) string
}{
	{"arrival_process", fromArrivalsCSV(func(a Arrivals) string { return a.Process })},
	{"arrival_rate_per_second", fromArrivalsCSV(func(a Arrivals) string { return number(a.RatePerSecond) })},
	{"arrival_seconds", fromArrivalsCSV(func(a Arrivals) string { return number(a.ArrivalSeconds) })},
	{"goodput_per_second", fromArrivalsCSV(func(a Arrivals) string { return number(a.GoodputPerSecond) })},
	{"queueing_delay_p50", fromArrivalsCSV(func(a Arrivals) string { return number(a.QueueingDelay.P50) })},
	{"queueing_delay_p90", fromArrivalsCSV(func(a Arrivals) string { return number(a.QueueingDelay.P90) })},
	{"queueing_delay_p99", fromArrivalsCSV(func(a Arrivals) string { return number(a.QueueingDelay.P99) })},
	{"queueing_delay_max", fromArrivalsCSV(func(a Arrivals) string { return number(a.QueueingDelay.Max) })},
	{"queueing_delay_mean", fromArrivalsCSV(func(a Arrivals) string { return number(a.QueueingDelay.Mean) })},
}

// fromArrivalsCSV is a column of the open-loop figures: an empty cell on a
// row without them.
func fromArrivalsCSV(f func(Arrivals) string) func(Report, Result) string {
	return func(_ Report, x Result) string {
		if x.Arrivals == nil {
			return ""
		}
		return f(*x.Arrivals)
	}
}

// fromServer is a column of the server's view: an empty cell on a row
// without one (a run against a target).
func fromServer(f func(ServerView) string) func(Report, Result) string {
	return func(_ Report, x Result) string {
		if v, ok := x.Server(); ok {
			return f(v)
		}
		return ""
	}
}

// fromCommand is a column of a command row's program: an empty cell on
// other rows.
func fromCommand(f func(*Command) string) func(Report, Result) string {
	return func(_ Report, x Result) string {
		if x.Command == nil {
			return ""
		}
		return f(x.Command)
	}
}

// optional formats a value the model omits when zero as an empty cell.
func optional(f float64) string {
	if f == 0 {
		return ""
	}
	return number(f)
}

// CSV writes r as CSV: a header row of column names, then one row per
// strategy. The column order is fixed and numbers are plain (no separators,
// no units; seconds for times); a value the run did not define, such as the
// oracle time or time to first token, is an empty cell. An open-loop run
// (a scenario with arrival:) has csvArrivalColumns after the rest.
func CSV(w io.Writer, r Report) error {
	cw := csv.NewWriter(w)
	cols := csvColumns
	if openLoop(r.Results) {
		cols = append(slices.Clip(cols), csvArrivalColumns...)
	}
	row := make([]string, len(cols))
	for i, c := range cols {
		row[i] = c.name
	}
	if err := cw.Write(row); err != nil {
		return fmt.Errorf("reports: csv: %w", err)
	}
	for _, res := range r.Results {
		for i, c := range cols {
			row[i] = c.value(r, res)
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("reports: csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("reports: csv: %w", err)
	}
	return nil
}
