package reports

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// Sweep chart geometry, in SVG user units: two plots side by side, wall
// time against 429s and wall time against attempts.
const (
	sweepPlotTop    = 40  // panel title above each plot
	sweepPlotHeight = 280 // each plot's height
	sweepPlotLeft   = 64  // room for the first plot's y tick labels
	sweepPlotWidth  = 386 // each plot's width
	sweepPlotGap    = 110 // from one plot's right edge to the next one's left: its y labels
	sweepFooter     = 50  // x tick labels and the axis title
	sweepPointR     = 4.5 // a point's radius
	sweepBestR      = 9.5 // the ring around the recommended point
	sweepCharW      = 6.4 // estimated width of one character of a point label
	sweepLabelH     = 12  // and its height
)

// A htmlSweep is the sweep section of report.html: every row as a point of
// wall time against 429s and against attempts, the rows of one sweep
// joined in sweep order, the recommended row ringed.
type htmlSweep struct {
	Chart *svgSweep
	// Best is tune's recommendation, nil when the report has none.
	Best *htmlSweepBest
	// Hollow says what a hollow point means, "" when no point is hollow.
	Hollow string
}

// A htmlSweepBest is the recommendation under the chart.
type htmlSweepBest struct {
	Name, Objective, Value, Constraint string
	Next, NextValue, Margin            string
	None                               bool // no row qualified
}

// A svgSweep is the chart: one panel per measure against wall time.
type svgSweep struct {
	Width, Height int
	Label         string
	PointR, BestR float64 // a point's radius, the ring's
	Panels        []svgSweepPanel
	Legend        []svgSweepLegend
}

// A svgSweepPanel is one plot: wall time (y) against a count (x).
type svgSweepPanel struct {
	Key, Title               string // "throttled" or "attempts"; "wall time against 429s"
	XTitle                   string
	Left, Right, Top, Bottom float64
	TitleY                   float64
	XTicks, YTicks           []svgTick
	XLabelY, XTitleX         float64
	XTitleY                  float64
	Lines                    []svgSweepLine
	Points                   []svgSweepPoint
	Best                     *svgSweepPoint // the recommended row's point, nil when none
	BestLabelX, BestLabelY   float64
}

// A svgSweepLine joins one sweep's points in sweep order.
type svgSweepLine struct {
	Strategy int
	D        string
}

// A svgSweepPoint is one row in one panel.
type svgSweepPoint struct {
	Strategy int    // the sweep it belongs to, 1-based: its colour
	Row      string // the row's name
	Label    string // its swept values ("n=20"), or its name when not swept
	X, Y     float64
	// Wall and Count are the plotted values as printed (the point's
	// tooltip and the tests' handle on it).
	Wall, Count string
	LabelX      float64 // where the label starts
	LabelY      float64 // its baseline
	Hollow      bool    // left out of the recommendation
	Best        bool
}

// A svgSweepLegend names one sweep's colour.
type svgSweepLegend struct {
	Strategy int
	Name     string
}

// sweepGroup is the rows of one sweep (or one row that is not swept), in
// report order.
type sweepGroup struct {
	name string
	rows []int
}

