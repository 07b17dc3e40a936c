package engine

import (
	"math"
	"testing"
	"time"
)

func TestHistogramPercentiles(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		values []time.Duration
		want   Percentiles
	}{
		{"empty", nil, Percentiles{}},
		{"zeros", []time.Duration{0, 0, 0}, Percentiles{Count: 3}},
		{"one", []time.Duration{500 * ms}, Percentiles{Count: 1, P50: 0.5, P90: 0.5, P99: 0.5, Max: 0.5, Mean: 0.5}},
		{"half zeros", []time.Duration{0, 0, 0, 0, 0, ms, 2 * ms, 3 * ms, 4 * ms, 10 * ms},
			Percentiles{Count: 10, P50: 0, P90: 0.004, P99: 0.010, Max: 0.010, Mean: 0.002}},
		{"hundred", func() (v []time.Duration) {
			for i := 1; i <= 100; i++ {
				v = append(v, time.Duration(i)*ms)
			}
			return v
		}(), Percentiles{Count: 100, P50: 0.050, P90: 0.090, P99: 0.099, Max: 0.100, Mean: 0.0505}},
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
