package reports

import (
	"math"
	"strconv"
	"strings"

	"github.com/ratelab/ratelab/measure"
)

// Chart geometry, in SVG user units. The SVG scales to its container's
// width, so these fix proportions and text size, not pixels on screen.
const (
	chartWidth  = 960
	plotLeft    = 64  // room for y tick labels
	plotRight   = 944 // chartWidth minus a small right margin
	panelHeader = 34  // panel title and legend above each plot
	panelGap    = 14  // between one plot's bottom and the next header
	axisFooter  = 46  // x tick labels and the axis label under the last plot

	// maxPathPoints caps the points of one drawn series: two per unit of
	// plot width, a low and a high, is all the resolution a path can show.
	maxPathPoints = 2 * (plotRight - plotLeft)
)

// Series keys: the CSS class suffix, the legend and the tests' handle on
// each drawn line.
const (
	seriesInFlight    = "in-flight"
	seriesLimit       = "limit"
	seriesCompletions = "completions"
	seriesThrottles   = "throttles"
	seriesDelay       = "delay"
	seriesQueued      = "waiting" // measure.Point.Queued; not "queue", a word of open-loop reports
	seriesGate        = "gate"    // retry-after gate closed: a shaded band, not a colour of its own
)

// seriesColors are the series' colours; the page's CSS and the legend
// swatches use them, and the browser test looks for them in a screenshot.
// Blue, amber, green, red, violet and slate stay distinct under the
// common forms of colour blindness in combination with their shapes (area,
// dashed step, line, bars, step) and their panels.
var seriesColors = map[string]string{
	seriesInFlight:    "#2563eb",
	seriesLimit:       "#d97706",
	seriesCompletions: "#059669",
	seriesThrottles:   "#dc2626",
	seriesDelay:       "#7c3aed",
	seriesQueued:      "#475569",
}

// A svgChart is a timeline laid out for the template: panels stacked on one
// shared time axis. It is one strategy's chart, or the comparison's, with
// every strategy overlaid.
type svgChart struct {
	Class         string // the <svg>'s class: "chart" per strategy, "compare-chart"
	Label         string // the accessible label
	XTitle        string // the time axis's title
	Width, Height int
	Left, Right   float64 // plot area's horizontal extent
	Panels        []svgPanel
	XTicks        []svgTick
	XLabelY       float64 // baseline of the x tick labels
	XTitleX       float64 // centre of the x axis title
	XTitleY       float64 // baseline of the x axis title
	Seconds       string  // the time axis's span, for the accessible label
}

// A svgPanel is one plot of a chart with its own y axis.
type svgPanel struct {
	Title       string
	Unit        string
	TitleY      float64
	Top, Bottom float64
	YTicks      []svgTick
	Series      []svgSeries
	Legend      []svgLegend
	Note        string  // shown in place of a plot with nothing to draw
	NoteY       float64 // its baseline
}

// A svgTick is one labelled tick: Pos is x for the time axis, y otherwise.
type svgTick struct {
	Pos   float64
	Label string
}

// A svgSeries is one drawn series. Area, when set, is a filled shape drawn
// under the line D. Strategy, in the comparison, is the 1-based position
// of the strategy it belongs to, which picks its colour; 0 otherwise.
type svgSeries struct {
	Key, Name string
	Shape     string // "line", "step", "bars" or "band"
	D         string
	Area      string
	Strategy  int
}

// A svgLegend is one legend entry, positioned in the panel header.
type svgLegend struct {
	Key, Label string
	Shape      string
	X          float64
	Y          float64
	Empty      bool // the series has nothing to draw, e.g. no 429s at all
}

// A timelineData is a timeline's columns as the charts draw them. Sample i
// covers the interval (Starts[i], T[i]]: the previous sample's instant, or
// one resolution before the first. The run's last interval is usually
// shorter than the resolution (the run ended inside it).
type timelineData struct {
	T, Starts []float64
	Res       float64 // the resolution; 0 when unknown
	Span      float64 // where the run's time axis ends

	// InFlight is the most calls in flight during each interval, where the
	// timeline recorded it (max_in_flight), else the count at its end.
	InFlight     []float64
	Limit, Delay []float64
	// Queued is the callers waiting in the strategy's Acquire at each
	// sample (measure.Point.Queued).
	Queued []float64

	// Completions and Throttles are per second, averaged over the Window
	// seconds before each sample (smoothRate).
	Completions, Throttles []float64
	Window                 float64
}

