package loadgen

import (
	"strings"
	"testing"
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
