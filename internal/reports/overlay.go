package reports

import (
	"fmt"
	"math"
	"strings"
)

// strategyColors tell the strategies apart in the comparison: Tableau's
// ten-colour categorical palette, chosen for telling lines apart on white.
// None is within the browser test's tolerance of a series colour. Past ten
// strategies the colours repeat, dashed.
var strategyColors = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
}

// strategyColor is the colour of the strategy at 1-based position k.
func strategyColor(k int) string { return strategyColors[(k-1)%len(strategyColors)] }

// A htmlCompare is the comparison section: every strategy on one time axis,
// and its totals side by side.
type htmlCompare struct {
	Legend []htmlLegendEntry
	Chart  *svgChart // nil when no strategy recorded a timeline
	Bars   *svgBars
}

// A htmlLegendEntry names a strategy's colour.
type htmlLegendEntry struct {
	Strategy   int
	Name       string
	NoTimeline bool
}

// newHTMLCompare builds the comparison of results, or nil for fewer than
// two: there is nothing to compare.
func newHTMLCompare(results []Result) *htmlCompare {
	if len(results) < 2 {
		return nil
	}
	c := &htmlCompare{}
	data := make([]*timelineData, len(results))
	for i, r := range results {
		data[i] = newTimelineData(r.Timeline)
		c.Legend = append(c.Legend, htmlLegendEntry{Strategy: i + 1, Name: r.Name, NoTimeline: data[i] == nil})
	}
	c.Chart = buildOverlay(results, data)
	c.Bars = buildBars(results)
	return c
}

// buildOverlay draws every strategy's timeline on one time axis, as long as
// the longest run: peak in flight per interval, and completions per second
// as each chart draws them. It returns nil when no strategy has a timeline.
func buildOverlay(results []Result, data []*timelineData) *svgChart {
	if data0(data) == nil {
		return nil
	}
	xmax := 0.0
	for _, d := range data {
		if d != nil {
			xmax = math.Max(xmax, d.Span)
		}
	}
	b := newChartBuilder(xmax)
	b.c.Class = "compare-chart"
	b.c.XTitle = "seconds since each strategy started"
	b.c.Label = "every strategy on one time axis: peak calls in flight and completions per second over " + b.c.Seconds + " seconds"
	x := b.x
	each := func(key, what string, draw func(d *timelineData, yOf func(float64) float64) string) func(func(float64) float64, float64) []svgSeries {
		return func(yOf func(float64) float64, _ float64) []svgSeries {
			var s []svgSeries
			for i, d := range data {
				if d != nil {
					s = append(s, svgSeries{Key: key, Name: results[i].Name + ": " + what, Shape: "line", D: draw(d, yOf), Strategy: i + 1})
				}
			}
			return s
		}
	}
	peak, rate := 0.0, 0.0
	for _, d := range data {
		if d != nil {
			peak = math.Max(peak, maxOf(d.InFlight))
			rate = math.Max(rate, maxOf(d.Completions))
		}
	}
	b.addPanel("In flight", "peak calls in each interval", 170, peak, each(seriesInFlight, "peak in flight", func(d *timelineData, yOf func(float64) float64) string {
		return stepPath(d.T, d.InFlight, d.Res, x, yOf)
	}), nil)
	labels := map[string]bool{}
	for _, d := range data {
		if d != nil {
			labels[rateLabel("completions", d.Window, d.Res)] = true
		}
	}
	unit := "per second, each averaged over about a second"
	if len(labels) == 1 {
		for l := range labels {
			unit = strings.TrimPrefix(l, "completions ")
		}
	}
	b.addPanel("Completions", unit, 150, rate, each(seriesCompletions, "completions per second", func(d *timelineData, yOf func(float64) float64) string {
		return linePath(d.T, d.Completions, d.Res, x, yOf)
	}), nil)
	return b.finish()
}

// data0 is the first timeline of data that there is.
func data0(data []*timelineData) *timelineData {
	for _, d := range data {
		if d != nil {
			return d
		}
	}
	return nil
}