// newHTMLSweep builds the sweep section, or returns nil when the report has
// no sweep and no recommendation: a run of rows that were not swept has
// the comparison for that.
func newHTMLSweep(r Report) *htmlSweep {
	swept := slices.ContainsFunc(r.Results, func(res Result) bool { return len(res.Sweep) > 0 })
	if len(r.Results) == 0 || !swept && r.Tune == nil {
		return nil
	}
	groups := sweepGroups(r.Results)
	hollow := func(res Result) bool {
		if r.Tune != nil {
			_, out := r.Tune.Excluded[res.Name]
			return out
		}
		return res.Incomplete || res.Completed < res.Items
	}
	s := &htmlSweep{}
	if slices.ContainsFunc(r.Results, hollow) {
		s.Hollow = "Hollow points did not complete every item"
		if r.Tune != nil {
			s.Hollow = "Hollow points were left out of the recommendation: they did not complete every item"
			if r.Tune.Max429s >= 0 {
				s.Hollow += ", or had more than " + formatInt(r.Tune.Max429s) + " 429s"
			}
		}
		s.Hollow += "."
	}
	s.Best = newSweepBest(r.Tune)

	c := &svgSweep{Width: chartWidth, PointR: sweepPointR, BestR: sweepBestR}
	c.Label = "wall time against 429s and against attempts, one point per row"
	for k, g := range groups {
		c.Legend = append(c.Legend, svgSweepLegend{Strategy: k + 1, Name: g.name})
	}
	wallMax := 0.0
	for _, res := range r.Results {
		wallMax = math.Max(wallMax, finite(res.WallSeconds))
	}
	yTicks, yStep := niceTicks(wallMax, 6)
	yTop := yTicks[len(yTicks)-1]
	for i, m := range []struct {
		key, title, xtitle string
		value              func(Result) float64
	}{
		{"throttled", "Wall time against 429s", "429s (rate-limited attempts)", func(res Result) float64 { return float64(res.Throttled) }},
		{"attempts", "Wall time against attempts", "HTTP attempts", func(res Result) float64 { return float64(res.Attempts) }},
	} {
		left := float64(sweepPlotLeft + i*(sweepPlotWidth+sweepPlotGap))
		p := svgSweepPanel{Key: m.key, Title: m.title, XTitle: m.xtitle, Left: left, Right: left + sweepPlotWidth,
			TitleY: 20, Top: sweepPlotTop, Bottom: sweepPlotTop + sweepPlotHeight}
		p.XLabelY, p.XTitleY, p.XTitleX = p.Bottom+18, p.Bottom+40, round1((p.Left+p.Right)/2)
		xmin, xmax := math.Inf(1), 0.0
		for _, res := range r.Results {
			xmin = math.Min(xmin, finite(m.value(res)))
			xmax = math.Max(xmax, finite(m.value(res)))
		}
		xTicks, xStep := sweepTicks(xmin, xmax)
		xLo, xHi := xTicks[0], xTicks[len(xTicks)-1]
		// A point at the axis's end must not sit on the plot's edge.
		pad := 12.0
		xOf := func(v float64) float64 {
			return round1(p.Left + pad + clamp((v-xLo)/(xHi-xLo), 0, 1)*(p.Right-p.Left-2*pad))
		}
		yOf := func(v float64) float64 {
			return round1(p.Bottom - pad - clamp(v/yTop, 0, 1)*(p.Bottom-p.Top-2*pad))
		}
		for _, v := range xTicks {
			p.XTicks = append(p.XTicks, svgTick{Pos: xOf(v), Label: formatFixed(v, decimalsFor(xStep))})
		}
		for _, v := range yTicks {
			p.YTicks = append(p.YTicks, svgTick{Pos: yOf(v), Label: formatFixed(v, decimalsFor(yStep)) + " s"})
		}
		for k, g := range groups {
			var d strings.Builder
			for j, ri := range g.rows {
				res := r.Results[ri]
				pt := svgSweepPoint{Strategy: k + 1, Row: res.Name, Label: sweepLabel(res),
					X: xOf(finite(m.value(res))), Y: yOf(finite(res.WallSeconds)),
					Wall: formatFixed(res.WallSeconds, 2) + " s", Count: formatInt(int64(m.value(res))),
					Hollow: hollow(res), Best: r.Tune != nil && res.Name == r.Tune.Best}
				if j == 0 {
					d.WriteString("M" + pt2(pt.X, pt.Y))
				} else {
					d.WriteString("L" + pt2(pt.X, pt.Y))
				}
				p.Points = append(p.Points, pt)
			}
			if len(g.rows) > 1 {
				p.Lines = append(p.Lines, svgSweepLine{Strategy: k + 1, D: d.String()})
			}
		}
		placeSweepLabels(&p)
		c.Panels = append(c.Panels, p)
	}
	c.Height = int(sweepPlotTop + sweepPlotHeight + sweepFooter)
	s.Chart = c
	return s
}

// newSweepBest formats tune's recommendation, or returns nil for none.
func newSweepBest(t *Tune) *htmlSweepBest {
	if t == nil {
		return nil
	}
	obj := t.Objective
	if obj == "" {
		obj = "wall"
	}
	b := &htmlSweepBest{Name: t.Best, Objective: objectiveName(obj), Value: objectiveValue(obj, t.Value), None: t.Best == ""}
	b.Constraint = "every item completed, any number of 429s"
	if t.Max429s >= 0 {
		b.Constraint = "every item completed, at most " + formatInt(t.Max429s) + " 429s"
	}
	if t.Next != "" {
		b.Next, b.NextValue, b.Margin = t.Next, objectiveValue(obj, t.NextValue), objectiveValue(obj, t.Margin)
	}
	return b
}

