package reports

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
)

// checkCompare checks the comparison section of doc against r: absent for
// fewer than two strategies; otherwise a legend entry per strategy, on one
// shared time axis an in-flight and a completions series for every
// strategy with a timeline (and none for the others), each ending where
// its run ends on the axis of the longest run, and a bar per strategy in
// each of wall time, attempts and 429s, to scale.
func checkCompare(t *testing.T, doc *node, r Report) {
	t.Helper()
	sections := doc.find(func(n *node) bool { return n.name == "section" && n.attrs["id"] == "compare" })
	if len(r.Results) < 2 {
		if len(sections) != 0 {
			t.Errorf("a comparison section for %d strategies, want none", len(r.Results))
		}
		return
	}
	if len(sections) != 1 {
		t.Fatalf("%d comparison sections, want 1", len(sections))
	}
	sec := sections[0]
	legend := sec.find(func(n *node) bool { return n.name == "li" && n.attrs["data-strategy"] != "" })
	if len(legend) != len(r.Results) {
		t.Errorf("legend has %d entries, want one per strategy (%d)", len(legend), len(r.Results))
	}
	for i, li := range legend {
		if i < len(r.Results) && (!strings.Contains(li.text.String(), r.Results[i].Name) || !li.hasClass("k-"+strconv.Itoa(i+1))) {
			t.Errorf("legend entry %d = %q (class %q), want %q in colour k-%d", i, li.text.String(), li.attrs["class"], r.Results[i].Name, i+1)
		}
	}

	// The shared time axis spans the longest run.
	xmax := 0.0
	for _, res := range r.Results {
		if d := newTimelineData(res.Timeline); d != nil {
			xmax = math.Max(xmax, d.Span)
		}
	}
	charts := sec.find(byClass("svg", "compare-chart"))
	if xmax == 0 {
		if len(charts) != 0 {
			t.Errorf("an overlay chart with no timeline to draw")
		}
	} else if len(charts) != 1 {
		t.Errorf("%d overlay charts, want 1", len(charts))
	} else {
		b := newChartBuilder(xmax)
		paths := charts[0].find(byClass("path", "series"))
		for i, res := range r.Results {
			k := strconv.Itoa(i + 1)
			d := newTimelineData(res.Timeline)
			for _, key := range []string{seriesInFlight, seriesCompletions} {
				var got []string
				for _, p := range paths {
					if p.attrs["data-strategy"] == k && p.attrs["data-series"] == key {
						got = append(got, p.attrs["d"])
						if !p.hasClass("k-" + k) {
							t.Errorf("%s: %s series has class %q, want its colour k-%s", res.Name, key, p.attrs["class"], k)
						}
					}
				}
				if d == nil {
					if len(got) != 0 {
						t.Errorf("%s has no timeline, but %d %s series are drawn for it", res.Name, len(got), key)
					}
					continue
				}
				if len(got) != 1 || !strings.HasPrefix(got[0], "M") || len(got[0]) < 8 {
					t.Errorf("%s: %s series = %q, want one drawn path", res.Name, key, got)
					continue
				}
				if key == seriesInFlight && len(d.T) > 1 {
					// A step path ends with H at its last sample's x.
					end := got[0][strings.LastIndex(got[0], "H")+1:]
					if want := num(b.x(d.T[len(d.T)-1])); end != want {
						t.Errorf("%s: in flight ends at x=%s, want %s (%.3f s on a %.3f s axis)", res.Name, end, want, d.T[len(d.T)-1], xmax)
					}
				}
			}
		}
	}

	// Bars: one per strategy and metric, the largest value the longest.
	values := map[string]func(Result) float64{
		"wall":      func(r Result) float64 { return r.WallSeconds },
		"attempts":  func(r Result) float64 { return float64(r.Attempts) },
		"throttled": func(r Result) float64 { return float64(r.Throttled) },
	}
	bars := sec.find(byClass("rect", "bar"))
	if len(bars) != len(values)*len(r.Results) {
		t.Errorf("%d bars, want %d (3 per strategy)", len(bars), len(values)*len(r.Results))
	}
	for metric, value := range values {
		top := 0.0
		for _, res := range r.Results {
			top = math.Max(top, value(res))
		}
		widest := 0.0
		for i, res := range r.Results {
			var w []float64
			for _, b := range bars {
				if b.attrs["data-metric"] == metric && b.attrs["data-strategy"] == strconv.Itoa(i+1) {
					f, err := strconv.ParseFloat(b.attrs["width"], 64)
					if err != nil {
						t.Errorf("%s %s bar: width %q", res.Name, metric, b.attrs["width"])
					}
					w = append(w, f)
				}
			}
			if len(w) != 1 {
				t.Errorf("%s: %d %s bars, want 1", res.Name, len(w), metric)
				continue
			}
			if (w[0] > 0) != (value(res) > 0) {
				t.Errorf("%s: %s bar %v wide for a value of %v", res.Name, metric, w[0], value(res))
			}
			if value(res) == top {
				widest = w[0]
			}
		}
		if top > 0 && widest < 100 {
			t.Errorf("%s: the largest value's bar is %v wide, want the column's width", metric, widest)
		}
	}
}

// TestHTMLCompare renders reports of one to many strategies and checks the
// comparison section.
func TestHTMLCompare(t *testing.T) {
	many := Report{Scenario: "many"}
	for i := range 12 { // past the palette: colours repeat, dashed
		many.Results = append(many.Results, Result{Name: "s" + strconv.Itoa(i), Kind: "semaphore",
			Summary: measure.Summary{Attempts: int64(10 * i), WallSeconds: float64(i), Timeline: sampled(0.1, 10+i, func(float64) measure.Point {
				return measure.Point{InFlight: i, CompletionsRate: float64(i)}
			})}})
	}
	one := guideReport()
	one.Results = one.Results[2:3]
	for _, tt := range []struct {
		name string
		r    Report
	}{{"guide", guideReport()}, {"edge", edgeReport()}, {"one", one}, {"many", many}} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := HTML(&buf, tt.r); err != nil {
				t.Fatal(err)
			}
			doc := parseDOM(t, buf.Bytes(), true)
			checkCompare(t, doc, tt.r)
			checkSelfContained(t, doc)
		})
	}
	css := string(seriesCSS(12))
	for _, want := range []string{".k-1{--c:#4e79a7}", ".k-11{--c:#4e79a7}", ".series.k-11{stroke-dasharray:6 3}"} {
		if !strings.Contains(css, want) {
			t.Errorf("strategy CSS lacks %q", want)
		}
	}
}
