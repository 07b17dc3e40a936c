package loadgen

import (
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/reports"
)

// overLimit is a built-in semaphore above the mock's limit, expected to stay
// within it: the server's count must fail it.
const overLimit = `
name: over
seed: 1
items: 120
request: {provider: anthropic, model: claude-haiku-4-5, max_tokens: 100, prompt: "t {i}"}
server:
  output: {length: max_tokens}
  latency: {per_token: 5ms}
  limits: {max_concurrent: 20, retry_after: 1s}
strategies:
  - name: semaphore(30)
    kind: semaphore
    n: 30
    max_retries: 2
    expect: {max_concurrency: 20, max_early_retries: 0}
  - name: semaphore(20)
    kind: semaphore
    n: 20
    max_retries: 2
    expect: {max_concurrency: 20, max_early_retries: 0}
`

// TestServerViewBuiltinRows checks that built-in rows against the embedded
// mock carry the mock's own figures, so max_concurrency can fail on them.
func TestServerViewBuiltinRows(t *testing.T) {
	rep := runInline(t, "over.yaml", overLimit)
	rows := byName(rep)
	over, ok := rows["semaphore(30)"].Server()
	// The mock answers the attempts above its limit at once, so how many
	// of them overlap is a race at the same virtual instant: a range.
	if !ok || over.PeakConcurrency <= 20 || over.PeakConcurrency > 30 {
		t.Errorf("semaphore(30): peak concurrency %d (measured %v), want 21..30", over.PeakConcurrency, ok)
	}
	if over.ThrottledBy["max_concurrent"] == 0 {
		t.Errorf("semaphore(30): 429s by limit %v, want some by max_concurrent", over.ThrottledBy)
	}
	failed := Failures(rep)
	if want := "semaphore(30): max_concurrency: expected <= 20, got "; len(failed) != 1 || !strings.HasPrefix(failed[0], want) {
		t.Errorf("failures %q, want only %q…", failed, want)
	}
	at, ok := rows["semaphore(20)"].Server()
	if !ok || at.PeakConcurrency != 20 || at.EarlyRetries != 0 {
		t.Errorf("semaphore(20): peak %d, early retries %d (measured %v), want 20, 0", at.PeakConcurrency, at.EarlyRetries, ok)
	}
}

// TestServerViewTarget checks that against a target the server-side
// expectations are refused at validate time, naming the key, and that a
// row without a server view never reads them as 0.
func TestServerViewTarget(t *testing.T) {
	src := `items: 10
target: {url: "http://127.0.0.1:1"}
strategies:
  - name: s
    kind: semaphore
    n: 2
    expect:
      completed: 10
      max_concurrency: 20
      max_early_retries: 0
`
	_, err := Parse("t.yaml", []byte(src))
	if err == nil {
		t.Fatal("Parse: no error for max_concurrency against a target")
	}
	for _, want := range []string{"t.yaml:9: strategies[0].expect.max_concurrency: not measurable against target:",
		"t.yaml:10: strategies[0].expect.max_early_retries: not measurable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nwant it to contain %q", err, want)
		}
	}
	for _, key := range []string{"max_concurrency", "max_early_retries"} {
		e := Expectation{Key: key, Metric: strings.TrimPrefix(key, "max_"), Op: OpLE, V: 20}
		c := e.Check(&reports.Result{Name: "s"})
		if c.OK || !strings.Contains(c.Actual, "not measured") {
			t.Errorf("%s without a server view: %+v, want a failed check saying not measured", key, c)
		}
	}
}
