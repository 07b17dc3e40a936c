package reports

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
)

// sweepReport is loadgen tune on 20-concurrent.yaml's server and items
// with semaphore n swept over 5..50 and adaptive beside it, as a virtual
// run measured it, recommending n=20 with at most 0 429s.
func sweepReport() Report {
	r := Report{Scenario: "sweep", Target: "embedded mock"}
	row := func(name string, n int, completed int, attempts, throttled int64, wall float64) {
		res := Result{Name: name, Kind: "semaphore", Params: map[string]any{"n": n, "max_retries": 2},
			Summary: measure.Summary{Items: 200, Completed: completed, Failed: 200 - completed, Attempts: attempts, Throttled: throttled, WallSeconds: wall}}
		if n > 0 {
			res.Sweep = []Swept{{Key: "n", Value: strconv.Itoa(n), Number: float64(n)}}
		} else {
			res.Kind, res.Params = "adaptive", map[string]any{"max_retries": 10, "requeue": true}
		}
		r.Results = append(r.Results, res)
	}
	row("semaphore n=5", 5, 200, 200, 0, 20)
	row("semaphore n=10", 10, 200, 200, 0, 10)
	row("semaphore n=15", 15, 200, 200, 0, 7)
	row("semaphore n=20", 20, 200, 200, 0, 5)
	row("semaphore n=25", 25, 200, 225, 25, 5.5)
	row("semaphore n=30", 30, 200, 250, 50, 5.5)
	row("semaphore n=35", 35, 200, 275, 75, 5.5)
	row("semaphore n=40", 40, 195, 295, 100, 5.5)
	row("semaphore n=45", 45, 187, 307, 120, 5.5)
	row("semaphore n=50", 50, 189, 329, 140, 5.5)
	row("adaptive", 0, 200, 203, 3, 6.1)
	r.Tune = &Tune{Objective: "wall", Max429s: 0, Best: "semaphore n=20", Value: 5, Next: "semaphore n=15", NextValue: 7, Margin: 2,
		Excluded: map[string]string{"adaptive": "3 429s, more than 0", "semaphore n=25": "25 429s, more than 0",
			"semaphore n=30": "50 429s, more than 0", "semaphore n=35": "75 429s, more than 0",
			"semaphore n=40": "5 of 200 items did not complete", "semaphore n=45": "13 of 200 items did not complete",
			"semaphore n=50": "11 of 200 items did not complete"}}
	return r
}

// realTuneReport is loadgen tune --max-429s 0 on the same sweep in real
// time (docs/scenarios.md, Sweeps and loadgen tune): the rows above 20 lose items and
// their points crowd along 5.5 s.
func realTuneReport() Report {
	r := Report{Scenario: "sweep", Target: "embedded mock"}
	excluded := map[string]string{}
	for _, v := range [][5]float64{
		{5, 200, 200, 0, 20.094}, {10, 200, 200, 0, 10.035}, {15, 200, 200, 0, 7.040}, {20, 200, 200, 0, 5.056},
		{25, 190, 225, 35, 5.513}, {30, 198, 250, 52, 5.521}, {35, 196, 275, 79, 5.539}, {40, 173, 289, 116, 5.671},
		{45, 174, 304, 130, 5.685}, {50, 172, 321, 149, 6.587},
	} {
		n := strconv.Itoa(int(v[0]))
		res := Result{Name: "semaphore n=" + n, Kind: "semaphore", Params: map[string]any{"n": int(v[0])},
			Sweep:   []Swept{{Key: "n", Value: n, Number: v[0]}},
			Summary: measure.Summary{Items: 200, Completed: int(v[1]), Attempts: int64(v[2]), Throttled: int64(v[3]), WallSeconds: v[4]}}
		if res.Completed < res.Items {
			excluded[res.Name] = "items did not complete"
		}
		r.Results = append(r.Results, res)
	}
	r.Tune = &Tune{Objective: "wall", Max429s: 0, Best: "semaphore n=20", Value: 5.056, Next: "semaphore n=15", NextValue: 7.04, Margin: 1.984, Excluded: excluded}
	return r
}

