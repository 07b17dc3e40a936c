package loadgen

import (
	"fmt"
	"testing"
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
			rep := runScenario(t, s)
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
