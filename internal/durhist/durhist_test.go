package durhist

import (
	"math"
	"testing"
	"time"
)

func near(got, want float64) bool { return math.Abs(got-want) <= want*1e-3 }

// TestSummary: the percentiles of 1..1000 ms are within HdrHistogram's
// three digits; Count, Max and Mean are exact.
func TestSummary(t *testing.T) {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	s := h.Summary()
	if s.Count != 1000 || s.Max != 1 || !near(s.Mean, 0.5005) {
		t.Errorf("Count, Max, Mean = %d, %v, %v; want 1000, 1, 0.5005", s.Count, s.Max, s.Mean)
	}
	for _, c := range []struct{ got, want float64 }{{s.P50, 0.5}, {s.P90, 0.9}, {s.P99, 0.99}} {
		if !near(c.got, c.want) {
			t.Errorf("percentile = %v, want %v within 0.1%%", c.got, c.want)
		}
	}
}

// TestZeros: zeros are counted, never allocate the HdrHistogram, and are
// the lowest values of the distribution.
func TestZeros(t *testing.T) {
	var h Histogram
	for range 10 {
		h.Record(0)
	}
	if h.h != nil {
		t.Error("zeros alone allocated the HdrHistogram")
	}
	if s := h.Summary(); s != (Summary{Count: 10}) {
		t.Errorf("Summary of zeros = %+v, want only Count 10", s)
	}
	h.Record(-time.Second) // a negative duration counts as a zero
	for range 9 {
		h.Record(time.Second)
	}
	s := h.Summary()
	if s.Count != 20 || s.P50 != 0 || s.P90 != 1 || s.Max != 1 || s.Mean != 0.45 {
		t.Errorf("Summary = %+v, want Count 20, P50 0 (among 11 zeros), P90 1, Max 1, Mean 0.45", s)
	}
}

// TestCeiling: a duration above the ceiling is held as the ceiling in the
// HdrHistogram, while Max stays exact.
func TestCeiling(t *testing.T) {
	h := Histogram{Ceiling: time.Hour}
	h.Record(3 * time.Hour)
	s := h.Summary()
	if s.Max != (3 * time.Hour).Seconds() {
		t.Errorf("Max = %v, want 10800", s.Max)
	}
	if !near(s.P99, 3600) {
		t.Errorf("P99 = %v, want the ceiling, 3600 s", s.P99)
	}
}

// TestMerge: merging two histograms gives the summary of recording all of
// their durations into one.
func TestMerge(t *testing.T) {
	var a, b, all Histogram
	for i := range 500 {
		d := time.Duration(i) * time.Millisecond
		a.Record(d)
		all.Record(d)
		d = time.Duration(1000+i) * time.Microsecond * 7
		b.Record(d)
		all.Record(d)
	}
	var empty Histogram
	a.Merge(&b)
	a.Merge(&empty)
	empty.Merge(&a)
	if got, want := a.Summary(), all.Summary(); got != want {
		t.Errorf("merged = %+v, want %+v", got, want)
	}
	if got, want := empty.Summary(), all.Summary(); got != want {
		t.Errorf("merged into an empty histogram = %+v, want %+v", got, want)
	}
}

// TestEmpty: a histogram that recorded nothing summarises to zero.
func TestEmpty(t *testing.T) {
	var h Histogram
	if s := h.Summary(); s != (Summary{}) {
		t.Errorf("Summary = %+v, want zero", s)
	}
	if q := h.Quantile(99); q != 0 {
		t.Errorf("Quantile(99) = %v, want 0", q)
	}
}
