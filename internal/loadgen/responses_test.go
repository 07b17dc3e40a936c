package loadgen

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/mock"
)

// TestResponsesScenarioVirtual: scenarios/openai-responses.yaml, the guide's
// table sent to the Responses API, gives the Messages API's exact figures:
// the mock runs both on one admission and latency model.
func TestResponsesScenarioVirtual(t *testing.T) {
	rep := runVirtual(t, "../../scenarios/openai-responses.yaml")
	checkRows(t, rep, []row{
		{"unbounded, retries=2", 60, 540, 480, 2500},
		{"semaphore(20)", 200, 200, 0, 5000},
	})
	anthropic := runVirtual(t, "../../scenarios/20-concurrent.yaml", "adaptive")
	resp := runVirtual(t, "../../scenarios/openai-responses.yaml", "adaptive")
	a, r := anthropic.Results[0], resp.Results[0]
	if a.Attempts != r.Attempts || a.Throttled != r.Throttled || a.WallSeconds != r.WallSeconds {
		t.Errorf("adaptive: Responses API %d attempts, %d 429s, %gs; Messages API %d, %d, %gs; want the same",
			r.Attempts, r.Throttled, r.WallSeconds, a.Attempts, a.Throttled, a.WallSeconds)
	}
}

// TestRunBatchResponses: loadgen batch --provider openai-responses against
// the embedded mock writes every item's answer, the mock's text.
func TestRunBatchResponses(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "batch.yaml")
	os.WriteFile(cfgPath, []byte("server:\n  latency: {per_token: 1ms}\n  limits: {max_concurrent: 4}\n  output: {tokens: {fixed: 16}}\n"), 0o644)
	cfg, err := LoadBatchConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "items.jsonl")
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"id": "%d", "prompt": "p", "max_tokens": 32}`, i))
	}
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	for _, stream := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("out-%v.jsonl", stream))
		rep, err := RunBatch(t.Context(), BatchOptions{Input: in, Output: out, Config: cfg, Mock: true,
			Provider: "openai-responses", Stream: stream, Workers: 8})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.AllOK() || rep.Completed != 40 || rep.Provider != "openai-responses" || rep.Model != "gpt-5.4-mini" {
			t.Fatalf("stream=%v: %+v, want 40 completed by openai-responses with gpt-5.4-mini", stream, rep)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
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
		if n != 40 {
			t.Errorf("stream=%v: %d results, want 40", stream, n)
		}
	}
}

// TestResponsesMinOutput: the Responses API refuses max_output_tokens below
// 16, so a scenario asking for fewer is an error naming the key.
func TestResponsesMinOutput(t *testing.T) {
	const yaml = `name: x
items: 10
request: {provider: openai-responses, max_tokens: 8}
strategies: [{name: s, kind: semaphore, n: 2}]
`
	_, err := Parse("x.yaml", []byte(yaml))
	if err == nil || !strings.Contains(err.Error(), `x.yaml:3: request.max_tokens: 8 is less than the openai-responses API accepts (at least 16 output tokens)`) {
		t.Errorf("Parse: %v, want an error naming request.max_tokens and the minimum of 16", err)
	}
	if _, err := Parse("x.yaml", []byte(strings.Replace(yaml, "max_tokens: 8", "max_tokens: 16", 1))); err != nil {
		t.Errorf("Parse with max_tokens 16: %v", err)
	}
}
