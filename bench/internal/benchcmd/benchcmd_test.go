package benchcmd

import "testing"

func TestMedianSpread(t *testing.T) {
	for _, c := range []struct {
		v      []float64
		median float64
		spread string
	}{
		{[]float64{3, 1, 2}, 2, "[1–3]"},
		{[]float64{4, 1, 3, 2}, 2.5, "[1–4]"},
		{[]float64{5}, 5, "[5–5]"},
	} {
		if got := Median(c.v); got != c.median {
			t.Errorf("Median(%v) = %v, want %v", c.v, got, c.median)
		}
		if got := Spread(c.v, "%.0f"); got != c.spread {
			t.Errorf("Spread(%v) = %q, want %q", c.v, got, c.spread)
		}
	}
}
