package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTemplate is parsed once; a parse error is a bug caught by every test.
var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"add": func(a, b float64) float64 { return round1(a + b) },
}).Parse(htmlSource))

// HTML writes r as one self-contained HTML page, report.html: it loads no
// scripts, fonts or stylesheets and works offline. It holds the summary
// table (Table's columns, then the server's view: wideColumns) with failed
// expectations; for a report with a sweep or loadgen tune's
// recommendation, the sweep: every row as a point of wall time against its
// 429s and against its attempts, labelled with its setting, each sweep's
// points joined in order, the recommended row ringed (newHTMLSweep); for
// two strategies or more, a comparison: every strategy's
// timeline overlaid on one time axis (peak calls in flight, completions per
// second), one colour per strategy, and bars of wall time, attempts and
// 429s per strategy; a note on reading the charts; and per strategy its
// key figures, an SVG chart, its latency percentiles and its expectations.
// The chart stacks panels on one time axis, each with its own scale: the
// most calls in flight in each interval against the strategy's limit;
// completions per second and 429s per second, averaged over the second
// before each instant (smoothRate); the pacing delay for strategies
// that have one; and the callers waiting for the strategy when any did. A healthy run shows in-flight flat at the limit with
// steady completions; a provider slowing down shows in-flight pinned while
// completions fall. Each strategy's time axis spans its own run; the
// comparison's spans the longest. Long timelines are thinned to about two
// points per unit of width, keeping every peak. Every string from the
// report is escaped by html/template.
func HTML(w io.Writer, r Report) error {
	if err := htmlTemplate.Execute(w, newHTMLPage(r)); err != nil {
		return fmt.Errorf("reports: html: %w", err)
	}
	return nil
}

// htmlPage is the template's view of a report.
type htmlPage struct {
	Report
	SimulatedNote string
	Target        string
	Arrival       string // how items arrived, for an open-loop run
	CSSColors     template.CSS
	Header        []htmlHeader
	Rows          []htmlRow
	Card          *htmlCard // the report card; nil without a server view
	Checks        int
	FailedChecks  []string
	Strategies    []htmlStrategy
	Compare       *htmlCompare // nil for fewer than two strategies
	Sweep         *htmlSweep   // nil without a sweep or a recommendation
}

type htmlHeader struct {
	Label, Title string
	Number       bool
}

type htmlRow struct {
	Anchor     string
	Cells      []htmlCell
	Failed     bool
	Incomplete bool
}

type htmlCell struct {
	Text   string
	Number bool
}

type htmlStrategy struct {
	Anchor string
	Result
	ParamText string
	Stats     []htmlStat
	Chart     *svgChart
	Latency   []htmlLatency
	Throttled string
	// ThrottledBy is 429s by limit; Command and CommandRun say what a
	// command row ran and how (commandLine).
	ThrottledBy         string
	Command, CommandRun string
}

type htmlStat struct{ Label, Value string }

type htmlLatency struct {
	Name                     string
	Count                    string
	P50, P90, P99, Max, Mean string
}

func newHTMLPage(r Report) htmlPage {
	p := htmlPage{Report: r, SimulatedNote: SimulatedNote, Target: targetName(r), Arrival: arrivalLine(r.Results), CSSColors: seriesCSS(len(r.Results)), Compare: newHTMLCompare(r.Results), Sweep: newHTMLSweep(r), Card: newHTMLCard(r.Results)}
	cols := wideColumns(r.Results)
	for _, c := range cols {
		p.Header = append(p.Header, htmlHeader{Label: c.long, Title: c.title, Number: c.number})
	}
	p.Checks, _ = expectationTally(r)
	for i, res := range r.Results {
		anchor := "strategy-" + strconv.Itoa(i+1)
		row := htmlRow{Anchor: anchor, Incomplete: res.Incomplete}
		for _, c := range cols {
			row.Cells = append(row.Cells, htmlCell{Text: c.cell(res), Number: c.number})
		}
		for _, c := range res.Expectations {
			if !c.OK {
				row.Failed = true
				p.FailedChecks = append(p.FailedChecks, failedCheckLine(res.Name, c))
			}
		}
		p.Rows = append(p.Rows, row)
		p.Strategies = append(p.Strategies, newHTMLStrategy(anchor, res))
	}
	return p
}

func newHTMLStrategy(anchor string, res Result) htmlStrategy {
	s := htmlStrategy{Anchor: anchor, Result: res, Chart: buildChart(res.Name, res.Timeline)}
	if len(res.Params) > 0 {
		s.ParamText = formatParams(res.Params)
	}
	s.Stats = []htmlStat{
		{"completed", completedCell(res)},
		{"attempts", formatInt(res.Attempts)},
		{"429s", formatInt(res.Throttled)},
		{"attempts / call", attemptsPerCallCell(res)},
		{"wall", formatFixed(res.WallSeconds, 2) + " s"},
	}
	if v, ok := wallOverOracle(res); ok {
		s.Stats = append(s.Stats, htmlStat{"wall / oracle", formatFixed(v, 2)})
	}
	s.Stats = append(s.Stats, htmlStat{"p99 end to end", formatPercentile(res.EndToEnd, res.EndToEnd.P99)})
	if res.FinalLimit > 0 {
		s.Stats = append(s.Stats, htmlStat{"final limit", formatFixed(res.FinalLimit, 0)})
	}
	if res.Stats.Bound != "" {
		s.Stats = append(s.Stats, htmlStat{"ended at its own bound", res.Stats.Bound})
	}
	if res.Quota > 0 {
		s.Stats = append(s.Stats, htmlStat{"quota refusals", formatInt(res.Quota)})
	}
	if a := res.Arrivals; a != nil {
		q := a.QueueingDelay
		s.Stats = append(s.Stats, htmlStat{"goodput", formatFixed(a.GoodputPerSecond, 2) + " /s of " + formatRate(a.RatePerSecond)},
			htmlStat{"queueing p50", formatPercentile(q, q.P50)}, htmlStat{"queueing p99", formatPercentile(q, q.P99)})
	}
	if v, ok := res.Server(); ok {
		s.Stats = append(s.Stats, htmlStat{"peak concurrency", formatInt(v.PeakConcurrency)},
			htmlStat{"early retries", formatInt(v.EarlyRetries)})
	}
	if c := res.Command; c != nil {
		s.Command = strings.Join(c.Argv, " ")
		s.CommandRun = commandLine(res)
		s.Stats = append(s.Stats, htmlStat{"program", c.Status})
	}
	s.ThrottledBy = throttledByLimit(res)
	for _, l := range latencyRows(res) {
		s.Latency = append(s.Latency, htmlLatency{
			Name: l.name, Count: formatInt(l.p.Count),
			P50: formatLatency(l.p.P50), P90: formatLatency(l.p.P90), P99: formatLatency(l.p.P99),
			Max: formatLatency(l.p.Max), Mean: formatLatency(l.p.Mean),
		})
	}
	s.Throttled = throttledByAttempt(res.ThrottledByAttempt)
	return s
}

// seriesCSS styles each series in its colour, then each of n strategies in
// its own for the comparison (those rules come last, so a strategy's colour
// wins over its series'). The values are this package's constants, so
// marking them trusted CSS is safe.
func seriesCSS(n int) template.CSS {
	var b strings.Builder
	for _, key := range []string{seriesInFlight, seriesLimit, seriesCompletions, seriesThrottles, seriesDelay, seriesQueued} {
		c := seriesColors[key]
		fmt.Fprintf(&b, ".s-%s{--c:%s}\n", key, c)
	}
	b.WriteString(strategyCSS(n))
	return template.CSS(b.String())
}
