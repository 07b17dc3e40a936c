package loadgen

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/measure"
)

func TestParseExpectation(t *testing.T) {
	tests := []struct {
		key, value string
		want       string // Expectation.String(), or the error's text
		metric     string
		holds      []float64
		fails      []float64
	}{
		{"completed", "200", "= 200", "completed", []float64{200}, []float64{199, 201}},
		{"completed", "1,100", "= 1100", "completed", []float64{1100}, []float64{1000}},
		{"completed", `"160..180"`, "160..180", "completed", []float64{160, 170, 180}, []float64{159, 181}},
		{"wall_seconds", `"2.5..2.625"`, "2.5..2.625", "wall_seconds", []float64{2.5, 2.6}, []float64{2.49, 2.7}},
		{"attempts_per_call", `"<= 1.05"`, "<= 1.05", "attempts_per_call", []float64{1, 1.05}, []float64{1.06}},
		{"attempts_per_call", `"< 1.05"`, "< 1.05", "attempts_per_call", []float64{1}, []float64{1.05}},
		{"throttled", `">= 1"`, ">= 1", "throttled", []float64{1, 9}, []float64{0}},
		{"throttled", `"> 0"`, "> 0", "throttled", []float64{1}, []float64{0}},
		{"throttled", `"== 0"`, "= 0", "throttled", []float64{0}, []float64{1}},
		{"max_wall_over_oracle", "1.05", "<= 1.05", "wall_over_oracle", []float64{1.0, 1.05}, []float64{1.2}},
		{"min_throttled", "100", ">= 100", "throttled", []float64{100, 101}, []float64{99}},
		{"max_attempts", "3", "= 3", "max_attempts", []float64{3}, []float64{2}},
		{"complete", "3", "unknown metric", "", nil, nil},
		{"completed", "lots", `cannot parse "lots"`, "", nil, nil},
		{"completed", `"9..x"`, `invalid range "9..x"`, "", nil, nil},
		{"completed", `"<= x"`, `invalid comparison "<= x"`, "", nil, nil},
		{"completed", "[1, 2]", "want a number, a range", "", nil, nil},
		{"max_throttled", `">= 3"`, "max_throttled is a bound", "", nil, nil},
	}
	for _, tt := range tests {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tt.value), &n); err != nil {
			t.Fatalf("%s: %v", tt.value, err)
		}
		e, err := parseExpectation(tt.key, n.Content[0])
		if tt.metric == "" {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseExpectation(%s: %s) error = %v, want %q", tt.key, tt.value, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseExpectation(%s: %s): %v", tt.key, tt.value, err)
			continue
		}
		if e.String() != tt.want || e.Metric != tt.metric {
			t.Errorf("parseExpectation(%s: %s) = %q on %s, want %q on %s", tt.key, tt.value, e, e.Metric, tt.want, tt.metric)
		}
		for _, v := range tt.holds {
			if !e.Holds(v) {
				t.Errorf("%s %s: Holds(%v) = false, want true", tt.key, e, v)
			}
		}
		for _, v := range tt.fails {
			if e.Holds(v) {
				t.Errorf("%s %s: Holds(%v) = true, want false", tt.key, e, v)
			}
		}
	}
}

func TestFailures(t *testing.T) {
	r := reports.Report{Results: []reports.Result{
		{Name: "a", Expectations: []reports.Check{{Metric: "completed", Expected: "= 200", Actual: "60", OK: false}, {Metric: "attempts", OK: true}}},
		{Name: "b", Expectations: []reports.Check{{Metric: "throttled", OK: true}}},
	}}
	got := Failures(r)
	want := []string{"a: completed: expected = 200, got 60"}
	if len(got) != len(want) || got[0] != want[0] {
		t.Errorf("Failures = %q, want %q", got, want)
	}
}

