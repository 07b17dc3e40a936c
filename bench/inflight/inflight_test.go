package inflight

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/loadgen"
)

// childEnv makes the test binary, run again, run one scaled scenario and
// print its peak RSS.
const childEnv = "RATELAB_INFLIGHT_WORKERS"

// run runs bench/inflight.yaml with workers workers against a limit of
// workers/2, 2×workers items, as loadgen run does (the embedded mock in
// process), and fails unless every item completed.
func run(t *testing.T, workers int) {
	s, err := loadgen.Load("../inflight.yaml")
	if err != nil {
		t.Fatal(err)
	}
	items, err := loadgen.Parse("items.yaml", fmt.Appendf(nil, "items: %d\nstrategies: [{name: x, kind: unbounded}]\n", 2*workers))
	if err != nil {
		t.Fatal(err)
	}
	s.Items, s.Workers = items.Items, workers
	s.Server.Limits.MaxConcurrent = workers / 2
	rep, err := loadgen.Run(context.Background(), s, loadgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The file's expectations are for its own size: check the scaled ones.
	if sum := rep.Results[0].Summary; sum.Completed != 2*workers || sum.Failed != 0 {
		t.Fatalf("%d workers: %d of %d completed, %d failed", workers, sum.Completed, 2*workers, sum.Failed)
	}
}

// peakRSS runs the scenario with workers in a child process and returns its
// peak RSS in KiB, from its own /proc/self/status (a child's ru_maxrss would
// count this process's memory too: it shares it until exec).
func peakRSS(t *testing.T, workers int) float64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryPerInflightCall$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(workers))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%d workers: %v\n%s", workers, err, out)
	}
	_, v, ok := strings.Cut(string(out), "VmHWM:")
	if !ok {
		t.Fatalf("%d workers: no VmHWM in the child's output:\n%s", workers, out)
	}
	f := strings.Fields(v)
	kib, err := strconv.ParseFloat(f[0], 64)
	if err != nil || f[1] != "kB" {
		t.Fatalf("%d workers: VmHWM %q", workers, v)
	}
	return kib
}

// TestMemoryPerInflightCall holds loadgen run's memory per in-flight call,
// the embedded mock's side included, to a bound: the difference in peak RSS
// between 1,000 and 250 workers (400 and 100 under -race) (each against a limit of half its workers:
// half the calls under way at the mock, half waiting out a 429's
// retry-after), over the 750 calls it adds. The difference leaves out what
// any run has (the binary, the runtime, the mock's tables).
func TestMemoryPerInflightCall(t *testing.T) {
	if v := os.Getenv(childEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		run(t, n)
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				fmt.Println(l)
			}
		}
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status: Linux only")
	}
	small, large := 250, 1000
	limit := maxKiBPerCall
	if raceEnabled { // the race detector's shadow memory: smaller, and a wider bound
		small, large, limit = 100, 400, limit*raceFactor
	}
	a, b := peakRSS(t, small), peakRSS(t, large)
	perCall := (b - a) / float64(large-small)
	t.Logf("peak RSS %.1f MiB at %d workers, %.1f MiB at %d: %.1f KiB per in-flight call", a/1024, small, b/1024, large, perCall)
	if perCall > limit {
		t.Errorf("%.1f KiB of peak RSS per in-flight call, want at most %.0f", perCall, limit)
	}
}

// The bound, with a margin over what was measured (docs/performance.md).
const (
	maxKiBPerCall = 80.0
	raceFactor    = 8 // measured 6.4× at 250 and 1,000 workers
)
