package mock

import (
	"strings"
	"testing"
)

// TestBatchesConfigErrors: the batches: block is decoded strictly and
// validated, every problem named by file, line and key.
func TestBatchesConfigErrors(t *testing.T) {
	_, err := ParseConfig([]byte(`batches:
  drain_rate: -1
  errored: 2
  expiry: -1h
  anthropic: {queue_requests: -5, max_request: 3}
  openai: {enqueued_tokens: {"[": 10, gpt-4o*: -1}}
`), "b.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"b.yaml:2: batches.drain_rate: must be in [0, 1e6] requests a second",
		"b.yaml:3: batches.errored: must be a rate in [0, 1], got 2",
		"b.yaml:4: batches.expiry: must be in [0, 8760h], got -1h0m0s",
		`b.yaml:5: batches.anthropic.max_request: unknown key "max_request" (did you mean max_requests?)`,
		`batches.openai.enqueued_tokens.[: want a model pattern such as gpt-4o*, got "["`,
		"batches.openai.enqueued_tokens.gpt-4o*: must not be negative, got -1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	cfg, err := ParseConfig([]byte("batches: {drain_rate: 5, anthropic: {queue_requests: 200000}}\nprices: {m*: {input: 2, output: 8, batch_output: 3}}\n"), "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Batches.DrainRate != 5 || cfg.Batches.Anthropic.QueueRequests != 200000 {
		t.Errorf("decoded %+v", cfg.Batches)
	}
	if in, out := batchPrice(cfg.Prices, "m1"); in != 1 || out != 3 {
		t.Errorf("batch price %v %v, want 1 (half of input) and 3 (batch_output)", in, out)
	}
}
