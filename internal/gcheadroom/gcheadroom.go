// Package gcheadroom keeps the garbage collector's target at a fixed
// headroom above a small heap: what mockllm runs with (docs/mockllm.md,
// Operating it).
package gcheadroom

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// headroom is what the heap may grow by between two collections, at
// least, when GOGC is not set. Go's default target (GOGC=100) lets it grow
// by what the collector scans, to a target of at least 4 MB: mockllm's live
// heap is about 2 MB, which that collected 3.76 times per 1,000 requests
// under make bench-mock's JSON load (every 270 or so), and collection was
// the largest cost mockllm pays beyond a bare net/http server's (docs/performance.md:
// mockllm, cross-process). A fixed headroom costs at most that much more memory
// (about 12 MB at mockllm's usual heap); a large heap, of many streams in
// flight, keeps the default target.
const headroom = 16 << 20

// The runtime's least heap target, 4 MB at GOGC=100, scales with GOGC:
// maxGCPercent keeps it within headroom.
const (
	runtimeHeapMinimum = 4 << 20
	maxGCPercent       = headroom * 100 / runtimeHeapMinimum
)

// gcEvery is how often Run looks at the heap.
const gcEvery = time.Second

// Run sets GOGC to gcPercent of the heap, read now and once every gcEvery,
// until ctx ends, unless GOGC is set: the operator's choice wins.
func Run(ctx context.Context) {
	if os.Getenv("GOGC") != "" {
		return
	}
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
	}
	t := time.NewTicker(gcEvery)
	defer t.Stop()
	set := 100
	for {
		metrics.Read(samples)
		if p := gcPercent(samples[0].Value.Uint64(), samples[1].Value.Uint64()+samples[2].Value.Uint64()); p != set {
			debug.SetGCPercent(p)
			set = p
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// gcPercent is the GOGC that lets a heap of live bytes, with roots more to
// scan (stacks, globals), grow by headroom between collections, or by what
// is scanned (the default, GOGC=100) when that is more. The runtime's
// target is the larger of live + (live + roots) × GOGC/100 and
// runtimeHeapMinimum × GOGC/100.
func gcPercent(live, roots uint64) int {
	scanned := live + roots
	if scanned == 0 {
		return maxGCPercent
	}
	return int(min(max(100, headroom*100/scanned), maxGCPercent))
}