// newTimelineData reads tl's columns, with every value that is not a finite
// number (or a negative rate) drawn as 0, or nil when tl has no point.
func newTimelineData(tl *measure.Timeline) *timelineData {
	if tl == nil || len(tl.Points) == 0 {
		return nil
	}
	pts := tl.Points
	res := math.Max(0, finite(tl.ResolutionSeconds))
	d := &timelineData{Res: res}
	col := func(f func(measure.Point) float64) []float64 {
		v := make([]float64, len(pts))
		for i, p := range pts {
			v[i] = finite(f(p))
		}
		return v
	}
	d.T = col(func(p measure.Point) float64 { return p.T })
	for i := 1; i < len(d.T); i++ {
		d.T[i] = math.Max(d.T[i], d.T[i-1]) // time never runs backwards
	}
	d.Starts = make([]float64, len(pts))
	d.Starts[0] = math.Max(0, d.T[0]-res)
	copy(d.Starts[1:], d.T)
	d.Span = math.Max(d.T[len(d.T)-1], res)
	d.InFlight = col(func(p measure.Point) float64 { return float64(max(p.InFlight, p.MaxInFlight)) })
	d.Limit = col(func(p measure.Point) float64 { return p.Limit })
	d.Delay = col(func(p measure.Point) float64 { return p.DelaySeconds })
	d.Queued = col(func(p measure.Point) float64 { return float64(p.Queued) })

	// A point's rates are per second over its own interval, whatever its
	// length; multiplied back by that length they are the interval's
	// counts, which the trailing average adds up. Dividing a short last
	// interval's count by its own length (20 completions in 25 ms: 800/s)
	// and then averaging samples is what made a steady run climb at its
	// end: counts are added up, and divided by the window.
	counts := func(rate func(measure.Point) float64) []float64 {
		v := col(rate)
		for i := range v {
			v[i] = math.Max(0, v[i]) * (d.T[i] - d.Starts[i])
		}
		return v
	}
	d.Window = rateWindow(res, d.T[len(d.T)-1])
	d.Completions = smoothRate(d.Starts, d.T, counts(func(p measure.Point) float64 { return p.CompletionsRate }), d.Window, res)
	d.Throttles = smoothRate(d.Starts, d.T, counts(func(p measure.Point) float64 { return p.ThrottlesRate }), d.Window, res)
	return d
}

// rateWindow is how many seconds the rates are averaged over: about one
// second, as two halves of a whole number of intervals each (smoothRate),
// and no more than the run holds. 0 (each interval's own rate) when the
// resolution is unknown, coarser than a second, or the run shorter than two
// intervals.
func rateWindow(res, span float64) float64 {
	if !(res > 0) || !(span > 0) {
		return 0
	}
	k := math.Min(math.Round(0.5/res), math.Floor(span/(2*res)+1e-9))
	if k < 1 {
		return 0
	}
	return 2 * k * res
}

// smoothRate turns counts per interval into a rate per second averaged over
// the window before each sample: the counts of the last half window per
// second (trailingRate), then the mean of that over the half window before
// (trailingMean). It only looks back, so nothing shows before it happened.
//
// Completions arrive in bursts (a wave of calls ends together) and 429s in
// bursts tens of times the completion rate, so a rate at a fine resolution
// is a comb of spikes; the trend, which tells a healthy run from a slowing
// provider, shows in an average over about a second. One sharp-edged
// average of a second ripples by a whole burst whenever the bursts drift
// across its edge (20 completions every 0.505 s read 40/s, then 20/s, then
// 40/s); two of half a second each ripple by a fraction of that, and a
// steady run reads steady. A burst at t shows as a hump from t to
// t + window, highest half a window later.
func smoothRate(starts, ts, counts []float64, window, res float64) []float64 {
	if !(window > 0) || !(res > 0) {
		return trailingRate(starts, ts, counts, 0, 0)
	}
	half := window / 2
	k := int(math.Round(half / res))
	return trailingMean(starts, ts, trailingRate(starts, ts, counts, half, k), half)
}

