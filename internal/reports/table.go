package reports

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Table writes r as a terminal table with one row per strategy, in the
// shape of the guide's table: completed, attempts, 429s, 529/5xx, other
// errors, attempts per completed call, wall and oracle seconds, wall/oracle
// and the p50 and p99 end-to-end times; for an open-loop run (a scenario
// with arrival:) also the goodput and the queueing delay's p50 and p99,
// under a line saying how items arrived. A title line names the scenario
// and target; lines under the table list every failed expectation, or say
// that all were met. It fits in 100–120 columns for strategy names up to about
// 24 characters.
func Table(w io.Writer, r Report) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "%s · %s\n", r.Scenario, targetName(r))
	if l := arrivalLine(r.Results); l != "" {
		fmt.Fprintf(ew, "open loop: %s\n", l)
	}
	if r.Incomplete {
		fmt.Fprintln(ew, "INCOMPLETE: the run was interrupted; the figures cover what finished.")
	}
	fmt.Fprintln(ew)
	if ew.err != nil {
		return fmt.Errorf("reports: table: %w", ew.err)
	}
	if err := writeSummaryTable(ew, r.Results); err != nil {
		return fmt.Errorf("reports: table: %w", err)
	}
	if len(r.Results) == 0 {
		fmt.Fprintln(ew, "(no strategies ran)")
	}
	if anyIncomplete(r.Results) {
		fmt.Fprintln(ew, "* interrupted before every item finished")
	}
	writeServerNotes(ew, r.Results)
	writeOracleNote(ew, r.Oracle)
	if r.Simulated {
		fmt.Fprintln(ew, SimulatedNote)
	}
	if r.Tune == nil {
		// loadgen tune's table is its sweep, followed by its
		// recommendation; its rows' cards are in its other formats.
		if err := writeCardTable(ew, r.Results); err != nil {
			return fmt.Errorf("reports: table: %w", err)
		}
	}
	writeExpectationSummary(ew, r)
	if ew.err != nil {
		return fmt.Errorf("reports: table: %w", ew.err)
	}
	return nil
}

// writeSummaryTable draws the summary rows with tablewriter in a borderless
// style: columns two spaces apart, a rule under the header, numbers
// right-aligned.
func writeSummaryTable(w io.Writer, results []Result) error {
	return writeColumnTable(w, tableColumns(results), results, " *")
}

// writeColumnTable draws results in the columns cols in the terminal's
// style; an incomplete result's first cell ends with mark ("" for none).
func writeColumnTable(w io.Writer, cols []column, results []Result, mark string) error {
	header := make([]string, len(cols))
	align := make(tw.Alignment, len(cols))
	for i, c := range cols {
		header[i] = c.short
		align[i] = tw.AlignLeft
		if c.number {
			align[i] = tw.AlignRight
		}
	}
	t := newPlainTable(align)
	t.Header(header)
	for _, res := range results {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = c.cell(res)
		}
		if res.Incomplete {
			row[0] += mark
		}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.render(w)
}

// plainTable is a tablewriter table in ratelab's terminal style: no
// borders, columns two spaces apart, a rule under the header, no trailing
// blanks.
type plainTable struct {
	*tablewriter.Table
	buf *bytes.Buffer
}

