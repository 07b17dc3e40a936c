package loadgen

import (
	"reflect"
	"testing"
)

// TestParams checks what a report shows of each strategy's parameters: the
// ones the file set, durations as strings, and nothing the kind lacks.
func TestParams(t *testing.T) {
	const file = `items: 1
strategies:
  - {name: a, kind: aimd-delay, initial_delay: 2s, cooldown: 5s, successes: 4, increase: 2}
  - {name: b, kind: per-provider, limits: {anthropic: 10}, default: 3, max_retries: 5, requeue: true}
  - {name: c, kind: adaptive, initial: 8, probe_after: 2.5, state_file: /tmp/s.json}
  - {name: d, kind: token-first, n: 20, tpm: 60000}
`
	s, err := Parse("params.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"max_retries": 2, "initial_delay": "2s", "cooldown": "5s", "successes": 4, "increase": 2.0},
		{"max_retries": 5, "requeue": true, "limits": map[string]int{"anthropic": 10}, "default": 3},
		{"max_retries": 2, "initial": 8, "probe_after": 2.5, "state_file": "/tmp/s.json"},
		{"max_retries": 2, "n": 20, "tpm": 60000},
	}
	for i, st := range s.Strategies {
		if got := st.Params(); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%s: Params() = %v, want %v", st.Name, got, want[i])
		}
	}
}
