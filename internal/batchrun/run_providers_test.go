package batchrun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/mock"
)

// A providerBatch is a loadgen batch --provider run against the embedded
// mock, streamed and not: the per-provider batch tests below
// (TestRunBatchAzure, …Bedrock, …Google, …Responses).
type providerBatch struct {
	server string // the batch configuration's server: block, indented
	items  int    // the number of input lines
	system string // each item's system prompt ("": none)
	// provider and model are the provider asked for and the model the
	// report must name.
	provider, model string
	// text, when not 0, is the length in tokens of every result's text,
	// the mock's filler.
	text int
}

// run writes b's configuration and items, runs the batch streamed and
// not, and checks that every item completed with b.provider on b.model and,
// when b.text is set, that the output holds one result a line with the
// mock's text.
func (b providerBatch) run(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "batch.yaml")
	if err := os.WriteFile(cfgPath, []byte("server:\n"+b.server), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadgen.LoadBatchConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	system := ""
	if b.system != "" {
		system = fmt.Sprintf(` "system": %q,`, b.system)
	}
	in := filepath.Join(dir, "items.jsonl")
	var lines []string
	for i := range b.items {
		lines = append(lines, fmt.Sprintf(`{"id": "%d", "prompt": "p",%s "max_tokens": 32}`, i, system))
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("out-%s-%v.jsonl", b.provider, stream))
		rep, err := Run(t.Context(), Options{Input: in, Output: out, Config: cfg, Mock: true,
			Provider: b.provider, Stream: stream, Workers: 8})
		if err != nil {
			t.Fatalf("%s stream=%v: %v", b.provider, stream, err)
		}
		if !rep.AllOK() || rep.Completed != b.items || rep.Provider != b.provider || rep.Model != b.model {
			t.Errorf("%s stream=%v: %+v, want %d completed by %s with %s", b.provider, stream, rep, b.items, b.provider, b.model)
			continue
		}
		if b.text == 0 {
			continue
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
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.Text != mock.Filler(b.text) {
				t.Errorf("%s stream=%v: result %s: want text %q", b.provider, stream, line, mock.Filler(b.text))
			}
			n++
		}
		if n != b.items {
			t.Errorf("%s stream=%v: %d results, want %d", b.provider, stream, n, b.items)
		}
	}
}

// TestRunBatchAzure: loadgen batch --provider azure-openai against the
// embedded mock sends every item to the deployment its model names.
func TestRunBatchAzure(t *testing.T) {
	providerBatch{
		server:   "  latency: {per_token: 1ms}\n  output: {tokens: {fixed: 16}}\n  azure:\n    deployments:\n      gpt-5.4-mini: {model: gpt-4o, limits: {max_concurrent: 4}}\n",
		items:    40,
		provider: "azure-openai", model: "gpt-5.4-mini", // the deployment
		text: 16,
	}.run(t)
}

// TestRunBatchBedrock: loadgen batch --provider bedrock against the
// embedded mock writes every item's answer, the mock's text.
func TestRunBatchBedrock(t *testing.T) {
	providerBatch{
		server:   "  latency: {per_token: 1ms}\n  limits: {max_concurrent: 4}\n  output: {tokens: {fixed: 16}}\n",
		items:    30,
		provider: "bedrock", model: loadgen.DefaultBedrockModel,
		text: 16,
	}.run(t)
}

func TestRunBatchGoogle(t *testing.T) {
	for _, tc := range []struct{ provider, model string }{
		{"gemini", loadgen.DefaultGeminiModel}, {"vertex", loadgen.DefaultGeminiModel}, {"vertex-anthropic", loadgen.DefaultVertexAnthropicModel},
	} {
		providerBatch{
			server:   "  latency: {per_token: 1ms}\n  limits: {max_concurrent: 4}\n  output: {tokens: {fixed: 16}}\n",
			items:    20,
			system:   "Be brief.",
			provider: tc.provider, model: tc.model,
		}.run(t)
	}
}

// TestRunBatchResponses: loadgen batch --provider openai-responses against
// the embedded mock writes every item's answer, the mock's text.
func TestRunBatchResponses(t *testing.T) {
	providerBatch{
		server:   "  latency: {per_token: 1ms}\n  limits: {max_concurrent: 4}\n  output: {tokens: {fixed: 16}}\n",
		items:    40,
		provider: "openai-responses", model: "gpt-5.4-mini",
		text: 16,
	}.run(t)
}
