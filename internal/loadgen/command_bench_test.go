package loadgen

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkCommandPythonSemaphore reports wall/oracle of the shipped
// Python client at Semaphore(20) against the guide's mock, as real
// processes: the time from its first request to its last response over the
// oracle's 5 s. It is a benchmark, not a test, because real time on a
// loaded machine decides it (docs/performance.md records the figures, quiet and under
// stress-ng --cpu 2). Run it with -benchtime 3x.
func BenchmarkCommandPythonSemaphore(b *testing.B) {
	dir, err := filepath.Abs("../../examples/clients/python")
	if err != nil {
		b.Fatal(err)
	}
	s := commandScenario(b, b.TempDir(), guideServer, fmt.Sprintf(`
  - name: semaphore(20)
    kind: command
    command: [python3, fanout.py, --concurrency, "20"]
    dir: %s
`, dir))
	worst, sum := 0.0, 0.0
	for b.Loop() {
		rep, err := Run(b.Context(), s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		r := rep.Results[0]
		if r.Completed != 200 || r.Throttled != 0 {
			b.Fatalf("completed %d with %d 429s, want 200 and 0", r.Completed, r.Throttled)
		}
		worst = max(worst, r.WallOverOracle)
		sum += r.WallOverOracle
	}
	b.ReportMetric(sum/float64(b.N), "wall/oracle")
	b.ReportMetric(worst, "worst_wall/oracle")
}