// TestSweepChartData checks the sweep chart as laid out for the template:
// per panel one point per row, at the row's wall (y) and 429s or attempts
// (x), in the right order on both axes; each sweep joined in sweep order;
// every point labelled with its setting, no two labels on top of each
// other; the recommended row ringed and labelled, the rows tune left out
// hollow.
func TestSweepChartData(t *testing.T) {
	for _, tt := range []struct {
		name   string
		r      Report
		legend []string
	}{
		{"virtual, with adaptive", sweepReport(), []string{"semaphore, by n", "adaptive"}},
		{"real time", realTuneReport(), []string{"semaphore, by n"}},
	} {
		t.Run(tt.name, func(t *testing.T) { checkSweepChart(t, tt.r, tt.legend) })
	}
}

func checkSweepChart(t *testing.T, r Report, legend []string) {
	t.Helper()
	s := newHTMLSweep(r)
	if s == nil || s.Chart == nil {
		t.Fatal("newHTMLSweep = nil for a report with a sweep")
	}
	if got, want := legendNames(s.Chart.Legend), legend; !slices.Equal(got, want) {
		t.Errorf("legend = %q, want %q", got, want)
	}
	for _, p := range s.Chart.Panels {
		count := map[string]func(Result) float64{
			"throttled": func(r Result) float64 { return float64(r.Throttled) },
			"attempts":  func(r Result) float64 { return float64(r.Attempts) },
		}[p.Key]
		if count == nil {
			t.Fatalf("panel %q: want throttled or attempts", p.Key)
		}
		if len(p.Points) != len(r.Results) {
			t.Fatalf("%s: %d points, want %d (one per row)", p.Key, len(p.Points), len(r.Results))
		}
		byRow := map[string]svgSweepPoint{}
		for _, pt := range p.Points {
			byRow[pt.Row] = pt
		}
		for i, a := range r.Results {
			pa := byRow[a.Name]
			want := strings.TrimPrefix(a.Name, "semaphore ")
			if pa.Label != want {
				t.Errorf("%s: %s labelled %q, want %q", p.Key, a.Name, pa.Label, want)
			}
			if pa.X < p.Left || pa.X > p.Right || pa.Y < p.Top || pa.Y > p.Bottom {
				t.Errorf("%s: %s at (%v, %v), outside the plot", p.Key, a.Name, pa.X, pa.Y)
			}
			if _, out := r.Tune.Excluded[a.Name]; pa.Hollow != out {
				t.Errorf("%s: %s hollow = %v, want %v (left out of the recommendation: %v)", p.Key, a.Name, pa.Hollow, out, out)
			}
			if pa.Best != (a.Name == "semaphore n=20") {
				t.Errorf("%s: %s best = %v", p.Key, a.Name, pa.Best)
			}
			for _, b := range r.Results[i+1:] {
				pb := byRow[b.Name]
				if !sameOrder(count(a), count(b), pa.X, pb.X, 0) {
					t.Errorf("%s: %s (%v) and %s (%v) drawn at x %v and %v: out of order", p.Key, a.Name, count(a), b.Name, count(b), pa.X, pb.X)
				}
				if !sameOrder(a.WallSeconds, b.WallSeconds, pb.Y, pa.Y, 0.01) { // y grows downward
					t.Errorf("%s: %s (%v s) and %s (%v s) drawn at y %v and %v: out of order", p.Key, a.Name, a.WallSeconds, b.Name, b.WallSeconds, pa.Y, pb.Y)
				}
			}
		}
		// The sweep's line runs through its ten points in order; a row
		// alone (adaptive) has none.
		if len(p.Lines) != 1 || p.Lines[0].Strategy != 1 {
			t.Fatalf("%s: lines %+v, want one, the sweep's", p.Key, p.Lines)
		}
		var want []string
		for _, pt := range p.Points[:10] {
			want = append(want, pt2(pt.X, pt.Y))
		}
		if got := strings.FieldsFunc(p.Lines[0].D, func(r rune) bool { return r == 'M' || r == 'L' }); !slices.Equal(got, want) {
			t.Errorf("%s: line %q, want through %q", p.Key, p.Lines[0].D, want)
		}
		if p.Best == nil || p.Best.Row != "semaphore n=20" || p.Best.X != byRow["semaphore n=20"].X || p.Best.Y != byRow["semaphore n=20"].Y {
			t.Errorf("%s: best marker %+v, want on semaphore n=20's point", p.Key, p.Best)
		}
		// No label over another, nor over "recommended".
		type box struct{ x0, y0, x1, y1 float64 }
		var boxes []box
		var names []string
		for _, pt := range p.Points {
			w := sweepCharW * float64(len([]rune(pt.Label)))
			x0 := pt.LabelX
			boxes = append(boxes, box{x0, pt.LabelY - sweepLabelH + 2, x0 + w, pt.LabelY + 2})
			names = append(names, pt.Label)
		}
		boxes = append(boxes, box{p.BestLabelX, p.BestLabelY - sweepLabelH + 2, p.BestLabelX + sweepCharW*11, p.BestLabelY + 2})
		names = append(names, "recommended")
		for i := range boxes {
			for j := i + 1; j < len(boxes); j++ {
				a, b := boxes[i], boxes[j]
				if a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 {
					t.Errorf("%s: labels %q and %q overlap: %v, %v", p.Key, names[i], names[j], a, b)
				}
			}
		}
	}
	if b := s.Best; b == nil || b.Name != "semaphore n=20" || b.Value != objectiveValue("wall", r.Tune.Value) || b.Next != "semaphore n=15" ||
		b.Margin != objectiveValue("wall", r.Tune.Margin) || b.Constraint != "every item completed, at most 0 429s" {
		t.Errorf("recommendation = %+v", s.Best)
	}
}

