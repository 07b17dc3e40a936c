package loadgen

import (
	"reflect"
	"testing"
	"time"

	"github.com/ratelab/ratelab/strategies"
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
		{"max_retries": 2, "initial_delay": "2s", "cooldown": "5s", "successes": 4, "increase": 2},
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

// TestRowConfig: a row's kind picks its configuration, and the row's other
// keys decode straight into it by the library struct's yaml tags.
func TestRowConfig(t *testing.T) {
	const file = `items: 1
strategies:
  - {name: u, kind: unbounded}
  - {name: s, kind: semaphore, n: 20}
  - {name: p, kind: per-provider, limits: {anthropic: 10, openai: 30}, default: 3}
  - {name: b, kind: token-bucket, rpm: 50, tpm: 40000.5, request_burst: 2, token_burst: 5000}
  - {name: f, kind: token-first, n: 8, tpm: 60000, token_burst: 9000}
  - {name: d, kind: aimd-delay, initial_delay: 2s, min_delay: 5ms, max_delay: 30s, successes: 4, decrease: 0.8, increase: 2, cooldown: 5s}
  - {name: a, kind: aimd, initial: 8, min: 2, max: 64, increase: 2, decrease: 0.5}
  - {name: x, kind: adaptive, initial: 8, min: 2, max: 64, decrease: 0.8, growth: 4, probe_after: 2.5, state_file: /tmp/s.json}
`
	s, err := Parse("rows.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		&unboundedConfig{},
		&strategies.SemaphoreConfig{Max: 20},
		&strategies.PerProviderConfig{Limits: map[string]int{"anthropic": 10, "openai": 30}, Default: 3},
		&strategies.TokenBucketConfig{RPM: 50, TPM: 40000.5, RequestBurst: 2, TokenBurst: 5000},
		&strategies.TokenFirstConfig{TPM: 60000, TokenBurst: 9000, MaxConcurrent: 8},
		&strategies.AIMDDelayConfig{Initial: 2 * time.Second, Min: 5 * time.Millisecond, Max: 30 * time.Second,
			Successes: 4, Decrease: 0.8, Increase: 2, Cooldown: 5 * time.Second},
		&strategies.AIMDConfig{Initial: 8, Min: 2, Max: 64, Increase: 2, Decrease: 0.5},
		&adaptiveSettings{AdaptiveConfig: strategies.AdaptiveConfig{Initial: 8, Min: 2, Max: 64, Decrease: 0.8, Growth: 4, ProbeAfter: 2.5},
			StateFile: "/tmp/s.json"},
	}
	for i, st := range s.Strategies {
		if !reflect.DeepEqual(st.Config, want[i]) {
			t.Errorf("%s (%s): Config = %+v, want %+v", st.Name, st.Kind, st.Config, want[i])
		}
		if _, err := newStrategy(&st, nil, nil); err != nil {
			t.Errorf("%s: newStrategy: %v", st.Name, err)
		}
	}
	for kind, params := range Kinds {
		if _, ok := kinds[kind]; !ok || len(params) != len(kinds[kind].params) {
			t.Errorf("Kinds[%s] = %v does not match the kinds table", kind, params)
		}
	}
}