func TestExpectCheck(t *testing.T) {
	s, err := Parse("t.yaml", []byte(strings.Replace(minimal, "n: 5}", "n: 5, expect: {completed: 10, max_attempts_per_call: 1.05, wall_seconds: \"1..2\"}}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	r := reports.Result{Summary: measure.Summary{Completed: 10, AttemptsPerCall: 1.1, WallSeconds: 1.5}}
	checks := s.Strategies[0].Expect.Check(&r)
	want := []reports.Check{
		{Metric: "completed", Expected: "= 10", Actual: "10", OK: true},
		{Metric: "max_attempts_per_call", Expected: "<= 1.05", Actual: "1.1", OK: false},
		{Metric: "wall_seconds", Expected: "1..2", Actual: "1.5", OK: true},
	}
	if len(checks) != len(want) {
		t.Fatalf("got %d checks, want %d", len(checks), len(want))
	}
	for i := range want {
		if checks[i] != want[i] {
			t.Errorf("check %d = %+v, want %+v", i, checks[i], want[i])
		}
	}
}

// TestAdaptiveStateFile runs adaptive twice with a state file: the first run
// saves what it learned (by key fingerprint, never the key), and the second
// starts from it, at the limit instead of in slow start.
func TestAdaptiveStateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "adaptive.json")
	src := "items: 200\nrequest: {max_tokens: 100, api_key: sk-secret-key-123}\n" +
		"server: {api_keys: [sk-secret-key-123], limits: {max_concurrent: 20, retry_after: 1s}}\n" +
		"strategies: [{name: adaptive, kind: adaptive, requeue: true, max_retries: -1, state_file: " + state + "}]\n"
	s, err := Parse("a.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var first, second reports.Report
	synctest.Test(t, func(t *testing.T) {
		if first, err = Run(t.Context(), s, Options{Listen: ListenMemory}); err != nil {
			return
		}
		second, err = Run(t.Context(), s, Options{Listen: ListenMemory})
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatalf("state file not written: %v", err)
	}
	if strings.Contains(string(data), "sk-secret-key-123") || !strings.Contains(string(data), `"base_url": "embedded-mock"`) {
		t.Errorf("state file:\n%s\nwant the embedded mock keyed by fingerprint, without the key", data)
	}
	a, b := first.Results[0], second.Results[0]
	// The second run skips slow start, so it is faster; its probes above the
	// learned limit may cost a 429 or two, in either run.
	if b.Completed != 200 || b.Throttled > 5 || b.WallSeconds >= a.WallSeconds {
		t.Errorf("second run: %d completed, %d 429s in %.2f s; first: %d 429s in %.2f s; want all, at most 5 429s, faster",
			b.Completed, b.Throttled, b.WallSeconds, a.Throttled, a.WallSeconds)
	}
	t.Logf("first run: %d 429s, %.2f s; second: %d 429s, %.2f s", a.Throttled, a.WallSeconds, b.Throttled, b.WallSeconds)
}

// TestAdaptiveStateFileVirtual: a --virtual run starts from the state file
// but leaves it as it was (a simulated run learned the mock's model, dated
// 2000), and writes none where there was none.
func TestAdaptiveStateFileVirtual(t *testing.T) {
	state := filepath.Join(t.TempDir(), "adaptive.json")
	src := "items: 200\nrequest: {max_tokens: 100}\nserver: {limits: {max_concurrent: 20, retry_after: 1s}}\n" +
		"strategies: [{name: adaptive, kind: adaptive, requeue: true, max_retries: -1, state_file: " + state + "}]\n"
	s, err := Parse("a.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cold, err := Run(t.Context(), s, Options{Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a simulated run wrote the state file (stat: %v)", err)
	}
	synctest.Test(t, func(t *testing.T) { _, err = Run(t.Context(), s, Options{Listen: ListenMemory}) }) // a real run learns the limit
	if err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	warm, err := Run(t.Context(), s, Options{Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(state); err != nil || !bytes.Equal(after, saved) {
		t.Errorf("a simulated run changed the state file: %v\nbefore:\n%s\nafter:\n%s", err, saved, after)
	}
	if c, w := cold.Results[0], warm.Results[0]; w.Completed != 200 || w.WallSeconds >= c.WallSeconds {
		t.Errorf("simulated run from the saved state: %d completed in %.2f s; from nothing %.2f s; want all, faster", w.Completed, w.WallSeconds, c.WallSeconds)
	}
}