// trailingRate returns, at each sample i, the counts of the last k
// intervals up to it, per second of window (k intervals of the resolution).
// Counting intervals, not seconds, keeps a sample's window from gaining or
// losing the burst at its edge with the microseconds a ticker is late by,
// and the run's last interval, cut short by the run's end, counts as one; an
// interval that starts more than half an interval before the window (a
// tick the sampler missed) is left out all the same. Before the first full
// window it still divides by the window (the run started from nothing), so
// a burst of 180 429s in the first 50 ms of a 0.5 s window reads 360/s,
// not 3,600/s over 50 ms. With no window each interval's own rate is
// returned.
func trailingRate(starts, ts, counts []float64, window float64, k int) []float64 {
	out := make([]float64, len(ts))
	if !(window > 0) || k < 1 {
		for i := range ts {
			if dt := ts[i] - starts[i]; dt > 0 {
				out[i] = counts[i] / dt
			}
		}
		return out
	}
	prefix := make([]float64, len(counts)+1)
	for i, c := range counts {
		prefix[i+1] = prefix[i] + c
	}
	slack := window / float64(2*k)
	lo := 0
	for i := range ts {
		lo = max(lo, i-k+1)
		for lo < i && starts[lo] < ts[i]-window-slack {
			lo++
		}
		out[i] = math.Max(0, prefix[i+1]-prefix[lo]) / window
	}
	return out
}

// trailingMean returns, at each sample i, the mean over (T[i] - window,
// T[i]] of ys held across each interval, 0 before the first: an interval
// the window's start cuts counts for its part inside.
func trailingMean(starts, ts, ys []float64, window float64) []float64 {
	out := make([]float64, len(ts))
	prefix := make([]float64, len(ys)+1) // integral of ys up to the end of each interval
	for i, y := range ys {
		prefix[i+1] = prefix[i] + y*(ts[i]-starts[i])
	}
	lo := 0
	for i := range ts {
		from := ts[i] - window
		for lo < i && ts[lo] <= from {
			lo++
		}
		sum := prefix[i+1] - prefix[lo+1] + ys[lo]*(ts[lo]-math.Max(starts[lo], from))
		out[i] = math.Max(0, sum) / window
	}
	return out
}

// rateLabel names a rate averaged over window seconds at resolution res.
func rateLabel(what string, window, res float64) string {
	if !(window > 0) || window <= res*(1+1e-9) {
		return what + " per second"
	}
	return what + " per second, trailing " + strconv.FormatFloat(math.Round(window*1000)/1000, 'f', -1, 64) + " s average"
}

// chartBuilder lays out panels one under another on a time axis from 0 to
// xmax.
type chartBuilder struct {
	c    *svgChart
	x    func(float64) float64
	xmax float64
	y    float64
}

func newChartBuilder(xmax float64) *chartBuilder {
	if !(xmax > 0) || math.IsInf(xmax, 0) {
		xmax = 1
	}
	xTicks, xStep := niceTicks(xmax, 8)
	b := &chartBuilder{xmax: xmax}
	b.x = func(t float64) float64 { return plotLeft + clamp(t/xmax, 0, 1)*(plotRight-plotLeft) }
	b.c = &svgChart{
		Class: "chart", XTitle: "seconds since the strategy started",
		Width: chartWidth, Left: plotLeft, Right: plotRight, XTitleX: (plotLeft + plotRight) / 2,
		Seconds: formatFixed(xmax, decimalsFor(xStep)),
	}
	for _, t := range xTicks {
		if t <= xmax*(1+1e-9) {
			b.c.XTicks = append(b.c.XTicks, svgTick{Pos: round1(b.x(t)), Label: formatFixed(t, decimalsFor(xStep))})
		}
	}
	return b
}

