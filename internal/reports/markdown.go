package reports

import (
	"fmt"
	"github.com/ratelab/ratelab/measure"
	"io"
	"maps"
	"slices"
	"strings"
)

// Markdown writes r as GitHub-flavoured Markdown: a title naming the
// scenario, the summary table (Table's columns, then peak concurrency and
// early retries when the server measured them: wideColumns), the expectation
// tally, loadgen tune's recommendation when there is one, and then a
// section per strategy with its kind and parameters, its
// latency percentiles, 429s by attempt number, token counts and each
// expectation's result. Text from the report is escaped, so a strategy name
// cannot break the table or inject markup.
func Markdown(w io.Writer, r Report) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "# %s\n\n", mdEscape(r.Scenario))
	if r.Description != "" {
		fmt.Fprintf(ew, "%s\n\n", mdEscape(r.Description))
	}
	fmt.Fprintf(ew, "Target: %s. Strategies: %d.\n\n", mdEscape(targetName(r)), len(r.Results))
	if l := arrivalLine(r.Results); l != "" {
		fmt.Fprintf(ew, "Open loop: %s.\n\n", mdEscape(l))
	}
	if r.Incomplete {
		fmt.Fprint(ew, "> **Incomplete:** the run was interrupted; the figures cover what finished.\n\n")
	}
	if r.Simulated {
		fmt.Fprintf(ew, "> **Simulated:** %s.\n\n", mdEscape(SimulatedNote))
	}

	markdownColumns(ew, wideColumns(r.Results), r.Results, " (incomplete)")
	markdownCard(ew, r.Results)
	if len(r.Oracle) > 0 {
		fmt.Fprint(ew, "**Oracle:** the best any client could do, assuming:\n\n")
		for _, a := range r.Oracle {
			fmt.Fprintf(ew, "- %s\n", mdEscape(a))
		}
		fmt.Fprintln(ew)
	}

	if total, failed := expectationTally(r); total > 0 {
		if failed == 0 {
			fmt.Fprintf(ew, "**Expectations:** all %s met.\n\n", formatInt(total))
		} else {
			fmt.Fprintf(ew, "**Expectations:** %s of %s failed.\n\n", formatInt(failed), formatInt(total))
			for _, res := range r.Results {
				for _, c := range res.Expectations {
					if !c.OK {
						fmt.Fprintf(ew, "- ❌ %s\n", mdEscape(failedCheckLine(res.Name, c)))
					}
				}
			}
			fmt.Fprintln(ew)
		}
	}

	if b := newSweepBest(r.Tune); b != nil {
		if b.None {
			fmt.Fprintf(ew, "**Recommended:** none: no row completed every item within the constraint (%s).\n\n", b.Constraint)
		} else {
			fmt.Fprintf(ew, "**Recommended** by %s, %s: **%s**, %s", b.Objective, b.Constraint, mdEscape(b.Name), b.Value)
			if b.Next != "" {
				fmt.Fprintf(ew, ", %s ahead of %s (%s).\n\n", b.Margin, mdEscape(b.Next), b.NextValue)
			} else {
				fmt.Fprint(ew, "; no other row qualified.\n\n")
			}
		}
	}

	for _, res := range r.Results {
		markdownStrategy(ew, res)
	}
	if ew.err != nil {
		return fmt.Errorf("reports: markdown: %w", ew.err)
	}
	return nil
}

// markdownStrategy writes one strategy's section.
func markdownStrategy(w io.Writer, res Result) {
	fmt.Fprintf(w, "## %s\n\n", mdEscape(res.Name))
	kind := "Kind: " + mdEscape(res.Kind)
	if len(res.Params) > 0 {
		kind += "; " + mdEscape(formatParams(res.Params))
	}
	fmt.Fprintf(w, "%s.\n\n", kind)

	rows := latencyRows(res)
	if len(rows) > 0 {
		mdRow(w, []string{"latency", "count", "p50", "p90", "p99", "max", "mean"})
		mdRow(w, []string{"---", "--:", "--:", "--:", "--:", "--:", "--:"})
		for _, l := range rows {
			p := l.p
			mdRow(w, []string{l.name, formatInt(p.Count), formatLatency(p.P50), formatLatency(p.P90),
				formatLatency(p.P99), formatLatency(p.Max), formatLatency(p.Mean)})
		}
		fmt.Fprintln(w)
	}

	var facts []string
	if c := res.Command; c != nil {
		in := ""
		if c.Dir != "" {
			in = " in " + mdCode(c.Dir)
		}
		facts = append(facts, fmt.Sprintf("Command: %s%s %s.", mdCode(strings.Join(c.Argv, " ")), in, mdEscape(commandLine(res))))
		if c.Stdout != "" || c.Stderr != "" {
			facts = append(facts, fmt.Sprintf("Output: %s, %s.", mdCode(c.Stdout), mdCode(c.Stderr)))
		}
	}
	if v, ok := res.Server(); ok {
		facts = append(facts, fmt.Sprintf("Server side: peak concurrency %s, early retries %s.", formatInt(v.PeakConcurrency), formatInt(v.EarlyRetries)))
	}
	if s := throttledByLimit(res); s != "" {
		facts = append(facts, "429s by limit: "+mdEscape(s)+".")
	}
	if s := throttledByAttempt(res.ThrottledByAttempt); s != "" {
		facts = append(facts, "429s by attempt: "+s+".")
	}
	if a := res.Arrivals; a != nil {
		facts = append(facts, "Open loop: "+mdEscape(arrivalFacts(*a))+".")
	}
	if res.MaxAttempts > 0 {
		facts = append(facts, fmt.Sprintf("Most attempts for one item: %s.", formatInt(res.MaxAttempts)))
	}
	if res.Command != nil && (res.InputTokens > 0 || res.OutputTokens > 0) {
		// The server counts the tokens it used, not what a client reserved.
		facts = append(facts, fmt.Sprintf("Tokens: %s in, %s out.", formatInt(res.InputTokens), formatInt(res.OutputTokens)))
	} else if res.InputTokens > 0 || res.OutputTokens > 0 || res.FailedTokens > 0 {
		facts = append(facts, fmt.Sprintf("Tokens: %s in, %s out, %s reserved by failed attempts.",
			formatInt(res.InputTokens), formatInt(res.OutputTokens), formatInt(res.FailedTokens)))
	}
	if res.Canceled > 0 {
		facts = append(facts, fmt.Sprintf("Canceled: %s items taken but not finished.", formatInt(res.Canceled)))
	}
	if res.Invalid > 0 {
		facts = append(facts, fmt.Sprintf("Invalid responses (succeeded but rejected by the check): %s.", formatInt(res.Invalid)))
	}
	if res.FinalLimit > 0 {
		facts = append(facts, fmt.Sprintf("Final limit: %s.", formatFixed(res.FinalLimit, 0)))
	}
	if res.Quota > 0 {
		facts = append(facts, fmt.Sprintf("**Quota spent:** %s attempts refused for a spent quota or spend cap (never retried).", formatInt(res.Quota)))
	}
	if res.Stats.Bound != "" {
		facts = append(facts, fmt.Sprintf("**Ended at its own bound** (`%s`), not at a limit the server set.", res.Stats.Bound))
	}
	if res.Incomplete {
		facts = append(facts, "**Incomplete:** interrupted before every item finished.")
	}
	if len(facts) > 0 {
		fmt.Fprintf(w, "%s\n\n", strings.Join(facts, " "))
	}

	if len(res.Expectations) > 0 {
		fmt.Fprintln(w, "Expectations:")
		fmt.Fprintln(w)
		for _, c := range res.Expectations {
			mark := "✅"
			if !c.OK {
				mark = "❌"
			}
			fmt.Fprintf(w, "- %s %s %s (got %s)\n", mark, mdEscape(c.Metric), mdEscape(c.Expected), mdEscape(c.Actual))
		}
		fmt.Fprintln(w)
	}
}