// sameOrder reports whether the values a and b are drawn at positions
// pa and pb in their order: equal values at one position, different ones
// in their order, except that values closer than tol (the drawing's
// resolution) may share a position.
func sameOrder(a, b, pa, pb, tol float64) bool {
	if abs := math.Abs(a - b); abs <= tol {
		return abs > 0 || pa == pb
	}
	return cmp(a, b) == cmp(pa, pb)
}

func cmp(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func legendNames(l []svgSweepLegend) []string {
	var out []string
	for _, e := range l {
		out = append(out, e.Name)
	}
	return out
}

// TestSweepSection: report.html has a sweep section exactly when a row was
// swept or tune recommended; without tune nothing is ringed and a row
// that lost items is hollow; a tune that found no row says so.
func TestSweepSection(t *testing.T) {
	noTune := sweepReport()
	noTune.Tune = nil
	none := sweepReport()
	none.Tune = &Tune{Objective: "wall", Max429s: 0, Excluded: map[string]string{"semaphore n=5": "x"}}
	plainTune := guideReport()
	plainTune.Tune = &Tune{Objective: "attempts", Max429s: -1, Best: "semaphore-20", Value: 200}
	for _, tt := range []struct {
		name    string
		r       Report
		section bool
		best    int
		hollow  int
		text    string
	}{
		{"tune", sweepReport(), true, 2, 14, "Recommended by wall time, every item completed, at most 0 429s: semaphore n=20, 5.00 s, 2.00 s ahead of semaphore n=15 (7.00 s)."},
		{"sweep without tune", noTune, true, 0, 6, "Hollow points did not complete every item."},
		{"tune found nothing", none, true, 0, 2, "No row completed every item within the constraint (every item completed, at most 0 429s): nothing to recommend."},
		{"tune over rows not swept", plainTune, true, 2, 0, "Recommended by attempts, every item completed, any number of 429s: semaphore-20, 200; no other row qualified."},
		{"no sweep, no tune", guideReport(), false, 0, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := HTML(&buf, tt.r); err != nil {
				t.Fatal(err)
			}
			doc := parseDOM(t, buf.Bytes(), true)
			sections := doc.find(func(n *node) bool { return n.name == "section" && n.attrs["id"] == "sweep" })
			if (len(sections) == 1) != tt.section {
				t.Fatalf("%d sweep sections, want one: %v", len(sections), tt.section)
			}
			if !tt.section {
				return
			}
			sec := sections[0]
			if n := len(sec.find(byClass("circle", "sweep-best"))); n != tt.best {
				t.Errorf("%d rings, want %d (one per panel when a row is recommended)", n, tt.best)
			}
			if n := len(sec.find(byClass("circle", "hollow"))); n != tt.hollow {
				t.Errorf("%d hollow points, want %d", n, tt.hollow)
			}
			if txt := strings.Join(strings.Fields(sec.text.String()), " "); !strings.Contains(txt, tt.text) {
				t.Errorf("section text lacks %q:\n%s", tt.text, txt)
			}
		})
	}
}

