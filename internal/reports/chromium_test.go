package reports

import (
	"bytes"
	"context"
	"github.com/ratelab/ratelab/measure"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromiumTimeout bounds each browser run; a healthy one takes a few
// seconds.
const chromiumTimeout = 90 * time.Second

// chromium returns the path of a Chromium binary. Without one the test
// fails under CI (CI set), where .ci/run installs it, and is skipped
// elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found, and CI is set: run .ci/install-chromium.sh")
	}
	t.Skip("chromium not found: run .ci/install-chromium.sh to enable the browser test")
	return ""
}

// runChromium runs headless Chromium on page with extra arguments and
// returns its stdout. The flags keep it off the network (without them it
// stalls on a closed one) and the context keeps it from ever hanging.
func runChromium(t *testing.T, bin, page string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), chromiumTimeout)
	defer cancel()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--user-data-dir=" + t.TempDir(),
	}
	args = append(append(args, extra...), "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v (context: %v)\nstderr:\n%s", extra, err, ctx.Err(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// writeReport renders r as report.html in a temporary directory.
func writeReport(t *testing.T, r Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return page
}

// TestHTMLInChromiumDOM loads report.html in a real browser and checks the
// DOM it built: a chart per strategy with a timeline, each series a path
// with data.
func TestHTMLInChromiumDOM(t *testing.T) {
	bin := chromium(t)
	for _, tt := range []struct {
		name   string
		report Report
	}{{"guide", guideReport()}, {"edge", edgeReport()}} {
		r := tt.report
		t.Run(tt.name, func(t *testing.T) {
			dom := runChromium(t, bin, writeReport(t, r), "--dump-dom")
			doc := parseDOM(t, dom, false)
			checkCharts(t, doc, r)
			checkCompare(t, doc, r)
			checkSelfContained(t, doc)
		})
	}
}

// TestHTMLInChromiumPixels takes a screenshot of a one-strategy report and
// checks that every series was painted: each series colour must cover far
// more pixels than its legend swatch could.
func TestHTMLInChromiumPixels(t *testing.T) {
	bin := chromium(t)
	r := Report{
		Scenario: "pixels",
		Results: []Result{{
			Name: "aimd", Kind: "aimd", Summary: measure.Summary{Items: 200, Completed: 200, Attempts: 230, Throttled: 30,
				Timeline: sampled(0.1, 60, func(t float64) measure.Point {
					limit := 8 + float64(int(t*10)%20)
					p := measure.Point{InFlight: int(limit * 0.6), Limit: limit, CompletionsRate: 10 + 20*t, DelaySeconds: 0.05 + 0.01*t, Queued: 200 - int(3*t)}
					if int(t*10)%20 >= 17 {
						p.ThrottlesRate = 60
					}
					return p
				})},
		}},
	}
	const w, h = 1400, 1800
	img := screenshot(t, bin, writeReport(t, r), strconv.Itoa(w)+","+strconv.Itoa(h))
	counts := countColors(img, seriesColors)
	for key, color := range seriesColors {
		if got, min := counts[key], 600; got < min {
			t.Errorf("series %s (%s): %d pixels painted, want at least %d", key, color, got, min)
		}
	}
	t.Logf("painted pixels per series: %v", counts)
}

// countColors counts, per key, the pixels of img within a small tolerance
// of the key's hex colour.
func countColors(img image.Image, colors map[string]string) map[string]int {
	type rgb struct{ r, g, b int }
	want := map[string]rgb{}
	for k, hex := range colors {
		v, _ := strconv.ParseUint(hex[1:], 16, 32)
		want[k] = rgb{int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)}
	}
	abs := func(x int) int { return max(x, -x) }
	counts := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			p := rgb{int(r >> 8), int(g >> 8), int(bl >> 8)}
			for k, c := range want {
				if abs(p.r-c.r) <= 6 && abs(p.g-c.g) <= 6 && abs(p.b-c.b) <= 6 {
					counts[k]++
				}
			}
		}
	}
	return counts
}

// TestHTMLInChromiumCompare takes two screenshots of the comparison
// section, one of the overlaid timelines alone and one of the bars alone,
// and checks each strategy's colour is painted in both: its in-flight and
// completions lines (far more pixels than a stray edge could make) and its
// bars. A strategy without a timeline has bars but no line.
func TestHTMLInChromiumCompare(t *testing.T) {
	bin := chromium(t)
	r := Report{Scenario: "compare"}
	for i := range 4 {
		level := float64(10 * (i + 1)) // apart, so no line hides another
		r.Results = append(r.Results, Result{Name: "strategy " + strconv.Itoa(i+1), Kind: "semaphore",
			Summary: measure.Summary{Items: 100, Completed: 100, Attempts: int64(100 + 30*i), Throttled: int64(5 + 20*i), WallSeconds: float64(3 + i),
				Timeline: sampled(0.1, 30+10*i, func(float64) measure.Point {
					return measure.Point{InFlight: int(level), CompletionsRate: level / 2}
				})}})
	}
	r.Results = append(r.Results, Result{Name: "no timeline", Kind: "command",
		Summary: measure.Summary{Items: 100, Completed: 100, Attempts: 150, Throttled: 50, WallSeconds: 4}})
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	colors := map[string]string{}
	for i, res := range r.Results {
		colors[res.Name] = strategyColor(i + 1)
	}
	for _, part := range []struct {
		id        string
		min       int
		timelines bool
	}{{"compare-timeline", 600, true}, {"compare-totals", 600, false}} {
		t.Run(part.id, func(t *testing.T) {
			// Only the one figure is shown: nothing else can paint a colour.
			img := screenshotOnly(t, bin, buf.String(), "main > :not(#compare), #compare > :not(#"+part.id+")", "1200,900")
			counts := countColors(img, colors)
			for _, res := range r.Results {
				got := counts[res.Name]
				if part.timelines && res.Timeline == nil {
					if got > 20 {
						t.Errorf("%s has no timeline, but %d pixels of its colour were painted", res.Name, got)
					}
					continue
				}
				if got < part.min {
					t.Errorf("%s (%s): %d pixels painted, want at least %d", res.Name, colors[res.Name], got, part.min)
				}
			}
			t.Logf("painted pixels per strategy: %v", counts)
		})
	}
}

// screenshotOnly renders page in Chromium with the elements matched by
// hidden not displayed (so that only the figure under test can paint a
// colour), at a window of size ("W,H"), and returns the screenshot.
func screenshotOnly(t *testing.T, bin, page, hidden, size string) image.Image {
	t.Helper()
	file := filepath.Join(t.TempDir(), "report.html")
	style := "<style>" + hidden + " { display: none }</style></head>"
	if err := os.WriteFile(file, []byte(strings.Replace(page, "</head>", style, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return screenshot(t, bin, file, size)
}

// screenshot renders the page in file in Chromium at a window of size
// ("W,H") and returns the screenshot.
func screenshot(t *testing.T, bin, file, size string) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	runChromium(t, bin, file, "--screenshot="+shot, "--window-size="+size)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	return img
}