// addPanel adds a panel of the given plot height whose y axis spans 0 to
// at least ymax; series draws its series given the y scale and the plot's
// bottom.
func (b *chartBuilder) addPanel(title, unit string, height float64, ymax float64, series func(yOf func(float64) float64, base float64) []svgSeries, legend []svgLegend) *svgPanel {
	p := svgPanel{Title: title, Unit: unit, TitleY: b.y + 20}
	p.Top = b.y + panelHeader
	p.Bottom = p.Top + height
	ticks, step := niceTicks(ymax, max(2, int(height/40)))
	if ymax > 0 && ticks[len(ticks)-1]-ymax < 0.15*step {
		// Headroom: a series flat at its maximum (in flight pinned at
		// the limit) must not merge with the plot's top edge.
		ticks = append(ticks, ticks[len(ticks)-1]+step)
	}
	top := ticks[len(ticks)-1]
	yOf := func(v float64) float64 { return p.Bottom - clamp(v/top, 0, 1)*(p.Bottom-p.Top) }
	for _, v := range ticks {
		p.YTicks = append(p.YTicks, svgTick{Pos: round1(yOf(v)), Label: formatTick(v, step, unit)})
	}
	p.Series = series(yOf, p.Bottom)
	// The legend is right-aligned in the header; text widths are
	// estimated, generously, since SVG cannot measure without script.
	widths := make([]float64, len(legend))
	lx := float64(plotRight)
	for i, l := range legend {
		widths[i] = 24 + 7*float64(len([]rune(l.Label)))
		lx -= widths[i]
	}
	lx -= 20 * float64(len(legend)-1)
	for i, l := range legend {
		l.X, l.Y = round1(lx), p.TitleY
		p.Legend = append(p.Legend, l)
		lx += widths[i] + 20
	}
	b.c.Panels = append(b.c.Panels, p)
	b.y = p.Bottom + panelGap
	return &b.c.Panels[len(b.c.Panels)-1]
}

// finish places the time axis under the last panel.
func (b *chartBuilder) finish() *svgChart {
	last := b.c.Panels[len(b.c.Panels)-1]
	b.c.XLabelY = last.Bottom + 18
	b.c.XTitleY = last.Bottom + 38
	b.c.Height = int(math.Ceil(last.Bottom + axisFooter))
	return b.c
}

// buildChart lays out tl as a chart, or returns nil when there is nothing to
// draw. A sample describes the interval (T−resolution, T]: in flight (its
// most), the limit and delay steps and the 429 bars span it; the
// completions average is a line through the sample instants.
func buildChart(name string, tl *measure.Timeline) *svgChart {
	d := newTimelineData(tl)
	if d == nil {
		return nil
	}
	b := newChartBuilder(d.Span)
	b.c.Label = name + ": calls in flight, limit, completions and 429s per second over " + b.c.Seconds + " seconds"
	x, ts, res := b.x, d.T, d.Res
	completionsLabel := rateLabel("completions", d.Window, res)
	throttleLabel := rateLabel("429s", d.Window, res)

	// Concurrency: what the client holds against what it allows itself.
	hasLimit := maxOf(d.Limit) > 0
	legend := []svgLegend{{Key: seriesInFlight, Label: "peak in flight", Shape: "area"}}
	if hasLimit {
		legend = append(legend, svgLegend{Key: seriesLimit, Label: "strategy's limit", Shape: "dash"})
	} else {
		legend = append(legend, svgLegend{Key: seriesLimit, Label: "no limit", Shape: "dash", Empty: true})
	}
	gates := gateBands(tl.Events, x)
	if gates != "" {
		legend = append(legend, svgLegend{Key: seriesGate, Label: "retry-after gate closed", Shape: "band"})
	}
	b.addPanel("Concurrency", "calls", 190, math.Max(maxOf(d.InFlight), maxOf(d.Limit)), func(yOf func(float64) float64, base float64) []svgSeries {
		line, area := stepArea(ts, d.InFlight, res, x, yOf, base)
		var s []svgSeries
		if gates != "" {
			// Bands first, so the series draw over them.
			s = append(s, svgSeries{Key: seriesGate, Name: "retry-after gate closed", Shape: "band",
				D: strings.ReplaceAll(strings.ReplaceAll(gates, "TOP", num(yOf(math.Inf(1)))), "BOTTOM", num(base))})
		}
		s = append(s, svgSeries{Key: seriesInFlight, Name: "peak calls in flight in each interval", Shape: "step", D: line, Area: area})
		if hasLimit {
			s = append(s, svgSeries{Key: seriesLimit, Name: "strategy's limit", Shape: "step", D: stepPath(ts, d.Limit, res, x, yOf)})
		}
		return s
	}, legend)

	// Completions, on their own scale: a burst of rejections, often a
	// hundred times the completion rate, must not flatten the trend.
	b.addPanel("Completions", "per second", 130, maxOf(d.Completions), func(yOf func(float64) float64, base float64) []svgSeries {
		return []svgSeries{{Key: seriesCompletions, Name: completionsLabel, Shape: "line", D: linePath(ts, d.Completions, res, x, yOf)}}
	}, []svgLegend{{Key: seriesCompletions, Label: completionsLabel, Shape: "line"}})

	// Rejections: the client discovering the limit by hitting it.
	hasThrottles := maxOf(d.Throttles) > 0
	if !hasThrottles {
		throttleLabel = "no 429s"
	}
	height := 90.0
	if !hasThrottles {
		height = 24 // a strip saying so, not an empty plot
	}
	p := b.addPanel("Rate limited", "429s per second", height, maxOf(d.Throttles), func(yOf func(float64) float64, base float64) []svgSeries {
		if !hasThrottles {
			return nil
		}
		return []svgSeries{{Key: seriesThrottles, Name: throttleLabel, Shape: "bars", D: barsPath(ts, d.Throttles, res, x, yOf, base)}}
	}, []svgLegend{{Key: seriesThrottles, Label: throttleLabel, Shape: "bar", Empty: !hasThrottles}})
	if !hasThrottles {
		p.YTicks = []svgTick{{Pos: p.Bottom, Label: "0"}}
		p.Note = "no request was rate limited"
		p.NoteY = round1((p.Top+p.Bottom)/2 + 4)
	}

	// Pacing delay, only for strategies that pace.
	if maxOf(d.Delay) > 0 {
		b.addPanel("Pacing delay", "seconds", 80, maxOf(d.Delay), func(yOf func(float64) float64, _ float64) []svgSeries {
			return []svgSeries{{Key: seriesDelay, Name: "delay between starts", Shape: "step", D: stepPath(ts, d.Delay, res, x, yOf)}}
		}, []svgLegend{{Key: seriesDelay, Label: "delay between starts", Shape: "line"}})
	}

	// Callers waiting for the strategy, whatever it is, on their own
	// scale (a queue of hundreds would flatten the calls in flight); only
	// when some ever waited.
	if maxOf(d.Queued) > 0 {
		b.addPanel("Waiting", "callers", 80, maxOf(d.Queued), func(yOf func(float64) float64, _ float64) []svgSeries {
			return []svgSeries{{Key: seriesQueued, Name: "callers waiting for the strategy", Shape: "step", D: stepPath(ts, d.Queued, res, x, yOf)}}
		}, []svgLegend{{Key: seriesQueued, Label: "callers waiting", Shape: "line"}})
	}
	return b.finish()
}

