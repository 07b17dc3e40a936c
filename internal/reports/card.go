package reports

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// CardNote is the line that opens the report card in every format.
const CardNote = "report card: how each client treated the server's refusals, as the server saw it (docs/loadgen.md#the-report-card)"

// cardColumns are the report card's columns, one verdict each (ReportCard;
// early retries from ServerView), shared by the table, Markdown and HTML.
// A row without a card (a report written before it existed) has "-"
// throughout.
var cardColumns = []column{
	{"strategy", "strategy", "the strategy's name in the scenario", false, func(r Result) string { return r.Name }},
	{"early", "early retries", "retries that arrived before the retry-after their call was given: retry-after is honoured at 0", true, func(r Result) string {
		v, _ := r.Server()
		return formatInt(v.EarlyRetries)
	}},
	{"re-quota", "retries after quota", "retries after a spent quota's 429, which no wait fixes", true, fromCard(func(c ReportCard) string { return formatInt(c.RetriesAfterQuota) })},
	{"re-4xx", "retries after 4xx", "retries after a 4xx no retry fixes (400, 404, 413, 422, …)", true, fromCard(func(c ReportCard) string { return formatInt(c.RetriesAfterClientError) })},
	{"waves", "retry waves", "waves of two retries or more of one key arriving within 10 ms of the wave's first: retries without jitter", true, fromCard(func(c ReportCard) string { return formatInt(c.RetryWaves) })},
	{"max wave", "largest wave", "the most retries in one wave", true, fromCard(func(c ReportCard) string { return formatInt(int64(c.MaxRetryWave)) })},
	{"att/refused", "attempts per refused call", "attempts of the calls refused for a rate limit or overload, per such call: retry amplification", true, fromCard(func(c ReportCard) string {
		if c.RefusedCalls == 0 {
			return "-"
		}
		return formatFixed(c.RetryAmplification, 2)
	})},
	{"idle cap", "idle capacity", "share of the concurrency caps that bound the requests (key, model pool, organization, long context, as scheduled) unused while the client was still sending", true, fromCard(func(c ReportCard) string {
		if !c.Capped {
			return "-"
		}
		return formatFixed(100*c.IdleCapacity, 1) + "%"
	})},
	{"over cap", "over the cap", "attempts sent while a concurrency cap they pass (key, model pool, organization, long context) was full (peak in flight above the cap)", true, fromCard(func(c ReportCard) string {
		if !c.Capped {
			return "-"
		}
		if c.OverLimit == 0 {
			return "0"
		}
		return fmt.Sprintf("%s (+%d)", formatInt(c.OverLimit), c.PeakOverLimit)
	})},
}

// fromCard is a cell of the report card: "-" on a row without one.
func fromCard(f func(ReportCard) string) func(Result) string {
	return func(r Result) string {
		v, ok := r.Server()
		if !ok || v.Card == nil {
			return "-"
		}
		return f(*v.Card)
	}
}

// cardResults are the results with a server view, the report card's rows;
// none against a target.
func cardResults(results []Result) []Result {
	var out []Result
	for _, r := range results {
		if _, ok := r.Server(); ok {
			out = append(out, r)
		}
	}
	return out
}

// writeCardTable writes the report card under the terminal table: a line
// saying what it is, then a row per result with a server view.
func writeCardTable(w io.Writer, results []Result) error {
	rows := cardResults(results)
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s\n", CardNote)
	return writeColumnTable(w, cardColumns, rows, "")
}

// markdownCard writes the report card as a Markdown table.
func markdownCard(w io.Writer, results []Result) {
	rows := cardResults(results)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "**Report card:** %s.\n\n", mdEscape(strings.TrimPrefix(CardNote, "report card: ")))
	markdownColumns(w, cardColumns, rows, "")
}

// htmlCard is the template's view of the report card; nil without rows.
type htmlCard struct {
	Note   string
	Header []htmlHeader
	Rows   []htmlRow
}

func newHTMLCard(results []Result) *htmlCard {
	if len(cardResults(results)) == 0 {
		return nil
	}
	c := &htmlCard{Note: strings.TrimPrefix(CardNote, "report card: ")}
	for _, col := range cardColumns {
		c.Header = append(c.Header, htmlHeader{Label: col.long, Title: col.title, Number: col.number})
	}
	for i, res := range results {
		if _, ok := res.Server(); !ok {
			continue
		}
		row := htmlRow{Anchor: "strategy-" + strconv.Itoa(i+1)}
		for _, col := range cardColumns {
			row.Cells = append(row.Cells, htmlCell{Text: col.cell(res), Number: col.number})
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}
