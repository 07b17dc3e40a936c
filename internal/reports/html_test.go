package reports

import (
	"bytes"
	"github.com/ratelab/ratelab/measure"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// wantSeries lists the series a chart of tl must draw: in flight and
// completions always; the limit, 429s, delay and callers waiting when
// they are ever non-zero.
func wantSeries(tl *measure.Timeline) []string {
	want := []string{seriesInFlight, seriesCompletions}
	var limit, throttles, delay, queued bool
	for _, p := range tl.Points {
		limit = limit || p.Limit > 0
		throttles = throttles || p.ThrottlesRate > 0
		delay = delay || p.DelaySeconds > 0
		queued = queued || p.Queued > 0
	}
	if limit {
		want = append(want, seriesLimit)
	}
	if throttles {
		want = append(want, seriesThrottles)
	}
	if delay {
		want = append(want, seriesDelay)
	}
	if queued {
		want = append(want, seriesQueued)
	}
	for _, e := range tl.Events {
		if e.Type == "gate_close" && e.Until > e.T {
			want = append(want, seriesGate)
			break
		}
	}
	slices.Sort(want)
	return want
}

// withTimeline counts the results that have a timeline with points.
func withTimeline(r Report) int {
	n := 0
	for _, res := range r.Results {
		if res.Timeline != nil && len(res.Timeline.Points) > 0 {
			n++
		}
	}
	return n
}

// checkCharts checks that doc holds one chart per strategy with a timeline,
// in order, each drawing exactly the series its data calls for with
// non-empty path data, and one placeholder per strategy without.
func checkCharts(t *testing.T, doc *node, r Report) {
	t.Helper()
	charts := doc.find(byClass("svg", "chart"))
	if got, want := len(charts), withTimeline(r); got != want {
		t.Fatalf("chart <svg> elements = %d, want %d", got, want)
	}
	if got, want := len(doc.find(byClass("p", "empty"))), len(r.Results)-withTimeline(r); got != want {
		t.Errorf("no-timeline placeholders = %d, want %d", got, want)
	}
	i := 0
	for _, res := range r.Results {
		if res.Timeline == nil || len(res.Timeline.Points) == 0 {
			continue
		}
		svg := charts[i]
		i++
		series := chartSeries(svg)
		got := slices.Sorted(func(yield func(string) bool) {
			for k := range series {
				if !yield(k) {
					return
				}
			}
		})
		if want := wantSeries(res.Timeline); !slices.Equal(got, want) {
			t.Errorf("%s: series drawn = %v, want %v", res.Name, got, want)
		}
		notes := len(svg.find(byClass("text", "panel-note")))
		if wantNote := !slices.Contains(wantSeries(res.Timeline), seriesThrottles); (notes == 1) != wantNote {
			t.Errorf("%s: %d \"no 429s\" notes, want one exactly when nothing was rate limited (%v)", res.Name, notes, wantNote)
		}
		for key, d := range series {
			if !strings.HasPrefix(d, "M") || len(d) < 8 {
				t.Errorf("%s: series %s: path data %q, want a drawn path", res.Name, key, d)
			}
		}
		if n := len(svg.find(byClass("text", "tick-x"))); n < 2 {
			t.Errorf("%s: %d time axis tick labels, want at least 2", res.Name, n)
		}
		if n := len(svg.find(byClass("text", "tick-y"))); n < 4 {
			t.Errorf("%s: %d y tick labels, want at least 4", res.Name, n)
		}
		if n := len(svg.find(byClass("text", "axis-title"))); n != 1 {
			t.Errorf("%s: %d axis titles, want 1", res.Name, n)
		}
		if n := len(svg.find(byClass("g", "legend"))); n < 4 {
			t.Errorf("%s: %d legend entries, want at least 4", res.Name, n)
		}
	}
}

func TestHTMLStructure(t *testing.T) {
	tests := []struct {
		name   string
		report Report
	}{
		{"guide", guideReport()},
		{"edge", edgeReport()},
		{"empty", Report{Scenario: "nothing", Results: []Result{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := HTML(&buf, tt.report); err != nil {
				t.Fatalf("HTML: %v", err)
			}
			// Strict XML parsing doubles as a check that every element is
			// closed and every string escaped.
			doc := parseDOM(t, buf.Bytes(), true)

			if got := strings.TrimSpace(doc.find(elem("h1"))[0].text.String()); got != tt.report.Scenario {
				t.Errorf("h1 = %q, want the scenario %q", got, tt.report.Scenario)
			}
			if got := doc.find(elem("title"))[0].text.String(); !strings.Contains(got, tt.report.Scenario) {
				t.Errorf("title = %q, want it to contain %q", got, tt.report.Scenario)
			}
			rows := doc.find(elem("table"))[0].find(elem("tbody"))[0].find(elem("tr"))
			if len(rows) != len(tt.report.Results) {
				t.Fatalf("summary rows = %d, want %d", len(rows), len(tt.report.Results))
			}
			for i, row := range rows {
				if got, want := len(row.find(elem("td"))), len(wideColumns(tt.report.Results)); got != want {
					t.Errorf("summary row %d: %d cells, want %d", i, got, want)
				}
				name := row.find(elem("a"))[0]
				if got, want := name.text.String(), tt.report.Results[i].Name; got != want {
					t.Errorf("summary row %d: name %q, want %q", i, got, want)
				}
				if got, want := name.attrs["href"], "#strategy-"+string(rune('1'+i)); got != want {
					t.Errorf("summary row %d: href %q, want %q", i, got, want)
				}
			}
			checkCharts(t, doc, tt.report)
			checkCompare(t, doc, tt.report)
			checkSelfContained(t, doc)
		})
	}
}

// checkSelfContained fails when the page could load anything: a script, an
// external stylesheet, image, frame or font, or a link off the page.
func checkSelfContained(t *testing.T, doc *node) {
	t.Helper()
	for _, tag := range []string{"script", "link", "img", "iframe", "object", "embed", "image", "use"} {
		if n := len(doc.find(elem(tag))); n > 0 {
			t.Errorf("found %d <%s> elements; the page must load nothing", n, tag)
		}
	}
	for _, n := range doc.find(func(*node) bool { return true }) {
		for k, v := range n.attrs {
			if (k == "src" || k == "href") && !strings.HasPrefix(v, "#") {
				t.Errorf("<%s %s=%q>: only in-page references allowed", n.name, k, v)
			}
			if strings.HasPrefix(k, "on") {
				t.Errorf("<%s %s>: event handler attribute", n.name, k)
			}
		}
	}
	for _, style := range doc.find(elem("style")) {
		css := style.text.String()
		for _, bad := range []string{"@import", "url(", "@font-face"} {
			if strings.Contains(css, bad) {
				t.Errorf("style contains %q", bad)
			}
		}
	}
}

func TestHTMLEscapes(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, edgeReport()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, raw := range []string{"<script>", "no timeline <b>", "1 <i>", `alert("x")`, "a=1&b"} {
		if strings.Contains(out, raw) {
			t.Errorf("output contains unescaped %q", raw)
		}
	}
	if !strings.Contains(out, "&lt;script&gt;") {
		t.Errorf("output lacks the escaped scenario name &lt;script&gt;")
	}
}

func TestHTMLBadNumbers(t *testing.T) {
	r := Report{Scenario: "bad numbers", Results: []Result{{
		Name: "nan", Kind: "semaphore",
		Summary: measure.Summary{Timeline: &measure.Timeline{ResolutionSeconds: math.NaN(), Points: []measure.Point{
			{T: 0.1, InFlight: 3, CompletionsRate: math.NaN(), Limit: math.Inf(1)},
			{T: 0.2, InFlight: 4, CompletionsRate: 5, ThrottlesRate: math.Inf(1), DelaySeconds: -1},
		}}},
	}, {
		Name: "negative resolution", Kind: "semaphore",
		Summary: measure.Summary{Timeline: &measure.Timeline{ResolutionSeconds: -0.1, Points: []measure.Point{
			{T: 0.1, InFlight: 3, MaxInFlight: -4, CompletionsRate: 10},
			{T: 0.2, InFlight: 4, CompletionsRate: -5, ThrottlesRate: math.NaN()},
		}}},
	}}}
	for _, res := range r.Results {
		d := newTimelineData(res.Timeline)
		for i := range d.T {
			if d.Completions[i] < 0 || d.Throttles[i] < 0 || math.IsNaN(d.Completions[i]) || math.IsNaN(d.Throttles[i]) {
				t.Errorf("%s: at %v s completions %v/s, 429s %v/s; want finite rates of at least 0", res.Name, d.T[i], d.Completions[i], d.Throttles[i])
			}
		}
	}
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"NaN", "Inf"} {
		if strings.Contains(buf.String(), bad) {
			t.Errorf("output contains %q", bad)
		}
	}
	parseDOM(t, buf.Bytes(), true)
}

func TestHTMLLongTimelineIsDecimated(t *testing.T) {
	const n = 50_000
	r := Report{Scenario: "long", Results: []Result{{
		Name: "long", Kind: "aimd",
		Summary: measure.Summary{Timeline: sampled(0.1, n, func(t float64) measure.Point {
			return measure.Point{
				InFlight: int(10 + 10*math.Sin(t)), CompletionsRate: 40 + 5*math.Cos(t/7),
				ThrottlesRate: math.Max(0, 50*math.Sin(t/3)), Limit: 20, DelaySeconds: 0.01,
			}
		})},
	}}}
	r.Results[0].Timeline.Points[n/2+7].InFlight = 1000 // a spike decimation must keep

	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 400_000 {
		t.Errorf("report.html is %d bytes for %d samples, want under 400 kB", buf.Len(), n)
	}
	doc := parseDOM(t, buf.Bytes(), true)
	checkCharts(t, doc, r)
	series := chartSeries(doc.find(byClass("svg", "chart"))[0])
	for _, key := range []string{seriesInFlight, seriesCompletions} {
		if got := strings.Count(series[key], "L"); got > maxPathPoints {
			t.Errorf("%s path has %d segments, want at most %d", key, got, maxPathPoints)
		}
	}
	// The spike must survive decimation: the in-flight path reaches the
	// 1,000 tick's height.
	var y1000 string
	for _, tk := range doc.find(byClass("text", "tick-y")) {
		if tk.text.String() == "1,000" {
			y1000 = tk.attrs["y"]
		}
	}
	if y1000 == "" {
		t.Fatalf("no y tick labelled 1,000: the axis ignored the spike")
	}
	y, _ := strconv.ParseFloat(y1000, 64)
	// A step path reaches a height with V (or its first M x,y).
	want := strconv.FormatFloat(y-4, 'f', -1, 64)
	if d := series[seriesInFlight]; !strings.Contains(d, "V"+want+"H") && !strings.Contains(d, ","+want+"H") {
		t.Errorf("in-flight path never reaches y %s: decimation lost the spike", want)
	}
}

// TestHTMLGateBands checks that retry-after gate closures are drawn as bands
// over the concurrency panel at their times, and only when a gate closed.
func TestHTMLGateBands(t *testing.T) {
	tl := &measure.Timeline{ResolutionSeconds: 1}
	for i := 1; i <= 4; i++ {
		tl.Points = append(tl.Points, measure.Point{T: float64(i), InFlight: 5, Limit: 10, CompletionsRate: 2})
	}
	tl.Events = []measure.StrategyEvent{
		{T: 1, Type: "limit", Value: 10},
		{T: 1, Type: "gate_close", Until: 2, Reason: "throttle"},
		{T: 2, Type: "gate_open"},
	}
	r := Report{Scenario: "gates", Results: []Result{{Name: "adaptive", Kind: "adaptive", Summary: measure.Summary{Items: 8, Completed: 8, Timeline: tl}}}}
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	doc := parseDOM(t, b.Bytes(), true)
	checkCharts(t, doc, r)
	d := chartSeries(doc.find(byClass("svg", "chart"))[0])[seriesGate]
	// The axis spans 0–4 s over the plot's width: the band covers 1–2 s.
	w := float64(plotRight - plotLeft)
	x1, x2 := plotLeft+w/4, plotLeft+w/2
	if !strings.HasPrefix(d, "M"+num(x1)+",") || !strings.Contains(d, "H"+num(x2)+" ") {
		t.Errorf("gate band path = %q, want a band from x=%s to x=%s", d, num(x1), num(x2))
	}
	if !strings.Contains(b.String(), "retry-after gate closed") {
		t.Error("no legend entry for the gate band")
	}

	tl.Events = tl.Events[:1] // a limit change, no gate
	b.Reset()
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `data-series="gate"`) {
		t.Error("a gate band drawn for a run whose gate never closed")
	}
}

// TestRetryAfterWaitShown: the part of backoff the server asked for with
// retry-after has its own latency row in Markdown and HTML, only for the
// strategies that waited on one.
func TestRetryAfterWaitShown(t *testing.T) {
	rep := guideReport() // only "unbounded, retries=2" waited on retry-after
	var md, html bytes.Buffer
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"markdown": md.String(), "html": html.String()} {
		if n := strings.Count(out, "of which retry-after"); n != 1 {
			t.Errorf("%s: %d retry-after rows, want 1 (the one strategy that waited)", name, n)
		}
	}
}

// TestHTMLStartsWithDoctype: the template's definitions leave nothing
// before the doctype.
func TestHTMLStartsWithDoctype(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, guideReport()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "<!DOCTYPE html>\n") {
		t.Errorf("report.html starts %q, want the doctype", buf.String()[:min(40, buf.Len())])
	}
}