// sweepTicks returns the ticks of a count axis holding lo..hi, and their
// step: from 0 (niceTicks), unless every value is above half the largest
// (attempts, which are never fewer than the items), where an axis from 0
// would crowd the points into its last part; then from the multiple of the
// step below lo.
func sweepTicks(lo, hi float64) ([]float64, float64) {
	if !(lo > hi/2) || !(hi > 0) {
		return niceTicks(hi, 6)
	}
	_, step := niceTicks(hi-lo, 5)
	start := math.Floor(lo/step) * step
	var ticks []float64
	for v := start; v <= hi+step*(1-1e-9); v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	if len(ticks) < 2 {
		ticks = append(ticks, ticks[0]+step)
	}
	return ticks, step
}

// sweepGroups groups the rows of a report by the sweep they came from:
// rows of one kind that sweep the same keys and agree on every other
// parameter. A row that is not swept is a group of its own.
func sweepGroups(results []Result) []sweepGroup {
	var groups []sweepGroup
	index := map[string]int{}
	for i, res := range results {
		key := "row\x00" + res.Name
		if len(res.Sweep) > 0 {
			keys := make([]string, len(res.Sweep))
			for j, s := range res.Sweep {
				keys[j] = s.Key
			}
			rest := map[string]any{}
			for k, v := range res.Params {
				if !slices.Contains(keys, k) {
					rest[k] = v
				}
			}
			key = "sweep\x00" + res.Kind + "\x00" + strings.Join(keys, ",") + "\x00" + formatParams(rest)
		}
		if g, ok := index[key]; ok {
			groups[g].rows = append(groups[g].rows, i)
			continue
		}
		index[key] = len(groups)
		groups = append(groups, sweepGroup{name: sweepGroupName(res), rows: []int{i}})
	}
	return groups
}

// sweepGroupName names a sweep after its first row: the row's name without
// its swept values ("semaphore n=5" is "semaphore, by n"), or, for a name
// that holds them otherwise ("aimd(0.5)"), its kind. A row that is not
// swept is named as it is.
func sweepGroupName(res Result) string {
	if len(res.Sweep) == 0 {
		return res.Name
	}
	name := res.Name
	keys := make([]string, len(res.Sweep))
	for i, s := range res.Sweep {
		keys[i] = s.Key
		name = strings.Replace(name, " "+s.Key+"="+s.Value, "", 1)
	}
	if name == res.Name || strings.TrimSpace(name) == "" {
		name = res.Kind
	}
	return strings.TrimSpace(name) + ", by " + strings.Join(keys, " and ")
}

// sweepLabel is a point's label: its swept values, "n=20" or "n=20,
// max_retries=2", or the row's name when it is not swept.
func sweepLabel(res Result) string {
	if len(res.Sweep) == 0 {
		return res.Name
	}
	parts := make([]string, len(res.Sweep))
	for i, s := range res.Sweep {
		parts[i] = s.Key + "=" + s.Value
	}
	return strings.Join(parts, ", ")
}

