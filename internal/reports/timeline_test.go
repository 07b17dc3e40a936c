package reports

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
)

// ev is something that happened at ms milliseconds into a run: calls
// completed (their attempt ended), attempts refused with 429, then attempts
// started.
type ev struct{ ms, start, done, throttled int }

// recorded builds the timeline engine's Recorder takes of evs: a point at
// 0, one every resMs and one at endMs, where the run ended (its last
// interval is short); each interval's rates are its counts over its own
// length, in flight is the count at the point and max_in_flight the most
// during the interval.
func recorded(resMs, endMs int, evs []ev) *measure.Timeline {
	tl := &measure.Timeline{ResolutionSeconds: float64(resMs) / 1000, Points: []measure.Point{{}}}
	inFlight, peak, done, throttled, prev, k := 0, 0, 0, 0, 0, 0
	point := func(ms int) {
		dt := float64(ms-prev) / 1000
		tl.Points = append(tl.Points, measure.Point{T: float64(ms) / 1000, InFlight: inFlight, MaxInFlight: peak,
			CompletionsRate: float64(done) / dt, ThrottlesRate: float64(throttled) / dt})
		peak, done, throttled, prev = inFlight, 0, 0, ms
	}
	for ms := resMs; ; ms += resMs {
		for ; k < len(evs) && evs[k].ms <= min(ms, endMs); k++ {
			e := evs[k]
			inFlight -= e.done + e.throttled // a slot is freed before the next call takes it
			inFlight += e.start
			peak = max(peak, inFlight)
			done += e.done
			throttled += e.throttled
		}
		if ms >= endMs {
			point(endMs)
			return tl
		}
		point(ms)
	}
}

// semaphore20 is the guide's semaphore(20) row: 200 calls of 500 ms, 20 at
// a time, each wave ending 1 ms after its 500 ms (the client reads the
// response after the server's clock), the run ending 25 ms into its last
// interval of 100 ms.
func semaphore20() *measure.Timeline {
	evs := []ev{{ms: 0, start: 20}}
	for w := 1; w <= 10; w++ {
		e := ev{ms: 500*w + 1, done: 20}
		if w < 10 {
			e.start = 20
		}
		evs = append(evs, e)
	}
	return recorded(100, 5025, evs)
}

const near = 1e-9

// TestRatesOfASteadyRun: 200 calls, 20 at a time, 500 ms each, complete at
// 40/s. The completions rate is 0 until the first wave ends, rises as the
// second before each instant fills, and is 40/s from 1 s to the run's end,
// never above: the last interval of 25 ms holding a whole wave (800/s as
// recorded) no longer makes the run appear to speed up, and nothing shows
// before the first call finished.
func TestRatesOfASteadyRun(t *testing.T) {
	tl := semaphore20()
	last := tl.Points[len(tl.Points)-1]
	if last.T != 5.025 || last.CompletionsRate != 800 {
		t.Fatalf("fixture: last point t=%v at %v/s, want the short interval of 25 ms at 800/s", last.T, last.CompletionsRate)
	}
	d := newTimelineData(tl)
	if d.Window != 1 {
		t.Fatalf("window = %v s, want 1", d.Window)
	}
	for i, ts := range d.T {
		want := 40.0
		switch {
		case ts <= 0.5:
			want = 0 // nothing has completed: the first wave ends at 0.501 s
		case ts < 1.0:
			want = 40 * (ts - 0.5) / 0.5 // the wave in (0.5, 0.6], weighed in over half a second
		}
		if got := d.Completions[i]; math.Abs(got-want) > near {
			t.Errorf("completions at %.3f s = %v/s, want %v/s", ts, got, want)
		}
		if got := d.InFlight[i]; i > 0 && got != 20 {
			t.Errorf("in flight at %.3f s = %v, want 20 (the most during its interval)", ts, got)
		}
		if d.Throttles[i] != 0 {
			t.Errorf("429s at %.3f s = %v/s, want 0", ts, d.Throttles[i])
		}
	}
	if got := maxOf(d.Completions); math.Abs(got-40) > near {
		t.Errorf("completions peak at %v/s, want 40", got)
	}
	// The chart says what it drew.
	c := buildChart("semaphore(20)", tl)
	if got := c.Panels[1].Series[0].Name; got != "completions per second, trailing 1 s average" {
		t.Errorf("completions series named %q", got)
	}
	if got := c.Panels[1].YTicks[len(c.Panels[1].YTicks)-1].Label; got != "60" {
		t.Errorf("completions axis tops at %s, want 60 (40/s and a step of headroom)", got)
	}
}

