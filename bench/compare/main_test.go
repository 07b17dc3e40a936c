package main

import (
	"slices"
	"testing"
	"time"
)

func TestOrderRotates(t *testing.T) {
	for r, want := range [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 1, 2}} {
		if got := order(3, r); !slices.Equal(got, want) {
			t.Errorf("order(3, %d) = %v, want %v", r, got, want)
		}
	}
}

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
		if got := median(c.v); got != c.median {
			t.Errorf("median(%v) = %v, want %v", c.v, got, c.median)
		}
		if got := spread(c.v, "%.0f"); got != c.spread {
			t.Errorf("spread(%v) = %q, want %q", c.v, got, c.spread)
		}
	}
}

func TestPct(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[int]time.Duration{50: 50, 99: 99, 100: 100, 1: 1} {
		if got := pct(d, p); got != want {
			t.Errorf("pct(1..100, %d) = %v, want %v", p, got, want)
		}
	}
}
