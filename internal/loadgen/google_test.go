package loadgen

import (
	"testing"
)

// The Google providers through loadgen (docs/gemini.md): one scenario of
// three item groups, Gemini on AI Studio, Gemini on Vertex AI and Claude
// on Vertex AI, each with its own key, in virtual time, under every kind
// of strategy; and loadgen batch --provider for each.

const googleScenario = `name: google
seed: 1
items:
  - {count: 40, provider: gemini, api_key: gemini-key}
  - {count: 40, provider: vertex, model: gemini-2.5-pro, api_key: vertex-token}
  - {count: 40, provider: vertex-anthropic, api_key: claude-token}
request: {max_tokens: 20}
server:
  output: {length: max_tokens}
  api_keys: [gemini-key, vertex-token, claude-token]
  latency: {per_token: 5ms}
  limits: {max_concurrent: 4, retry_after: 1s}
strategies:
  - {name: unbounded, kind: unbounded, max_retries: -1, requeue: true, expect: {completed: 120}}
  - {name: semaphore, kind: semaphore, n: 12, max_retries: -1, requeue: true, expect: {completed: 120}}
  - name: per-provider
    kind: per-provider
    limits: {gemini: 4, vertex: 4, vertex-anthropic: 4}
    expect: {completed: 120, attempts: 120, throttled: 0}
  - {name: token-bucket, kind: token-bucket, rpm: 6000, max_retries: -1, requeue: true, expect: {completed: 120}}
  - {name: token-first, kind: token-first, n: 12, tpm: 1000000, max_retries: -1, requeue: true, expect: {completed: 120}}
  - {name: aimd, kind: aimd, requeue: true, max_retries: -1, expect: {completed: 120}}
  - {name: aimd-delay, kind: aimd-delay, requeue: true, max_retries: -1, expect: {completed: 120}}
  - {name: adaptive, kind: adaptive, requeue: true, max_retries: -1, expect: {completed: 120}}
`

func TestGoogleProvidersScenario(t *testing.T) {
	rep := runInline(t, "google.yaml", googleScenario)
	if len(rep.Results) != 8 {
		t.Fatalf("%d results, want 8", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Completed != 120 || r.Failed != 0 {
			t.Errorf("%s: %d completed, %d failed; want 120, 0", r.Name, r.Completed, r.Failed)
		}
		if r.Name == "per-provider" && (r.Attempts != 120 || r.Throttled != 0 || r.WallSeconds != 1) {
			// 40 calls per provider, 4 at a time (10 rounds), 20 tokens × 5 ms = 100 ms each.
			t.Errorf("per-provider: %d attempts, %d 429s, %gs; want 120, 0, 1 s", r.Attempts, r.Throttled, r.WallSeconds)
		}
	}
	if r := rep.Results[0]; r.Throttled == 0 {
		t.Errorf("unbounded: no 429s; want Google's RESOURCE_EXHAUSTED answers counted as throttles")
	}
}
