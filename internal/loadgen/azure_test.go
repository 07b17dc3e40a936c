package loadgen

import (
	"os"
	"path/filepath"
	"testing"
)

// azureScenario is 200 calls to an Azure OpenAI deployment whose own
// limit (10 concurrent, azure.deployments) binds, not the key's: 0.5 s
// each (100 tokens at 5 ms), so the oracle is 10 s. One row per strategy
// kind.
const azureScenario = `
name: azure
seed: 1
items:
  - count: 200
    provider: azure-openai
    model: chat-prod
request:
  max_tokens: 100
server:
  output: {length: max_tokens}
  latency: {per_token: 5ms}
  azure:
    deployments:
      chat-prod: {model: gpt-4o, limits: {max_concurrent: 10, retry_after: 1s}}
strategies:
  - {name: unbounded, kind: unbounded, max_retries: 2, expect: {min_throttled: 1}}
  - {name: semaphore(10), kind: semaphore, n: 10, max_retries: 2, expect: {completed: 200}}
  - {name: per-provider, kind: per-provider, limits: {azure-openai: 10}, expect: {completed: 200}}
  - {name: token-bucket, kind: token-bucket, rpm: 1200, max_retries: 5, requeue: true, expect: {completed: 200}}
  - {name: token-first, kind: token-first, n: 10, tpm: 10000000, expect: {completed: 200}}
  - {name: aimd, kind: aimd, requeue: true, max_retries: 10, expect: {completed: 200}}
  - {name: aimd-delay, kind: aimd-delay, requeue: true, max_retries: 10, expect: {completed: 200}}
  - {name: adaptive, kind: adaptive, requeue: true, max_retries: 10, expect: {completed: 200}}
`

// TestAzureScenarioVirtual runs provider azure-openai under every strategy
// kind against the embedded mock's Azure deployment path, in virtual time.
func TestAzureScenarioVirtual(t *testing.T) {
	path := filepath.Join(t.TempDir(), "azure.yaml")
	if err := os.WriteFile(path, []byte(azureScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := runVirtual(t, path)
	// The server has no key limits: every 429 is the deployment's.
	checkRows(t, rep, []row{
		// The oracle: 20 rounds of 10 at 0.5 s, no 429.
		{"semaphore(10)", 200, 200, 0, 10000},
		{"per-provider", 200, 200, 0, 10000},
		{"token-first", 200, 200, 0, 10000},
	})
	for _, r := range rep.Results {
		if r.Name == "unbounded" {
			// 200 at once against 10 slots, retry-after 1s, two retries:
			// 10 per second get through.
			if r.Completed != 30 || r.Throttled != 540 {
				t.Errorf("unbounded: %d completed, %d 429s; want 30 and 540", r.Completed, r.Throttled)
			}
			continue
		}
		if r.Completed != 200 {
			t.Errorf("%s: %d completed, want 200", r.Name, r.Completed)
		}
	}
}
