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