// TestRatesOfABurst: the unbounded row's t = 0 burst. 200 attempts start
// at once and 180 are refused within a millisecond, all inside the first
// 50 ms interval: in flight shows the 200 (the interval's most, not the 20
// left at its end), and 429s show as a hump over the next second, highest
// (360/s) half a second on, rather than 3,600/s over 50 ms; the retries'
// bursts follow at 1 s and 2 s.
func TestRatesOfABurst(t *testing.T) {
	tl := recorded(50, 2550, []ev{
		{ms: 0, start: 200}, {ms: 1, throttled: 180}, {ms: 501, done: 20},
		{ms: 1001, start: 180}, {ms: 1002, throttled: 160}, {ms: 1502, done: 20},
		{ms: 2002, start: 160}, {ms: 2003, throttled: 140}, {ms: 2503, done: 20},
	})
	if p := tl.Points[1]; p.InFlight != 20 || p.ThrottlesRate != 3600 {
		t.Fatalf("fixture: first interval in flight %d at 429s %v/s, want 20 and 3,600/s", p.InFlight, p.ThrottlesRate)
	}
	d := newTimelineData(tl)
	if d.InFlight[1] != 200 {
		t.Errorf("in flight in (0, 0.05] = %v, want the burst's 200", d.InFlight[1])
	}
	// A burst of n in the interval ending at b, averaged over two half
	// seconds: n/0.5 per second over the half second after, weighed in
	// over the next half second.
	hump := func(n, b, t float64) float64 {
		lo, hi := math.Max(t-0.5, b-0.05), math.Min(t, b-0.05+0.5)
		// the first pass is n/0.5 on (b-0.05, b-0.05+0.5] in steps of 0.05
		return n / 0.5 * math.Max(0, hi-lo) / 0.5
	}
	for i, ts := range d.T {
		want := hump(180, 0.05, ts) + hump(160, 1.05, ts) + hump(140, 2.05, ts)
		if got := d.Throttles[i]; math.Abs(got-want) > near {
			t.Errorf("429s at %.3f s = %v/s, want %v/s", ts, got, want)
		}
	}
	if got := maxOf(d.Throttles); math.Abs(got-360) > near {
		t.Errorf("429s peak at %v/s, want 360", got)
	}
	c := buildChart("unbounded", tl)
	axis := c.Panels[2].YTicks
	if got := axis[len(axis)-1].Label; got != "400" {
		t.Errorf("429 axis tops at %s, want 400 (the peak of 360/s), not thousands", got)
	}
	axis = c.Panels[0].YTicks
	if got := axis[len(axis)-1].Label; got != "250" {
		t.Errorf("in-flight axis tops at %s, want 250 (the burst of 200 and headroom)", got)
	}
}

func TestRateWindow(t *testing.T) {
	for _, tt := range []struct{ res, span, want float64 }{
		{0.1, 5, 1},
		{0.05, 5.03, 1},
		{0.1, 2.5, 1}, // a short run is still averaged over a second
		{0.1, 0.35, 0.2},
		{0.1, 0.15, 0}, // shorter than two intervals: each interval's own rate
		{0.25, 60, 1},
		{0.3, 60, 1.2},
		{0.2, 600, 1.2}, // a long run coarsened from 0.1 s
		{1.6, 6000, 0},
		{0.4, 60, 0.8},
		{2, 60, 0}, // coarser than a second: each interval's own rate
		{0, 10, 0}, // unknown resolution
		{math.NaN(), 10, 0},
	} {
		if got := rateWindow(tt.res, tt.span); math.Abs(got-tt.want) > near {
			t.Errorf("rateWindow(%v, %v) = %v, want %v", tt.res, tt.span, got, tt.want)
		}
	}
}

func TestTrailingRate(t *testing.T) {
	for _, tt := range []struct {
		name               string
		starts, ts, counts []float64
		window             float64
		k                  int
		want               []float64
	}{
		{"two-interval window", []float64{0, 1, 2, 3}, []float64{1, 2, 3, 4}, []float64{2, 4, 0, 6}, 2, 2, []float64{1, 3, 2, 3}},
		{"short last interval", []float64{0, 1, 2, 3}, []float64{1, 2, 3, 3.2}, []float64{0, 4, 0, 4}, 2, 2, []float64{0, 2, 2, 2}},
		{"late tick at the edge", []float64{0, 0.9999, 2}, []float64{0.9999, 2, 3.0001}, []float64{0, 4, 0}, 2, 2, []float64{0, 2, 2}},
		{"missed tick", []float64{0, 1, 3}, []float64{1, 3, 4}, []float64{4, 0, 2}, 2, 2, []float64{2, 0, 1}},
		{"no window", []float64{0, 1, 2}, []float64{1, 2, 2.5}, []float64{3, 0, 1}, 0, 0, []float64{3, 0, 2}},
		{"empty interval", []float64{0, 1}, []float64{1, 1}, []float64{3, 0}, 0, 0, []float64{3, 0}},
		{"nothing", nil, nil, nil, 1, 1, []float64{}},
	} {
		got := trailingRate(tt.starts, tt.ts, tt.counts, tt.window, tt.k)
		if len(got) != len(tt.want) {
			t.Errorf("%s: trailingRate = %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > near {
				t.Errorf("%s: trailingRate = %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

func TestTrailingMean(t *testing.T) {
	for _, tt := range []struct {
		name           string
		starts, ts, ys []float64
		window         float64
		want           []float64
	}{
		{"whole intervals", []float64{0, 1, 2, 3}, []float64{1, 2, 3, 4}, []float64{2, 4, 0, 6}, 2, []float64{1, 3, 2, 3}},
		{"cut interval", []float64{0, 1, 2}, []float64{1, 2, 2.5}, []float64{2, 4, 8}, 1, []float64{2, 4, 6}},
		{"from the start", []float64{0, 0, 1}, []float64{0, 1, 2}, []float64{9, 3, 5}, 4, []float64{0, 0.75, 2}},
	} {
		got := trailingMean(tt.starts, tt.ts, tt.ys, tt.window)
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > near {
				t.Errorf("%s: trailingMean = %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

// TestREADMEDescribesTheWindow: the documentation of report.html
// (docs/loadgen.md) says what the charts average over, in the words the
// chart's legend uses.
func TestREADMEDescribesTheWindow(t *testing.T) {
	readme, err := os.ReadFile("../../docs/loadgen.md")
	if err != nil {
		t.Fatal(err)
	}
	label := rateLabel("completions", 1, 0.1)
	if want := strings.TrimPrefix(label, "completions per second, "); !strings.Contains(string(readme), want) {
		t.Errorf("docs/loadgen.md does not say %q, which the chart's legend says (%q)", want, label)
	}
}