// gateBands draws each retry-after gate closure in events as a rectangle
// spanning the plot's height, with TOP and BOTTOM left for the panel to fill
// in; it returns "" when no gate closed.
func gateBands(events []measure.StrategyEvent, x func(float64) float64) string {
	var b strings.Builder
	for _, e := range events {
		if e.Type != "gate_close" || !(e.Until > e.T) {
			continue
		}
		x1, x2 := x(e.T), x(e.Until)
		if x2-x1 < 1 {
			x2 = x1 + 1 // a short gate is still visible
		}
		b.WriteString("M" + num(x1) + ",TOP H" + num(x2) + " V BOTTOM H" + num(x1) + " Z ")
	}
	return strings.TrimSpace(b.String())
}

// linePath draws ys against ts as a polyline. A single sample is drawn
// across its interval, or across the whole axis when the interval is empty,
// so it is visible.
func linePath(ts, ys []float64, res float64, x, y func(float64) float64) string {
	ts, ys = decimate(ts, ys)
	var b strings.Builder
	if len(ts) == 1 {
		x0, x1 := x(ts[0]-res), x(ts[0])
		if x1-x0 < 1 {
			x0, x1 = plotLeft, plotRight
		}
		b.WriteString("M" + pt(x0, y(ys[0])) + "H" + num(x1))
		return b.String()
	}
	for i := range ts {
		if i == 0 {
			b.WriteByte('M')
		} else {
			b.WriteByte('L')
		}
		b.WriteString(pt(x(ts[i]), y(ys[i])))
	}
	return b.String()
}

// stepArea is stepPath and the area under it down to base.
func stepArea(ts, ys []float64, res float64, x, y func(float64) float64, base float64) (line, area string) {
	line = stepPath(ts, ys, res, x, y)
	// The path starts with "M x0,y"; the area closes back to x0.
	x0, _, _ := strings.Cut(line[1:], ",")
	return line, line + "V" + num(base) + "H" + x0 + "Z"
}