// TestSweepInChromium loads a tune report in a real browser and checks the
// chart it built — two panels, a point and a label per row in each, the
// ring on the recommended row's point — and, in a screenshot of the sweep
// alone, that each sweep's colour is painted.
func TestSweepInChromium(t *testing.T) {
	bin := chromium(t)
	r := sweepReport()
	page := writeReport(t, r)
	doc := parseDOM(t, runChromium(t, bin, page, "--dump-dom"), false)
	charts := doc.find(byClass("svg", "sweep-chart"))
	if len(charts) != 1 {
		t.Fatalf("%d sweep charts, want 1", len(charts))
	}
	panels := charts[0].find(byClass("g", "sweep-panel"))
	if len(panels) != 2 {
		t.Fatalf("%d panels, want 2", len(panels))
	}
	var wantLabels []string
	for _, res := range r.Results {
		wantLabels = append(wantLabels, strings.TrimPrefix(res.Name, "semaphore "))
	}
	slices.Sort(wantLabels)
	for _, p := range panels {
		var labels []string
		for _, l := range p.find(byClass("text", "sweep-label")) {
			labels = append(labels, l.text.String())
		}
		slices.Sort(labels)
		if !slices.Equal(labels, wantLabels) {
			t.Errorf("%s: labels %q, want %q", p.attrs["data-metric"], labels, wantLabels)
		}
		points := p.find(byClass("circle", "sweep-point"))
		if len(points) != len(r.Results) {
			t.Errorf("%s: %d points, want %d", p.attrs["data-metric"], len(points), len(r.Results))
		}
		rings := p.find(byClass("circle", "sweep-best"))
		if len(rings) != 1 {
			t.Fatalf("%s: %d rings, want 1", p.attrs["data-metric"], len(rings))
		}
		for _, pt := range points {
			if pt.attrs["data-row"] == "semaphore n=20" && (pt.attrs["cx"] != rings[0].attrs["cx"] || pt.attrs["cy"] != rings[0].attrs["cy"]) {
				t.Errorf("%s: ring at (%s, %s), semaphore n=20 at (%s, %s)", p.attrs["data-metric"], rings[0].attrs["cx"], rings[0].attrs["cy"], pt.attrs["cx"], pt.attrs["cy"])
			}
		}
		if n := len(p.find(byClass("text", "sweep-best-label"))); n != 1 {
			t.Errorf("%s: %d \"recommended\" labels, want 1", p.attrs["data-metric"], n)
		}
	}

	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	img := screenshotOnly(t, bin, buf.String(), "main > :not(#sweep), #sweep > :not(#sweep-chart)", "1200,700")
	counts := countColors(img, map[string]string{"sweep": strategyColor(1), "adaptive": strategyColor(2)})
	// Ten points and their line in two panels; adaptive's one point in
	// each (a hollow point is a ring, about 25 pixels).
	for key, min := range map[string]int{"sweep": 600, "adaptive": 30} {
		if counts[key] < min {
			t.Errorf("%s: %d pixels painted, want at least %d", key, counts[key], min)
		}
	}
	t.Logf("painted pixels: %v", counts)
}

// TestMarkdownRecommendation: report.md says what tune recommended, or
// that nothing qualified; a report without tune says nothing of it.
func TestMarkdownRecommendation(t *testing.T) {
	none := sweepReport()
	none.Tune = &Tune{Objective: "attempts", Max429s: -1}
	for _, tt := range []struct {
		name string
		r    Report
		want string
	}{
		{"tune", sweepReport(), "**Recommended** by wall time, every item completed, at most 0 429s: **semaphore n=20**, 5.00 s, 2.00 s ahead of semaphore n=15 (7.00 s).\n"},
		{"nothing qualified", none, "**Recommended:** none: no row completed every item within the constraint (every item completed, any number of 429s).\n"},
		{"no tune", guideReport(), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Markdown(&buf, tt.r); err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if strings.Contains(buf.String(), "Recommended") {
					t.Errorf("report.md without tune recommends:\n%s", buf.String())
				}
				return
			}
			if !strings.Contains(buf.String(), tt.want) {
				t.Errorf("report.md lacks %q:\n%s", tt.want, buf.String())
			}
		})
	}
}
