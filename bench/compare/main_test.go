package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNegativeSpread: -spread below 0 is refused before any server starts
// (each server here would leave a file behind if it were started).
func TestNegativeSpread(t *testing.T) {
	dir := t.TempDir()
	err := run(context.Background(), []string{"stream", "-spread", "-1ms",
		"-server", "a=touch " + filepath.Join(dir, "a"), "-server", "b=touch " + filepath.Join(dir, "b")}, nil)
	if err == nil || !strings.Contains(err.Error(), "-spread -1ms") {
		t.Fatalf("run with -spread -1ms: %v, want the -spread error", err)
	}
	if started, _ := os.ReadDir(dir); len(started) != 0 {
		t.Errorf("%d servers started before the -spread error", len(started))
	}
}

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