// stepPath draws ys as a step function, each value held across its
// sample's interval.
func stepPath(ts, ys []float64, res float64, x, y func(float64) float64) string {
	ts, ys = decimate(ts, ys)
	var b strings.Builder
	for i := range ts {
		start := ts[i] - res
		if i > 0 {
			start = ts[i-1]
		}
		x0, x1 := x(start), x(ts[i])
		if len(ts) == 1 && x1-x0 < 1 {
			x0, x1 = plotLeft, plotRight
		}
		if i == 0 {
			b.WriteString("M" + pt(x0, y(ys[i])))
		} else {
			b.WriteString("V" + num(y(ys[i])))
		}
		b.WriteString("H" + num(x1))
	}
	return b.String()
}

// barsPath draws one bar per non-zero sample across its interval, at least
// one unit wide so a short spike stays visible.
func barsPath(ts, ys []float64, res float64, x, y func(float64) float64, base float64) string {
	ts, ys = decimate(ts, ys)
	var b strings.Builder
	for i := range ts {
		if !(ys[i] > 0) {
			continue
		}
		start := ts[i] - res
		if i > 0 && res == 0 {
			start = ts[i-1]
		}
		x0, x1 := x(start), x(ts[i])
		if x1-x0 < 1.5 {
			x0 = x1 - 1.5
		}
		b.WriteString("M" + pt(x0, base) + "V" + num(y(ys[i])) + "H" + num(x1) + "V" + num(base) + "Z")
	}
	return b.String()
}

// decimate thins a long series to at most maxPathPoints points by keeping,
// for each run of consecutive samples, its lowest and highest in time order:
// the drawn shape keeps every spike and dip while the path stays small.
func decimate(ts, ys []float64) ([]float64, []float64) {
	if len(ts) <= maxPathPoints {
		return ts, ys
	}
	buckets := maxPathPoints / 2
	outT := make([]float64, 0, maxPathPoints)
	outY := make([]float64, 0, maxPathPoints)
	for k := range buckets {
		lo, hi := k*len(ts)/buckets, (k+1)*len(ts)/buckets
		iMin, iMax := lo, lo
		for i := lo; i < hi; i++ {
			if ys[i] < ys[iMin] {
				iMin = i
			}
			if ys[i] > ys[iMax] {
				iMax = i
			}
		}
		first, second := min(iMin, iMax), max(iMin, iMax)
		outT, outY = append(outT, ts[first]), append(outY, ys[first])
		if second != first {
			outT, outY = append(outT, ts[second]), append(outY, ys[second])
		}
	}
	return outT, outY
}

// niceTicks returns about n+1 evenly spaced ticks from 0 to a round number
// at or above max, with steps of 1, 2 or 5 times a power of ten, and the
// step. A max of zero or less gets the axis 0..1.
func niceTicks(max float64, n int) ([]float64, float64) {
	if !(max > 0) || math.IsInf(max, 0) {
		max = 1
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw*(1-1e-9) {
			step = m * mag
			break
		}
	}
	top := math.Ceil(max/step-1e-9) * step
	var ticks []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		if v > top*(1+1e-9) {
			break
		}
		ticks = append(ticks, math.Round(v/step)*step)
	}
	return ticks, step
}

// decimalsFor is how many decimals a tick label needs at this step.
func decimalsFor(step float64) int {
	d := 0
	for s := step; d < 6 && math.Abs(s-math.Round(s)) > 1e-9; s *= 10 {
		d++
	}
	return d
}

// formatTick formats a y tick value.
func formatTick(v, step float64, unit string) string {
	if unit == "seconds" {
		return formatLatency(v)
	}
	return formatFixed(v, decimalsFor(step))
}

// finite is f, or 0 when f is not a finite number.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, f := range v {
		if f > m && !math.IsInf(f, 0) {
			m = f
		}
	}
	return m
}

func clamp(v, lo, hi float64) float64 {
	if math.IsNaN(v) {
		return lo
	}
	return math.Min(math.Max(v, lo), hi)
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// num formats a coordinate with at most one decimal.
func num(f float64) string { return strconv.FormatFloat(round1(f), 'f', -1, 64) }

func pt(x, y float64) string { return num(x) + "," + num(y) }
