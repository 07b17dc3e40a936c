package loadgen

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/reports"
)

// bedrockScenario is 20-concurrent.yaml's experiment sent as Bedrock
// Converse calls: 200 calls of 0.5 s against 20 concurrent requests per
// key. Bedrock sends no retry-after, so the rows' figures are the
// strategies' own pacing, not the server's.
const bedrockScenario = `name: bedrock
seed: 1
items: 200
request: {provider: bedrock, max_tokens: 120, prompt: "Classify ticket {i}.", stream: %v}
server:
  latency: {per_token: 5ms}
  output: {tokens: {fixed: 100}}
  limits: {max_concurrent: 20}
strategies:
  - {name: semaphore(20), kind: semaphore, n: 20, max_retries: 2, expect: {completed: 200, attempts: 200, throttled: 0}}
  - {name: unbounded, kind: unbounded, max_retries: 0, expect: {completed: 20, failed: 180, attempts: 200, throttled: 180}}
  - {name: adaptive, kind: adaptive, requeue: true, max_retries: 10, expect: {completed: 200}}
`

// TestBedrockScenarioVirtual: loadgen run with provider bedrock against
// the embedded mock, JSON and streamed, in virtual time: the semaphore at
// the limit is the oracle (200 attempts, no 429, 5 s), unbounded without
// retries gets exactly the 20 slots, adaptive completes all 200.
func TestBedrockScenarioVirtual(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			s, err := Parse("bedrock.yaml", []byte(fmt.Sprintf(bedrockScenario, stream)))
			if err != nil {
				t.Fatal(err)
			}
			if s.Request.Model != DefaultBedrockModel {
				t.Errorf("model = %q, want the default %q", s.Request.Model, DefaultBedrockModel)
			}
			var rep reports.Report
			synctest.Test(t, func(t *testing.T) {
				rep, err = Run(t.Context(), s, Options{Listen: ListenMemory})
			})
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, rep, []row{
				{"semaphore(20)", 200, 200, 0, 5000},
				{"unbounded", 20, 200, 180, 500},
			})
			for _, r := range rep.Results {
				if r.Name == "adaptive" && r.Completed != 200 {
					t.Errorf("adaptive completed %d, want 200", r.Completed)
				}
			}
		})
	}
}

// TestRunBatchBedrock: loadgen batch --provider bedrock against the
// embedded mock writes every item's answer, the mock's text.
func TestRunBatchBedrock(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "batch.yaml")
	os.WriteFile(cfgPath, []byte("server:\n  latency: {per_token: 1ms}\n  limits: {max_concurrent: 4}\n  output: {tokens: {fixed: 16}}\n"), 0o644)
	cfg, err := LoadBatchConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "items.jsonl")
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf(`{"id": "%d", "prompt": "p", "max_tokens": 32}`, i))
	}
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	for _, stream := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("out-%v.jsonl", stream))
		rep, err := RunBatch(t.Context(), BatchOptions{Input: in, Output: out, Config: cfg, Mock: true,
			Provider: "bedrock", Stream: stream, Workers: 8})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.AllOK() || rep.Completed != 30 || rep.Provider != "bedrock" || rep.Model != DefaultBedrockModel {
			t.Fatalf("stream=%v: %+v, want 30 completed by bedrock with %s", stream, rep, DefaultBedrockModel)
		}
		data, _ := os.ReadFile(out)
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.Text != mock.Filler(16) {
				t.Errorf("stream=%v: result %s: want text %q", stream, line, mock.Filler(16))
			}
			n++
		}
		if n != 30 {
			t.Errorf("stream=%v: %d results, want 30", stream, n)
		}
	}
}