// Bar chart geometry, in SVG user units.
const (
	barNameRight = 196 // right edge of the strategy names
	barColGap    = 28  // between two metrics' columns
	barValueRoom = 64  // right of the longest bar, for its value
	barHeader    = 30  // metric titles above the first row
	barRow       = 24  // one strategy's row
	barThickness = 14
	barNameChars = 27 // longer names are shortened, whole in their tooltip
)

// A svgBars is the bar chart of a few totals per strategy: a column per
// metric, each to its own scale, a row per strategy.
type svgBars struct {
	Width, Height int
	NameX         float64
	Rows          []svgBarRow
	Metrics       []svgBarMetric
}

// A svgBarRow is one strategy's row: its name and baseline.
type svgBarRow struct {
	Strategy    int
	Name, Short string
	Y           float64 // text baseline
}

// A svgBarMetric is one column: a title and a bar per strategy.
type svgBarMetric struct {
	Key, Title  string
	X, TitleY   float64 // left edge of the bars, title baseline
	Top, Bottom float64 // the zero line's extent
	Bars        []svgBar
}

// A svgBar is one strategy's bar; W is 0 for a value of 0.
type svgBar struct {
	Strategy   int
	Name       string
	X, Y, W, H float64
	Value      string  // the value as printed
	TextX      float64 // where the printed value starts
	TextY      float64
}

// buildBars lays out wall time, attempts and 429s per strategy.
func buildBars(results []Result) *svgBars {
	metrics := []struct {
		key, title string
		value      func(Result) float64
		format     func(float64) string
	}{
		{"wall", "wall time", func(r Result) float64 { return r.WallSeconds }, func(v float64) string { return formatFixed(v, 2) + " s" }},
		{"attempts", "attempts", func(r Result) float64 { return float64(r.Attempts) }, func(v float64) string { return formatInt(int64(v)) }},
		{"throttled", "429s", func(r Result) float64 { return float64(r.Throttled) }, func(v float64) string { return formatInt(int64(v)) }},
	}
	colW := (float64(chartWidth) - barNameRight - float64(len(metrics))*barColGap) / float64(len(metrics))
	barMax := colW - barValueRoom
	g := &svgBars{Width: chartWidth, NameX: barNameRight - 8}
	g.Height = int(barHeader + barRow*len(results) + 8)
	for i, r := range results {
		short := r.Name
		if rs := []rune(short); len(rs) > barNameChars {
			short = string(rs[:barNameChars-1]) + "…"
		}
		g.Rows = append(g.Rows, svgBarRow{Strategy: i + 1, Name: r.Name, Short: short, Y: round1(barHeader + barRow*float64(i) + barRow/2 + 4)})
	}
	for m, mt := range metrics {
		col := svgBarMetric{Key: mt.key, Title: mt.title, X: round1(barNameRight + barColGap + float64(m)*(colW+barColGap)), TitleY: 18,
			Top: barHeader - 2, Bottom: float64(barHeader + barRow*len(results))}
		top := 0.0
		for _, r := range results {
			top = math.Max(top, finite(mt.value(r)))
		}
		for i, r := range results {
			v := math.Max(0, finite(mt.value(r)))
			w := 0.0
			if top > 0 {
				w = round1(v / top * barMax)
			}
			if v > 0 && w < 1.5 {
				w = 1.5 // a small value stays visible
			}
			y := barHeader + barRow*float64(i) + (barRow-barThickness)/2
			col.Bars = append(col.Bars, svgBar{Strategy: i + 1, Name: r.Name, X: col.X, Y: round1(y), W: w, H: barThickness,
				Value: mt.format(mt.value(r)), TextX: round1(col.X + w + 6), TextY: round1(y + barThickness - 3)})
		}
		g.Metrics = append(g.Metrics, col)
	}
	return g
}

// strategyCSS colours each strategy's series, bars and legend swatch. The
// values are this package's constants.
func strategyCSS(n int) string {
	var b strings.Builder
	for k := 1; k <= n; k++ {
		fmt.Fprintf(&b, ".k-%d{--c:%s}\n", k, strategyColor(k))
		if k > len(strategyColors) {
			fmt.Fprintf(&b, ".series.k-%d{stroke-dasharray:6 3}\n", k)
		}
	}
	return b.String()
}
