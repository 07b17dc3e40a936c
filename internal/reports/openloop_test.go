package reports

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"
)

// TestOpenLoopColumns: an open-loop run's table, Markdown, CSV and HTML
// carry the goodput and the queueing delay, each row its own; a
// closed-loop run's carry none of it, so they are as they always were.
func TestOpenLoopColumns(t *testing.T) {
	open, closed := openReport(), guideReport()
	render := func(f Renderer, r Report) string {
		var buf bytes.Buffer
		if err := f(&buf, r); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}

	// The terminal table: three columns, and a line saying how items arrived.
	table := render(Table, open)
	lines := strings.Split(table, "\n")
	if !strings.Contains(lines[1], "open loop: items arrive as a poisson process at 20/s, the last at 11.10 s") {
		t.Errorf("table's second line = %q, want how items arrived", lines[1])
	}
	header := strings.Fields(lines[3])
	if got, want := header[len(header)-6:], []string{"goodput/s", "queue", "p50", "queue", "p99"}; !slices.Equal(got[1:], want) {
		t.Errorf("table header ends %q, want %q", got[1:], want)
	}
	for _, tt := range []struct {
		row  string
		want []string
	}{
		{"semaphore(5) ", []string{"9.71", "4.35s", "8.99s"}},
		{"semaphore(20) ", []string{"17.24", "800µs", "23ms"}},
	} {
		f := strings.Fields(lineStarting(table, tt.row))
		if len(f) < 3 || !slices.Equal(f[len(f)-3:], tt.want) {
			t.Errorf("table row %q, want it to end %q", f, tt.want)
		}
	}
	for _, out := range []string{render(Table, closed), render(Markdown, closed), render(CSV, closed), render(HTML, closed)} {
		for _, s := range []string{"goodput", "queue", "open loop", "Open loop", "arrival"} {
			if strings.Contains(out, s) {
				t.Errorf("a closed-loop report holds %q:\n%s", s, out)
			}
		}
	}

	// Markdown: the columns, and a line per strategy.
	md := render(Markdown, open)
	if !strings.Contains(md, "| goodput /s | queueing p50 | queueing p99 |") {
		t.Errorf("markdown's header has no open-loop columns:\n%s", md)
	}
	if !strings.Contains(md, "Open loop: goodput 9.71/s of 20/s arriving; queueing delay p50 4.35s, p99 8.99s, max 9.01s.") {
		t.Errorf("markdown's semaphore(5) section does not describe its open loop:\n%s", md)
	}

	// CSV: the columns appended after every other, with the JSON's figures.
	recs, err := csv.NewReader(strings.NewReader(render(CSV, open))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"arrival_process", "arrival_rate_per_second", "arrival_seconds", "goodput_per_second",
		"queueing_delay_p50", "queueing_delay_p90", "queueing_delay_p99", "queueing_delay_max", "queueing_delay_mean"}
	if got := recs[0][len(csvColumns):]; !slices.Equal(got, want) {
		t.Errorf("csv's open-loop columns = %q, want %q after the %d others", got, want, len(csvColumns))
	}
	if got, want := recs[1][len(csvColumns):], []string{"poisson", "20", "11.102041", "9.711387", "4.348629", "8.11454", "8.989398", "9.011998", "4.365938"}; !slices.Equal(got, want) {
		t.Errorf("csv's semaphore(5) open-loop cells = %q, want %q", got, want)
	}

	// HTML: the summary's columns and each strategy's figures.
	doc := parseDOM(t, []byte(render(HTML, open)), true)
	var heads []string
	for _, th := range doc.find(byClass("table", "summary"))[0].find(elem("th")) {
		heads = append(heads, th.text.String())
	}
	if !slices.Contains(heads, "goodput /s") || !slices.Contains(heads, "queueing p99") {
		t.Errorf("html summary headers = %q, want the open-loop columns", heads)
	}
	var stats []string
	for _, div := range doc.find(byClass("dl", "stats"))[0].find(elem("div")) {
		stats = append(stats, strings.TrimSpace(div.text.String()))
	}
	if !slices.Contains(stats, "goodput9.71 /s of 20") || !slices.Contains(stats, "queueing p504.35s") {
		t.Errorf("html semaphore(5) stats = %q, want its goodput and queueing delay", stats)
	}
}

// lineStarting returns the first line of s that starts with prefix, with
// its trailing blanks.
func lineStarting(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
