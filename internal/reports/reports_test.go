package reports

import (
	"bytes"
	"errors"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/strategies"
	"math"
	"strings"
	"testing"
)

func TestFormatInt(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {1100, "1,100"}, {12345, "12,345"},
		{123456, "123,456"}, {1234567, "1,234,567"}, {-1, "-1"}, {-1000, "-1,000"}, {-123456, "-123,456"},
	}
	for _, tt := range tests {
		if got := formatInt(tt.in); got != tt.want {
			t.Errorf("formatInt(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatFixed(t *testing.T) {
	tests := []struct {
		in   float64
		prec int
		want string
	}{
		{0, 2, "0.00"}, {2.5, 2, "2.50"}, {1234.5678, 2, "1,234.57"}, {1234567.8, 0, "1,234,568"},
		{-0.001, 2, "0.00"}, {-1234.5, 1, "-1,234.5"}, {math.NaN(), 2, "-"}, {math.Inf(1), 2, "-"},
	}
	for _, tt := range tests {
		if got := formatFixed(tt.in, tt.prec); got != tt.want {
			t.Errorf("formatFixed(%v, %d) = %q, want %q", tt.in, tt.prec, got, tt.want)
		}
	}
}

func TestFormatLatency(t *testing.T) {
	tests := []struct {
		sec  float64
		want string
	}{
		{0, "0"}, {0.0000004, "0µs"}, {0.00085, "850µs"}, {0.0009996, "1.0ms"}, {0.0052, "5.2ms"},
		{0.00999, "10ms"}, {0.512, "512ms"}, {0.9996, "1.00s"}, {1.25, "1.25s"}, {99.994, "99.99s"},
		{99.996, "100s"}, {1234.4, "1,234s"}, {-1, "-"}, {math.NaN(), "-"}, {math.Inf(1), "-"},
	}
	for _, tt := range tests {
		if got := formatLatency(tt.sec); got != tt.want {
			t.Errorf("formatLatency(%v) = %q, want %q", tt.sec, got, tt.want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		max      float64
		n        int
		want     []float64
		wantStep float64
	}{
		{20, 4, []float64{0, 5, 10, 15, 20}, 5},
		{21, 4, []float64{0, 10, 20, 30}, 10},
		{2.5, 8, []float64{0, 0.5, 1, 1.5, 2, 2.5}, 0.5},
		{1800, 4, []float64{0, 500, 1000, 1500, 2000}, 500},
		{0.2, 4, []float64{0, 0.05, 0.1, 0.15, 0.2}, 0.05},
		{0, 4, []float64{0, 0.25, 0.5, 0.75, 1}, 0.25},
		{math.Inf(1), 4, []float64{0, 0.25, 0.5, 0.75, 1}, 0.25},
	}
	for _, tt := range tests {
		got, step := niceTicks(tt.max, tt.n)
		if len(got) != len(tt.want) || step != tt.wantStep {
			t.Errorf("niceTicks(%v, %d) = %v step %v, want %v step %v", tt.max, tt.n, got, step, tt.want, tt.wantStep)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > 1e-9 {
				t.Errorf("niceTicks(%v, %d) = %v, want %v", tt.max, tt.n, got, tt.want)
				break
			}
		}
	}
}

func TestFormat(t *testing.T) {
	for _, name := range FormatNames() {
		r, err := Format(name)
		if err != nil || r == nil {
			t.Errorf("Format(%q) = %v, %v; want a renderer", name, r, err)
		}
	}
	for _, name := range []string{"", "html", "TABLE", "md", "xml"} {
		_, err := Format(name)
		if err == nil {
			t.Errorf("Format(%q): no error, want one", name)
			continue
		}
		for _, valid := range FormatNames() {
			if !strings.Contains(err.Error(), valid) {
				t.Errorf("Format(%q) error %q does not name %q", name, err, valid)
			}
		}
	}
}

func TestFiles(t *testing.T) {
	var names []string
	for _, f := range Files() {
		names = append(names, f.Name)
		var buf bytes.Buffer
		if err := f.Render(&buf, guideReport()); err != nil || buf.Len() == 0 {
			t.Errorf("%s: %d bytes, error %v; want output", f.Name, buf.Len(), err)
		}
	}
	if got, want := strings.Join(names, " "), "report.json report.md report.html"; got != want {
		t.Errorf("Files() = %s, want %s", got, want)
	}
}

func TestReadJSONRoundTrip(t *testing.T) {
	for _, r := range []Report{guideReport(), edgeReport()} {
		var first bytes.Buffer
		if err := JSON(&first, r); err != nil {
			t.Fatal(err)
		}
		got, err := ReadJSON(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("ReadJSON: %v", err)
		}
		var second bytes.Buffer
		if err := JSON(&second, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Errorf("%s: JSON → ReadJSON → JSON changed the report", r.Scenario)
		}
	}
}

func TestReadJSONErrors(t *testing.T) {
	tests := []struct {
		in      string
		notRepo bool
	}{
		{`{"scenario": "x"}`, true},
		{`[]`, false},
		{`{"results": [`, false},
		{``, false},
	}
	for _, tt := range tests {
		_, err := ReadJSON(strings.NewReader(tt.in))
		if err == nil {
			t.Errorf("ReadJSON(%q): no error", tt.in)
			continue
		}
		if got := errors.Is(err, ErrNotReport); got != tt.notRepo {
			t.Errorf("ReadJSON(%q) = %v; errors.Is(ErrNotReport) = %v, want %v", tt.in, err, got, tt.notRepo)
		}
	}
}

func TestJSONRejectsNaN(t *testing.T) {
	r := Report{Scenario: "x", Results: []Result{{Name: "a", Summary: measure.Summary{WallSeconds: math.NaN()}}}}
	if err := JSON(&bytes.Buffer{}, r); err == nil || !strings.HasPrefix(err.Error(), "reports: json:") {
		t.Errorf("JSON with NaN: error %v, want a reports: json: error", err)
	}
}

func TestCSVShape(t *testing.T) {
	var buf bytes.Buffer
	if err := CSV(&buf, guideReport()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if got, want := len(lines), 1+len(guideReport().Results); got != want {
		t.Fatalf("%d lines, want %d", got, want)
	}
	if strings.Contains(lines[0], " ") {
		t.Errorf("header %q has spaces; want machine names", lines[0])
	}
	if strings.Contains(buf.String(), "1,234") {
		t.Errorf("CSV has a thousands separator; want plain numbers")
	}
}

func TestRegressed(t *testing.T) {
	tests := []struct {
		old, new  float64
		better    int
		threshold float64
		want      bool
	}{
		{100, 110, -1, 0.10, false}, // exactly at the threshold
		{100, 110.5, -1, 0.10, true},
		{100, 50, -1, 0.10, false}, // better
		{200, 180, +1, 0.10, false},
		{200, 179, +1, 0.10, true},
		{0, 1, -1, 0.10, true}, // anything from zero
		{0, 0, -1, 0.10, false},
		{0, 5, +1, 0.10, false},
		{5, 5.1, -1, 0, true}, // zero threshold: any worsening
	}
	for _, tt := range tests {
		if got := regressed(tt.old, tt.new, tt.better, tt.threshold); got != tt.want {
			t.Errorf("regressed(old %v, new %v, better %+d, threshold %v) = %v, want %v",
				tt.old, tt.new, tt.better, tt.threshold, got, tt.want)
		}
	}
}

func TestCompareErrors(t *testing.T) {
	dup := guideReport()
	dup.Results = append(dup.Results, dup.Results[0])
	tests := []struct {
		name      string
		old, new  Report
		threshold float64
		want      string
	}{
		{"negative threshold", guideReport(), guideReport(), -0.1, "threshold"},
		{"NaN threshold", guideReport(), guideReport(), math.NaN(), "threshold"},
		{"duplicate in old", dup, guideReport(), 0.1, `"unbounded, retries=2" appears twice in the old report`},
		{"duplicate in new", guideReport(), dup, 0.1, "appears twice in the new report"},
	}
	for _, tt := range tests {
		_, err := Compare(tt.old, tt.new, tt.threshold)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestCompareMatchesByName(t *testing.T) {
	old := guideReport()
	nw := guideReport()
	// Reverse the new order and rename one: matching is by name, not
	// position.
	for i, j := 0, len(nw.Results)-1; i < j; i, j = i+1, j-1 {
		nw.Results[i], nw.Results[j] = nw.Results[j], nw.Results[i]
	}
	for i := range nw.Results {
		if nw.Results[i].Name == "brownout" {
			nw.Results[i].Name = "brownout-2"
		}
	}
	c, err := Compare(old, nw, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(c.Missing, ","), "brownout"; got != want {
		t.Errorf("Missing = %q, want %q", got, want)
	}
	if got, want := strings.Join(c.Added, ","), "brownout-2"; got != want {
		t.Errorf("Added = %q, want %q", got, want)
	}
	if got, want := len(c.Strategies), len(old.Results)-1; got != want {
		t.Errorf("%d matched strategies, want %d", got, want)
	}
	for _, s := range c.Strategies {
		for _, m := range s.Metrics {
			if m.Old != m.New || m.Regressed {
				t.Errorf("%s %s: old %v new %v regressed %v; want identical", s.Name, m.Metric, m.Old, m.New, m.Regressed)
			}
		}
	}
	if !c.Regressed() {
		t.Errorf("Regressed() = false with a strategy missing, want true")
	}
}

func TestTableWidth(t *testing.T) {
	var buf bytes.Buffer
	if err := Table(&buf, guideReport()); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(buf.String(), "\n") {
		if n := len([]rune(line)); n > 120 {
			t.Errorf("line %d is %d columns, want at most 120: %q", i+1, n, line)
		}
	}
}

// TestServerView checks where the server's view shows: Markdown and HTML
// columns only when some row has it, "-" on a row without it, the terminal
// table's notes naming early retries and how a command ran, and CSV cells
// empty when unknown.
func TestServerView(t *testing.T) {
	known := Result{Name: "sem", Kind: "semaphore", Summary: measure.Summary{Items: 10, Completed: 10, Attempts: 12, Throttled: 2},
		ServerView: &ServerView{EarlyRetries: 2, PeakConcurrency: 7}}
	unknown := Result{Name: "remote", Kind: "semaphore", Summary: measure.Summary{Items: 10, Completed: 10, Attempts: 10}}
	cmd := Result{Name: "cli", Kind: "command", Summary: measure.Summary{Items: 10, Attempts: 10, WallSeconds: 1.5},
		ServerView: &ServerView{PeakConcurrency: 10},
		Command:    &Command{Argv: []string{"./cli"}, Status: "exited 0", Seconds: 2}}

	if got := len(wideColumns([]Result{unknown})); got != len(summaryColumns) {
		t.Errorf("without a server view: %d columns, want %d", got, len(summaryColumns))
	}
	var md bytes.Buffer
	if err := Markdown(&md, Report{Scenario: "s", Results: []Result{known, unknown}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| peak concurrency | early retries |", "| 7 | 2 |\n", "| - | - |\n"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}

	md.Reset()
	withTokens := cmd
	withTokens.InputTokens, withTokens.OutputTokens = 300, 6000
	if err := Markdown(&md, Report{Scenario: "s", Results: []Result{withTokens}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "Tokens: 300 in, 6,000 out.") || strings.Contains(md.String(), "reserved") {
		t.Errorf("command row's tokens: want the server's counts and no reserved tokens, which it cannot know:\n%s", md.String())
	}

	var tab bytes.Buffer
	if err := Table(&tab, Report{Scenario: "s", Results: []Result{known, unknown, cmd}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"sem: 2 early retries (sent before the retry-after they were given)\n",
		"cli: command ran 2.00 s, exited 0; its requests spanned 1.50 s (first request to last response)\n",
	} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	if strings.Contains(tab.String(), "remote:") || strings.Contains(tab.String(), "peak") {
		t.Errorf("table names a row with nothing to say, or peak concurrency:\n%s", tab.String())
	}
	for _, l := range strings.Split(tab.String(), "\n") {
		if n := len([]rune(l)); n > 120 && !strings.HasPrefix(l, "───") {
			t.Errorf("table line of %d columns: %q", n, l)
		}
	}

	var csv bytes.Buffer
	if err := CSV(&csv, Report{Scenario: "s", Results: []Result{known, unknown, cmd}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	for i, want := range []string{",2,7,,,,,false", ",,,,,,,false", ",0,10,exited 0,0,false,2,false"} {
		if !strings.HasSuffix(lines[i+1], want) {
			t.Errorf("csv row %d = %q, want it to end %q", i+1, lines[i+1], want)
		}
	}
}

// TestOwnBound checks that a row whose strategy ended at its own configured
// bound says so under the table, in Markdown and in JSON, and a row that did
// not says nothing.
func TestOwnBound(t *testing.T) {
	capped := Result{Name: "adaptive", Kind: "adaptive", Summary: measure.Summary{Items: 10, Completed: 10, Attempts: 10,
		FinalLimit: 1000, Stats: strategies.Stats{Limit: 1000, Bound: "max: 1000"}}}
	free := Result{Name: "aimd", Kind: "aimd", Summary: measure.Summary{Items: 10, Completed: 10, Attempts: 10, FinalLimit: 20}}
	rep := Report{Scenario: "s", Results: []Result{capped, free}}

	var tab, md, js bytes.Buffer
	if err := Table(&tab, rep); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := JSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if want := "adaptive: ended at its own bound (max: 1000), not at a limit the server set\n"; !strings.Contains(tab.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, tab.String())
	}
	if strings.Contains(tab.String(), "aimd: ended") || strings.Count(md.String(), "own bound") != 1 {
		t.Errorf("a row inside its bounds has a note:\n%s\n%s", tab.String(), md.String())
	}
	if want := "**Ended at its own bound** (`max: 1000`)"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
	var page bytes.Buffer
	if err := HTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "ended at its own bound") || !strings.Contains(page.String(), "max: 1000") {
		t.Errorf("HTML lacks the bound")
	}
	if want := `"bound": "max: 1000"`; !strings.Contains(js.String(), want) {
		t.Errorf("JSON lacks %s:\n%s", want, js.String())
	}
}

// TestQuotaNote checks that refusals for a spent quota are named under the
// table and in Markdown, apart from the 429s column.
func TestQuotaNote(t *testing.T) {
	res := Result{Name: "batch", Kind: "semaphore", Summary: measure.Summary{Items: 10, Completed: 4, Failed: 6, Attempts: 10, Quota: 6}}
	rep := Report{Scenario: "s", Results: []Result{res}}
	var tab, md bytes.Buffer
	if err := Table(&tab, rep); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if want := "batch: 6 attempts refused for a spent quota or spend cap (never retried)\n"; !strings.Contains(tab.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, tab.String())
	}
	if want := "**Quota spent:** 6 attempts"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
}