// placeSweepLabels puts each point's label beside it: at the first of
// ten spots around the point (right, left, above, below, the diagonals, a
// line further up or down) that overlaps no point, no label placed before
// it and no sweep line, else the first that overlaps no point or label,
// else to the right anyway (it may overlap, but it is there, and in the
// point's tooltip). The recommended point goes first, and its
// "recommended" is placed the same way, below it by preference.
func placeSweepLabels(p *svgSweepPanel) {
	type box struct{ x0, y0, x1, y1 float64 }
	overlaps := func(a, b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }
	var taken []box
	for _, pt := range p.Points {
		r := sweepPointR + 2.5 // and a little air
		taken = append(taken, box{pt.X - r, pt.Y - r, pt.X + r, pt.Y + r})
	}
	// The lines, as the points every 3 units along them.
	var linePts [][2]float64
	for _, l := range p.Lines {
		var prev [2]float64
		for i, f := range strings.FieldsFunc(l.D, func(r rune) bool { return r == 'M' || r == 'L' }) {
			xs, ys, _ := strings.Cut(f, ",")
			x, _ := strconv.ParseFloat(xs, 64)
			y, _ := strconv.ParseFloat(ys, 64)
			if i > 0 {
				n := int(math.Hypot(x-prev[0], y-prev[1])/3) + 1
				for k := 0; k <= n; k++ {
					f := float64(k) / float64(n)
					linePts = append(linePts, [2]float64{prev[0] + f*(x-prev[0]), prev[1] + f*(y-prev[1])})
				}
			}
			prev = [2]float64{x, y}
		}
	}
	right := math.Min(p.Right+sweepPlotGap-60, chartWidth-4) // short of the next plot's tick labels
	free := func(b box) bool {
		if b.x0 < p.Left-4 || b.x1 > right || b.y0 < p.Top-8 || b.y1 > p.Bottom {
			return false
		}
		for _, t := range taken {
			if overlaps(b, t) {
				return false
			}
		}
		return true
	}
	clean := func(b box) bool {
		for _, q := range linePts {
			if q[0] > b.x0 && q[0] < b.x1 && q[1] > b.y0 && q[1] < b.y1 {
				return false
			}
		}
		return true
	}
	type spot struct {
		x, y float64 // where the text starts (text-anchor start), its baseline
		b    box
	}
	// Centred above or below a point, a label is kept inside the plot.
	centre := func(x, w float64) float64 { return math.Max(p.Left+2, math.Min(x-w/2, p.Right-w)) }
	candidates := func(x, y, w, gap float64) []spot {
		h := float64(sweepLabelH)
		at := func(tx, baseline float64) spot {
			return spot{tx, baseline, box{tx, baseline - h + 2, tx + w, baseline + 2}}
		}
		c := centre(x, w)
		return []spot{
			at(x+gap, y+4),           // right
			at(x-gap-w, y+4),         // left
			at(c, y-gap),             // above
			at(c, y+gap+h-2),         // below
			at(x+gap-2, y-gap+2),     // above right
			at(x+gap-2, y+gap+h-4),   // below right
			at(x-gap+2-w, y-gap+2),   // above left
			at(x-gap+2-w, y+gap+h-4), // below left
			at(c, y-gap-h),           // a line higher
			at(c, y+gap+2*h-2),       // a line lower
		}
	}
	pick := func(spots []spot) spot {
		for _, s := range spots {
			if free(s.b) && clean(s.b) {
				return s
			}
		}
		for _, s := range spots {
			if free(s.b) {
				return s
			}
		}
		return spots[0]
	}
	order := make([]int, 0, len(p.Points))
	for i, pt := range p.Points {
		if pt.Best {
			order = append([]int{i}, order...)
		} else {
			order = append(order, i)
		}
	}
	for _, i := range order {
		pt := &p.Points[i]
		w := sweepCharW * float64(len([]rune(pt.Label)))
		gap := sweepPointR + 4
		if pt.Best {
			gap = sweepBestR + 3
		}
		s := pick(candidates(pt.X, pt.Y, w, gap))
		pt.LabelX, pt.LabelY = round1(s.x), round1(s.y)
		taken = append(taken, s.b)
		if pt.Best {
			best := *pt
			p.Best = &best
			around := candidates(pt.X, pt.Y, sweepCharW*float64(len("recommended")), sweepBestR+3)
			r := pick(append([]spot{around[3], around[2], around[1], around[0]}, around[4:]...))
			p.BestLabelX, p.BestLabelY = round1(r.x), round1(r.y)
			taken = append(taken, r.b)
		}
	}
}

// pt2 formats a point of a path.
func pt2(x, y float64) string { return num(x) + "," + num(y) }

// objectiveName says what tune minimised.
func objectiveName(obj string) string {
	switch obj {
	case "wall":
		return "wall time"
	case "attempts":
		return "attempts"
	case "cost":
		return "tokens billed"
	}
	return obj
}

// objectiveValue formats a value of tune's objective with its unit.
func objectiveValue(obj string, v float64) string {
	switch obj {
	case "wall":
		return formatFixed(v, 2) + " s"
	case "cost":
		return formatFixed(v, 0) + " tokens"
	}
	return formatFixed(v, 0)
}
