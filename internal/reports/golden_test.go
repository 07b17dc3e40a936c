package reports

import (
	"bytes"
	"flag"
	"github.com/ratelab/ratelab/measure"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites the file under
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reports/ -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test ./reports/ -update after checking the diff)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func TestRenderersGolden(t *testing.T) {
	reports := []struct {
		name   string
		report Report
	}{
		{"guide", guideReport()},
		{"edge", edgeReport()},
		{"empty", Report{Scenario: "nothing", Results: []Result{}}},
		{"open", openReport()},
	}
	renderers := []struct {
		ext    string
		render Renderer
	}{
		{"table.txt", Table},
		{"json", JSON},
		{"csv", CSV},
		{"md", Markdown},
	}
	for _, rep := range reports {
		for _, r := range renderers {
			name := rep.name + "." + r.ext
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := r.render(&buf, rep.report); err != nil {
					t.Fatalf("render: %v", err)
				}
				golden(t, name, buf.Bytes())
			})
		}
	}
}

func TestCompareGolden(t *testing.T) {
	old := guideReport()
	tests := []struct {
		name      string
		edit      func(*Report)
		threshold float64
		regressed bool
	}{
		{"compare-same", func(*Report) {}, 0.10, false},
		{"compare-within-threshold", func(r *Report) {
			r.Results[2].WallSeconds = 5.4 // +8 %
			r.Results[0].Attempts = 500    // better
		}, 0.10, false},
		{"compare-regressed", func(r *Report) {
			r.Results[2].Throttled = 3         // from zero
			r.Results[3].Completed = 150       // -25 %
			r.Results[4].EndToEnd.P99 = 14.375 // +15 %
			r.Results = r.Results[1:]          // drops unbounded
			r.Results = append(r.Results, Result{Name: "token-first", Summary: measure.Summary{Completed: 200, Attempts: 200}})
		}, 0.10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nw := guideReport()
			tt.edit(&nw)
			c, err := Compare(old, nw, tt.threshold)
			if err != nil {
				t.Fatalf("Compare: %v", err)
			}
			if got := c.Regressed(); got != tt.regressed {
				t.Errorf("Regressed() = %v, want %v", got, tt.regressed)
			}
			var buf bytes.Buffer
			if err := c.WriteTable(&buf); err != nil {
				t.Fatalf("WriteTable: %v", err)
			}
			golden(t, tt.name+".txt", buf.Bytes())
		})
	}
}

// TestHTMLCompareGolden holds the guide's comparison section, the part of
// report.html whose numbers matter most to read right (the shared axis,
// each strategy's series, the bars and their labels), to a reviewed copy.
func TestHTMLCompareGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, guideReport()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	start := strings.Index(page, `<section id="compare"`)
	end := strings.Index(page[max(start, 0):], "</section>")
	if start < 0 || end < 0 {
		t.Fatalf("report.html has no comparison section")
	}
	golden(t, "guide.compare.html", []byte(page[start:start+end+len("</section>")]+"\n"))
}
