package loadgen

import (
	"os"
	"strings"
	"testing"
)

// TestTuningExample holds docs/scenarios.md's worked example
// (examples/tuning/tickets-50k.yaml) to its reading at a tenth of its
// size, in simulated time: every row completes, and adaptive beats aimd
// and the fastest semaphore, with no more 429s than aimd, as on the 50,000
// items.
func TestTuningExample(t *testing.T) {
	const f = "../../examples/tuning/tickets-50k.yaml"
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\nitems: 50000\n") {
		t.Fatalf("%s: the README's example is of 50,000 items", f)
	}
	s, err := Parse(f, []byte(strings.Replace(string(data), "\nitems: 50000\n", "\nitems: 5000\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), s, Options{Virtual: true, Only: []string{"semaphore(16)", "aimd", "adaptive"}})
	if err != nil {
		t.Fatal(err)
	}
	wall := map[string]float64{}
	throttled := map[string]int64{}
	for _, r := range rep.Results {
		if r.Completed != 5000 {
			t.Errorf("%s: %d of 5,000 completed", r.Name, r.Completed)
		}
		wall[r.Name] = r.WallSeconds
		throttled[r.Name] = r.Throttled
	}
	if !(wall["adaptive"] < wall["aimd"] && wall["adaptive"] < wall["semaphore(16)"]) {
		t.Errorf("walls %v: want adaptive the fastest, as README reads the example", wall)
	}
	if throttled["adaptive"] > throttled["aimd"] {
		t.Errorf("429s %v: want adaptive's no more than aimd's", throttled)
	}
}
