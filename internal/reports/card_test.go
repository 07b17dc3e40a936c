package reports

import (
	"bytes"
	"strings"
	"testing"
)

// TestReportCardHTML: the page holds the report card under the summary,
// one row per result with a server view, each linking to its strategy's
// section, with the figures the other formats print.
func TestReportCardHTML(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, guideReport()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	summary, _, _ := strings.Cut(page[strings.Index(page, `<section id="summary">`):], "</section>")
	i := strings.Index(summary, `<h3 id="report-card">Report card</h3>`)
	if i < 0 {
		t.Fatalf("no report card in the summary section")
	}
	page = summary
	card, _, _ := strings.Cut(page[i:], "</table>")
	for _, want := range []string{
		`<th class="num" title="waves of two retries or more of one key arriving within 10 ms of the wave&#39;s first: retries without jitter">retry waves</th>`,
		`<td><a href="#strategy-1">unbounded, retries=2</a></td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">2</td><td class="num">180</td><td class="num">2.89</td><td class="num">49.5%</td><td class="num">480 (&#43;180)</td>`, // html/template escapes +
		`<td><a href="#strategy-6">python unbounded</a></td><td class="num">12</td><td class="num">3</td><td class="num">1</td>`,
	} {
		if !strings.Contains(card, want) {
			t.Errorf("report card lacks %s\n%s", want, card)
		}
	}
	if n := strings.Count(card, "<tr>"); n != 1+6 {
		t.Errorf("report card has %d rows with its header, want 7", n)
	}
}

// TestReportCardAbsent: against a target there is no server view, and no
// format prints a report card.
func TestReportCardAbsent(t *testing.T) {
	r := guideReport()
	for i := range r.Results {
		r.Results[i].ServerView = nil
	}
	for name, render := range map[string]func(*bytes.Buffer, Report) error{
		"table":    func(b *bytes.Buffer, r Report) error { return Table(b, r) },
		"markdown": func(b *bytes.Buffer, r Report) error { return Markdown(b, r) },
		"html":     func(b *bytes.Buffer, r Report) error { return HTML(b, r) },
		"json":     func(b *bytes.Buffer, r Report) error { return JSON(b, r) },
	} {
		var buf bytes.Buffer
		if err := render(&buf, r); err != nil {
			t.Fatal(err)
		}
		for _, no := range []string{"report card", "Report card", "report_card"} {
			if strings.Contains(buf.String(), no) {
				t.Errorf("%s without a server view mentions %q", name, no)
			}
		}
	}
}
