package reports

import (
	"github.com/ratelab/ratelab/measure"
	"math"
	"strconv"
	"strings"
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
	seriesGate        = "gate" // retry-after gate closed: a shaded band, not a colour of its own
)

// seriesColors are the series' colours; the page's CSS and the legend
// swatches use them, and the browser test looks for them in a screenshot.
// Blue, amber, green, red and violet stay distinct under the common forms
// of colour blindness in combination with their shapes (area, dashed step,
// line, bars, step).
var seriesColors = map[string]string{
	seriesInFlight:    "#2563eb",
	seriesLimit:       "#d97706",
	seriesCompletions: "#059669",
	seriesThrottles:   "#dc2626",
	seriesDelay:       "#7c3aed",
}

// A svgChart is one strategy's timeline laid out for the template: panels
// stacked on one shared time axis.
type svgChart struct {
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
// under the line D.
type svgSeries struct {
	Key, Name string
	Shape     string // "line", "step" or "bars"
	D         string
	Area      string
}

// A svgLegend is one legend entry, positioned in the panel header.
type svgLegend struct {
	Key, Label string
	Shape      string
	X          float64
	Y          float64
	Empty      bool // the series has nothing to draw, e.g. no 429s at all
}

// buildChart lays out tl as a chart, or returns nil when there is nothing to
// draw. A sample describes the interval (T−resolution, T]: 429 bars and the
// limit and delay steps span it; in flight and the completions average are
// lines through the sample instants.
func buildChart(tl *measure.Timeline) *svgChart {
	if tl == nil || len(tl.Points) == 0 {
		return nil
	}
	pts := tl.Points
	res := tl.ResolutionSeconds
	if res < 0 || math.IsNaN(res) || math.IsInf(res, 0) {
		res = 0
	}
	xmax := math.Max(pts[len(pts)-1].T, res)
	for _, p := range pts {
		xmax = math.Max(xmax, p.T)
	}
	if !(xmax > 0) || math.IsInf(xmax, 0) {
		xmax = 1
	}
	xTicks, xStep := niceTicks(xmax, 8)
	x := func(t float64) float64 { return plotLeft + clamp(t/xmax, 0, 1)*(plotRight-plotLeft) }

	c := &svgChart{
		Width: chartWidth, Left: plotLeft, Right: plotRight, XTitleX: (plotLeft + plotRight) / 2,
		Seconds: formatFixed(xmax, decimalsFor(xStep)),
	}
	for _, t := range xTicks {
		if t <= xmax*(1+1e-9) {
			c.XTicks = append(c.XTicks, svgTick{Pos: round1(x(t)), Label: formatFixed(t, decimalsFor(xStep))})
		}
	}

	col := func(f func(measure.Point) float64) []float64 {
		v := make([]float64, len(pts))
		for i, p := range pts {
			v[i] = f(p)
		}
		return v
	}
	ts := col(func(p measure.Point) float64 { return p.T })
	inFlight := col(func(p measure.Point) float64 { return float64(p.InFlight) })
	limit := col(func(p measure.Point) float64 { return p.Limit })
	completions := col(func(p measure.Point) float64 { return p.CompletionsRate })
	// Completions arrive in bursts (a wave of calls ends together), so the
	// raw rate at a fine resolution is a comb of spikes; its trend, which is
	// what tells a healthy run from a slowing provider, shows in a rolling
	// average.
	window := smoothingWindow(res, xmax)
	completions = movingAverage(completions, window)
	completionsLabel := "completions per second"
	if window > 1 {
		completionsLabel += ", " + strconv.FormatFloat(math.Round(float64(window)*res*1000)/1000, 'f', -1, 64) + " s average"
	}
	throttles := col(func(p measure.Point) float64 { return p.ThrottlesRate })
	delay := col(func(p measure.Point) float64 { return p.DelaySeconds })

	y := 0.0
	addPanel := func(title, unit string, height float64, ymax float64, series func(yOf func(float64) float64, base float64) []svgSeries, legend []svgLegend) {
		p := svgPanel{Title: title, Unit: unit, TitleY: y + 20}
		p.Top = y + panelHeader
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
		c.Panels = append(c.Panels, p)
		y = p.Bottom + panelGap
	}

	// Concurrency: what the client holds against what it allows itself.
	hasLimit := maxOf(limit) > 0
	legend := []svgLegend{{Key: seriesInFlight, Label: "in flight", Shape: "area"}}
	if hasLimit {
		legend = append(legend, svgLegend{Key: seriesLimit, Label: "strategy's limit", Shape: "dash"})
	} else {
		legend = append(legend, svgLegend{Key: seriesLimit, Label: "no limit", Shape: "dash", Empty: true})
	}
	gates := gateBands(tl.Events, x)
	if gates != "" {
		legend = append(legend, svgLegend{Key: seriesGate, Label: "retry-after gate closed", Shape: "band"})
	}
	addPanel("Concurrency", "calls", 190, math.Max(maxOf(inFlight), maxOf(limit)), func(yOf func(float64) float64, base float64) []svgSeries {
		line, area := linePath(ts, inFlight, res, x, yOf, base)
		var s []svgSeries
		if gates != "" {
			// Bands first, so the series draw over them.
			s = append(s, svgSeries{Key: seriesGate, Name: "retry-after gate closed", Shape: "band",
				D: strings.ReplaceAll(strings.ReplaceAll(gates, "TOP", num(yOf(math.Inf(1)))), "BOTTOM", num(base))})
		}
		s = append(s, svgSeries{Key: seriesInFlight, Name: "in flight", Shape: "line", D: line, Area: area})
		if hasLimit {
			s = append(s, svgSeries{Key: seriesLimit, Name: "strategy's limit", Shape: "step", D: stepPath(ts, limit, res, x, yOf)})
		}
		return s
	}, legend)

	// Completions, on their own scale: a burst of rejections, often a
	// hundred times the completion rate, must not flatten the trend.
	addPanel("Completions", "per second", 130, maxOf(completions), func(yOf func(float64) float64, base float64) []svgSeries {
		line, _ := linePath(ts, completions, res, x, yOf, base)
		return []svgSeries{{Key: seriesCompletions, Name: completionsLabel, Shape: "line", D: line}}
	}, []svgLegend{{Key: seriesCompletions, Label: completionsLabel, Shape: "line"}})

	// Rejections: the client discovering the limit by hitting it.
	hasThrottles := maxOf(throttles) > 0
	throttleLabel := "429s per second"
	if !hasThrottles {
		throttleLabel = "no 429s"
	}
	height := 90.0
	if !hasThrottles {
		height = 24 // a strip saying so, not an empty plot
	}
	addPanel("Rate limited", "429s per second", height, maxOf(throttles), func(yOf func(float64) float64, base float64) []svgSeries {
		if !hasThrottles {
			return nil
		}
		return []svgSeries{{Key: seriesThrottles, Name: "429s per second", Shape: "bars", D: barsPath(ts, throttles, res, x, yOf, base)}}
	}, []svgLegend{{Key: seriesThrottles, Label: throttleLabel, Shape: "bar", Empty: !hasThrottles}})
	if !hasThrottles {
		p := &c.Panels[len(c.Panels)-1]
		p.YTicks = []svgTick{{Pos: p.Bottom, Label: "0"}}
		p.Note = "no request was rate limited"
		p.NoteY = round1((p.Top+p.Bottom)/2 + 4)
	}

	// Pacing delay, only for strategies that pace.
	if maxOf(delay) > 0 {
		addPanel("Pacing delay", "seconds", 80, maxOf(delay), func(yOf func(float64) float64, _ float64) []svgSeries {
			return []svgSeries{{Key: seriesDelay, Name: "delay between starts", Shape: "step", D: stepPath(ts, delay, res, x, yOf)}}
		}, []svgLegend{{Key: seriesDelay, Label: "delay between starts", Shape: "line"}})
	}

	last := c.Panels[len(c.Panels)-1]
	c.XLabelY = last.Bottom + 18
	c.XTitleY = last.Bottom + 38
	c.Height = int(math.Ceil(last.Bottom + axisFooter))
	return c
}

// gateBands draws each retry-after gate closure in events as a rectangle
// spanning the plot's height, with TOP and BOTTOM left for the panel to fill
// in; it returns "" when no gate closed.
func gateBands(events []measure.Event, x func(float64) float64) string {
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

// linePath draws ys against ts as a polyline, and the area under it down to
// base. A single sample is drawn across its interval, or across the whole
// axis when the interval is empty, so it is visible.
func linePath(ts, ys []float64, res float64, x, y func(float64) float64, base float64) (line, area string) {
	ts, ys = decimate(ts, ys)
	var b strings.Builder
	if len(ts) == 1 {
		x0, x1 := x(ts[0]-res), x(ts[0])
		if x1-x0 < 1 {
			x0, x1 = plotLeft, plotRight
		}
		b.WriteString("M" + pt(x0, y(ys[0])) + "H" + num(x1))
	} else {
		for i := range ts {
			if i == 0 {
				b.WriteByte('M')
			} else {
				b.WriteByte('L')
			}
			b.WriteString(pt(x(ts[i]), y(ys[i])))
		}
	}
	line = b.String()
	first := x(ts[0])
	if len(ts) == 1 {
		first = x(ts[0] - res)
		if x(ts[0])-first < 1 {
			first = plotLeft
		}
	}
	area = line + "V" + num(base) + "H" + num(first) + "Z"
	return line, area
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

// smoothingWindow is the number of samples the completions average spans:
// a second, but no more than a fifth of the run, and one sample (no
// smoothing) when the resolution is unknown. A whole second spans a whole
// number of bursts for any call time that divides it, so the average of a
// steady run is flat rather than rippled.
func smoothingWindow(res, span float64) int {
	if !(res > 0) {
		return 1
	}
	w := math.Min(1, span/5)
	return max(1, int(math.Round(w/res)))
}

// movingAverage returns the centred moving average of ys over k samples
// (an even k leans half a sample late); near the ends it averages the
// samples the window holds.
func movingAverage(ys []float64, k int) []float64 {
	if k <= 1 {
		return ys
	}
	prefix := make([]float64, len(ys)+1)
	for i, y := range ys {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			y = 0
		}
		prefix[i+1] = prefix[i] + y
	}
	out := make([]float64, len(ys))
	for i := range ys {
		lo, hi := max(0, i-k/2), min(len(ys), i-k/2+k)
		out[i] = (prefix[hi] - prefix[lo]) / float64(hi-lo)
	}
	return out
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