// newPlainTable returns an empty plainTable whose columns are aligned as
// align says.
func newPlainTable(align tw.Alignment) plainTable {
	buf := new(bytes.Buffer)
	t := tablewriter.NewTable(buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbolCustom("ratelab").
				WithColumn("  ").WithRow("─").WithCenter("──").WithHeaderMid("──"),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.On, BetweenRows: tw.Off, ShowHeader: tw.On},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.On, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithAlignment(align),
		tablewriter.WithPadding(tw.PaddingNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	return plainTable{Table: t, buf: buf}
}

// render draws the table and copies it to w without trailing blanks, which
// right-padding the last column leaves.
func (t plainTable) render(w io.Writer) error {
	if err := t.Render(); err != nil {
		return err
	}
	lines := strings.SplitAfter(t.buf.String(), "\n")
	var b strings.Builder
	for _, l := range lines {
		nl := strings.HasSuffix(l, "\n")
		b.WriteString(strings.TrimRight(l, " \n"))
		if nl {
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// OracleNote is the table's line under a report with an oracle; the
// assumptions themselves, too long for a terminal's line, are in Markdown,
// HTML and JSON.
const OracleNote = "oracle s: the best a client knowing every limit and its schedule could do (assumptions: --format markdown or json)"

// writeOracleNote writes OracleNote when the report has an oracle.
func writeOracleNote(w io.Writer, assumptions []string) {
	if len(assumptions) > 0 {
		fmt.Fprintln(w, OracleNote)
	}
}

// writeServerNotes writes, under the table, what its columns leave out for
// width: for each command row how its program ran, and for each row with
// early retries how many (a client that retries before the retry-after it
// was given is a defect worth a line; zero, the normal case, is not
// printed), how many attempts were refused for a spent quota, for each
// strategy that ended at its own configured bound
// which one (the run was held by the row's settings, not by the server),
// and each wall expectation that held only with its allowance for the
// timer lateness measured in the run (Check.NeededAllowance).
// Peak concurrency is in Markdown, HTML, JSON and CSV.
func writeServerNotes(w io.Writer, results []Result) {
	first := true
	note := func(format string, args ...any) {
		if first {
			fmt.Fprintln(w)
			first = false
		}
		fmt.Fprintf(w, format, args...)
	}
	for _, res := range results {
		if l := commandLine(res); l != "" {
			note("%s: command %s\n", res.Name, l)
		}
		if v, ok := res.Server(); ok && v.EarlyRetries > 0 {
			note("%s: %s early %s (sent before the retry-after they were given)\n",
				res.Name, formatInt(v.EarlyRetries), plural(int(v.EarlyRetries), "retry", "retries"))
		}
		if res.Quota > 0 {
			note("%s: %s %s refused for a spent quota or spend cap (never retried)\n",
				res.Name, formatInt(res.Quota), plural(int(res.Quota), "attempt", "attempts"))
		}
		if b := res.Stats.Bound; b != "" {
			note("%s: ended at its own bound (%s), not at a limit the server set\n", res.Name, b)
		}
		for _, c := range res.Expectations {
			if c.NeededAllowance {
				note("%s: %s %s held only with its allowance for a busy machine%s:\n  expected %s\n",
					res.Name, c.Metric, c.Actual, latenessDetail(res.TimerLateness), c.Expected)
			}
		}
	}
}

// latenessDetail is " (timers woke up to 120ms late, p99 35ms)", or ""
// when the row has no measurement.
func latenessDetail(tl *TimerLateness) string {
	if tl == nil {
		return ""
	}
	return fmt.Sprintf(" (timers woke up to %s late, p99 %s)", formatLatency(tl.Max), formatLatency(tl.P99))
}

// writeExpectationSummary writes one line per failed expectation, or one
// line saying all were met; nothing when the scenario set none.
func writeExpectationSummary(w io.Writer, r Report) {
	total, failed := expectationTally(r)
	switch {
	case total == 0:
		return
	case failed == 0:
		fmt.Fprintf(w, "\nexpectations: all %s met\n", formatInt(total))
		return
	}
	fmt.Fprintf(w, "\nexpectations: %s of %s FAILED\n", formatInt(failed), formatInt(total))
	for _, res := range r.Results {
		for _, c := range res.Expectations {
			if !c.OK {
				fmt.Fprintf(w, "  FAIL %s\n", failedCheckLine(res.Name, c))
			}
		}
	}
}

func targetName(r Report) string {
	if strings.TrimSpace(r.Target) == "" {
		return "embedded mock"
	}
	return r.Target
}

func anyIncomplete(results []Result) bool {
	for _, res := range results {
		if res.Incomplete {
			return true
		}
	}
	return false
}

// errWriter remembers the first write error so a run of Fprintf calls can be
// checked once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