// A latencyRow is one recorded latency distribution with its display name.
type latencyRow struct {
	name string
	p    measure.Percentiles
}

// latencyRows lists the distributions a result recorded a non-zero time
// in, in a fixed order; end-to-end always comes first (except on command
// rows, which have none), and nothing at all when only an empty end-to-end
// would be left. Backoff is all the time between an item's
// attempts; the row after it is the part the server asked for with
// retry-after, the rest being the retry policy's own backoff.
func latencyRows(res Result) []latencyRow {
	var rows []latencyRow
	if res.EndToEnd.Count > 0 || res.Command == nil {
		// A command row has no end-to-end time: only the program knows
		// when an item started.
		rows = append(rows, latencyRow{"end to end", res.EndToEnd})
	}
	for _, l := range []latencyRow{
		{"attempt", res.Attempt},
		{"wait for slot", res.WaitSlot},
		{"wait for tokens", res.WaitTokens},
		{"backoff", res.Backoff},
		{"of which retry-after", res.WaitRetryAfter},
	} {
		// A wait that never happened (every sample zero) is noise here.
		if l.p.Count > 0 && l.p.Max > 0 {
			rows = append(rows, l)
		}
	}
	if res.TTFT != nil && res.TTFT.Count > 0 {
		rows = append(rows, latencyRow{"time to first token", *res.TTFT})
	}
	if len(rows) == 0 || res.EndToEnd.Count == 0 && res.Command == nil && len(rows) == 1 {
		return nil
	}
	return rows
}

// throttledByAttempt formats 429s by attempt number as "#1 180, #2 160";
// empty when there were none.
func throttledByAttempt(counts []int64) string {
	var parts []string
	for i, n := range counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("#%d %s", i+1, formatInt(n)))
		}
	}
	return strings.Join(parts, ", ")
}

// formatParams formats strategy parameters as "k=v, k=v" in key order.
func formatParams(params map[string]any) string {
	keys := slices.Sorted(maps.Keys(params))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, params[k])
	}
	return strings.Join(parts, ", ")
}

// mdRow writes one table row; cells must already be escaped.
func mdRow(w io.Writer, cells []string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}

// mdEscaper backslash-escapes the characters that are markup in
// GitHub-flavoured Markdown inline text and table cells, and folds line
// breaks, which would end a table row.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`,
	`<`, `\<`, `>`, `\>`, `|`, `\|`, `&`, `\&`, `~`, `\~`, `#`, `\#`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// mdCode makes s an inline code span: a fence of more backticks than s
// holds in a row, so no content can close it; line breaks folded.
func mdCode(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	run, longest := 0, 0
	for _, ch := range s {
		if ch == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || longest > 0 {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// mdEscape makes s safe as Markdown inline text or a table cell.
func mdEscape(s string) string { return mdEscaper.Replace(s) }

// markdownColumns writes results in the columns cols as a Markdown table
// and a blank line; an incomplete result's first cell ends with mark (""
// for none).
func markdownColumns(w io.Writer, cols []column, results []Result, mark string) {
	header := make([]string, len(cols))
	rule := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.long
		rule[i] = "---"
		if c.number {
			rule[i] = "--:"
		}
	}
	mdRow(w, header)
	mdRow(w, rule)
	for _, res := range results {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = mdEscape(c.cell(res))
		}
		if res.Incomplete {
			cells[0] += mark
		}
		mdRow(w, cells)
	}
	fmt.Fprintln(w)
}
