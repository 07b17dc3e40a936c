package gcheadroom

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// TestGCPercent: the collector's target lets the heap grow by about
// headroom (16 MB) when the heap is small, never past 16 MB by the
// runtime's least target, and by the default's (GOGC=100) once the heap
// passes 16 MB.
func TestGCPercent(t *testing.T) {
	for _, tt := range []struct {
		live, roots uint64
		want        int
	}{
		{0, 0, 400},
		{512 << 10, 0, 400},     // the least target, 4 MB × 4, is the 16 MB
		{2 << 20, 0, 400},       // likewise
		{4 << 20, 0, 400},       // 4 MB live: 16 MB is 4× it
		{4 << 20, 4 << 20, 200}, // roots count as the runtime counts them
		{8 << 20, 0, 200},
		{16 << 20, 0, 100},
		{1 << 30, 1 << 20, 100}, // a large heap keeps the default
	} {
		got := gcPercent(tt.live, tt.roots)
		if got != tt.want {
			t.Errorf("gcPercent(%d, %d) = %d, want %d", tt.live, tt.roots, got, tt.want)
		}
		// The runtime's target: what the heap may reach before a
		// collection. It is never more than headroom above the live
		// heap, unless what is scanned (the default's growth) is more.
		scanned := tt.live + tt.roots
		goal := max(tt.live+scanned*uint64(got)/100, runtimeHeapMinimum*uint64(got)/100)
		if goal > tt.live+max(headroom, scanned) {
			t.Errorf("live %d, roots %d: target %d, more than %d above the live heap", tt.live, tt.roots, goal, max(headroom, scanned))
		}
	}
}

// TestRun: with GOGC unset, Run sets the collector's target to gcPercent
// of the heap it reads; with GOGC set, it leaves the target alone.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Run sets the target once, then returns
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)

	t.Setenv("GOGC", "")
	Run(ctx)
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	metrics.Read(samples) // these change only at a collection's end
	want := gcPercent(samples[0].Value.Uint64(), samples[1].Value.Uint64()+samples[2].Value.Uint64())
	if want == 100 {
		t.Fatalf("the test's heap is too large to tell Run's target from the default: live %d, stacks %d, globals %d", samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64())
	}
	if got := debug.SetGCPercent(100); got != want {
		t.Errorf("GOGC unset: Run set GOGC %d, want %d", got, want)
	}

	t.Setenv("GOGC", "100")
	Run(ctx)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 set: Run changed the target to %d", got)
	}
}
