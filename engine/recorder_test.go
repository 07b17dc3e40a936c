package engine

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

func TestHistogramPercentiles(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		values []time.Duration
		want   measure.Percentiles
	}{
		{"empty", nil, measure.Percentiles{}},
		{"zeros", []time.Duration{0, 0, 0}, measure.Percentiles{Count: 3}},
		{"one", []time.Duration{500 * ms}, measure.Percentiles{Count: 1, P50: 0.5, P90: 0.5, P99: 0.5, Max: 0.5, Mean: 0.5}},
		{"half zeros", []time.Duration{0, 0, 0, 0, 0, ms, 2 * ms, 3 * ms, 4 * ms, 10 * ms},
			measure.Percentiles{Count: 10, P50: 0, P90: 0.004, P99: 0.010, Max: 0.010, Mean: 0.002}},
		{"hundred", func() (v []time.Duration) {
			for i := 1; i <= 100; i++ {
				v = append(v, time.Duration(i)*ms)
			}
			return v
		}(), measure.Percentiles{Count: 100, P50: 0.050, P90: 0.090, P99: 0.099, Max: 0.100, Mean: 0.0505}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h histogram
			for _, v := range tt.values {
				h.record(v)
			}
			got := h.percentiles()
			near := func(a, b float64) bool { return math.Abs(a-b) <= 0.001*math.Max(b, 1e-6) }
			if got.Count != tt.want.Count || !near(got.P50, tt.want.P50) || !near(got.P90, tt.want.P90) ||
				!near(got.P99, tt.want.P99) || got.Max != tt.want.Max || !near(got.Mean, tt.want.Mean) {
				t.Errorf("percentiles = %+v, want %+v (within 0.1%%)", got, tt.want)
			}
		})
	}
}

// TestTimelineBounded: a resolution far too fine for the run (1 µs for a
// 2 s run, which would be two million points) is clamped to MinResolution
// and coarsened as the run grows, so the timeline keeps at most
// MaxTimelinePoints, says which resolution it used and which was asked,
// and still accounts for every completion and 429. A resolution the run
// can keep is kept as asked.
func TestTimelineBounded(t *testing.T) {
	for _, tt := range []struct {
		resolution time.Duration
		coarsened  bool
	}{
		{time.Microsecond, true},
		{time.Nanosecond, true},
		{10 * time.Millisecond, false},
	} {
		t.Run(tt.resolution.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 400
				c := &fakeClient{latency: 100 * time.Millisecond, f: func(r provider.Request, k int) strategies.Outcome {
					if k == 0 && r.Messages[0].Content[0] == '7' {
						return strategies.Outcome{Kind: strategies.Throttled, Status: 429}
					}
					return strategies.Outcome{Kind: strategies.Success, Status: 200}
				}}
				sum, err := Run(t.Context(), Config{Client: c, Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 20}),
					Retry: &strategies.RetryPolicy{MaxRetries: 1}, Resolution: tt.resolution}, items(n))
				if err != nil {
					t.Fatal(err)
				}
				tl := sum.Timeline
				if len(tl.Points) > MaxTimelinePoints {
					t.Fatalf("%d points, want at most %d", len(tl.Points), MaxTimelinePoints)
				}
				res := time.Duration(tl.ResolutionSeconds * 1e9)
				if tt.coarsened {
					if tl.RequestedResolutionSeconds != tt.resolution.Seconds() || res < MinResolution ||
						res < time.Duration(sum.WallSeconds*1e9)/MaxTimelinePoints {
						t.Errorf("resolution %v (requested %gs) for a %.1f s run, want the requested %v replaced by one of at least %v",
							res, tl.RequestedResolutionSeconds, sum.WallSeconds, tt.resolution, time.Duration(sum.WallSeconds*1e9)/MaxTimelinePoints)
					}
				} else if res != tt.resolution || tl.RequestedResolutionSeconds != 0 {
					t.Errorf("resolution %v (requested %gs), want %v as asked", res, tl.RequestedResolutionSeconds, tt.resolution)
				}
				// Rates integrate back to the counts.
				var done, throttled float64
				for i := 1; i < len(tl.Points); i++ {
					dt := tl.Points[i].T - tl.Points[i-1].T
					done += tl.Points[i].CompletionsRate * dt
					throttled += tl.Points[i].ThrottlesRate * dt
				}
				if math.Abs(done-n) > 1e-6 || math.Abs(throttled-float64(sum.Throttled)) > 1e-6 || sum.Throttled == 0 {
					t.Errorf("timeline integrates to %g completions and %g 429s, want %d and %d", done, throttled, n, sum.Throttled)
				}
				t.Logf("%.1f s run: %d points at %v", sum.WallSeconds, len(tl.Points), res)
			})
		})
	}
}

// TestTimelineMaxInFlight: a point carries the most attempts under way
// during its interval, not only the count at its instant, so a burst that
// ends within one interval (200 attempts started at once, 180 refused at
// once) is still seen; an interval with no start carries the level it
// began with; merging two intervals keeps the larger peak.
func TestTimelineMaxInFlight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	r := NewRecorder(strategies.NewUnbounded(), 50*ms)
	r.start(t0)
	r.point(t0)
	end := func(n int, kind strategies.Kind) {
		for range n {
			r.Attempt(Attempt{Outcome: strategies.Outcome{Kind: kind}})
		}
	}
	for range 200 {
		r.attemptStarted()
	}
	end(180, strategies.Throttled)
	r.point(t0.Add(50 * ms))  // the burst: 200 at once, 20 left
	r.point(t0.Add(100 * ms)) // nothing started: the 20 held throughout
	end(20, strategies.Success)
	r.point(t0.Add(150 * ms)) // the 20 end within it
	r.point(t0.Add(200 * ms)) // idle
	for range 5 {
		r.attemptStarted()
	}
	end(5, strategies.Success)
	r.point(t0.Add(250 * ms)) // 5 start and end within it

	want := []struct{ inFlight, max int }{{0, 0}, {20, 200}, {20, 20}, {0, 20}, {0, 0}, {0, 5}}
	if len(r.points) != len(want) {
		t.Fatalf("%d points, want %d", len(r.points), len(want))
	}
	for i, w := range want {
		if p := r.points[i]; p.InFlight != w.inFlight || p.MaxInFlight != w.max {
			t.Errorf("point %d (t=%.2f s): in flight %d, max %d; want %d, %d", i, p.T, p.InFlight, p.MaxInFlight, w.inFlight, w.max)
		}
	}

	r.coarsen() // (0.05, 0.1] with (0.1, 0.15] … keeps each pair's peak
	for i, w := range []int{0, 200, 20, 5} {
		if p := r.points[i]; p.MaxInFlight != w {
			t.Errorf("coarsened point %d (t=%.2f s): max in flight %d, want %d", i, p.T, p.MaxInFlight, w)
		}
	}
}
