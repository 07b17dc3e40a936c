package loadgen

import (
	"math"
	"strings"
	"testing"
)

// TestBatchVsFanout runs scenarios/batch-vs-fanout.yaml in simulated time
// (--virtual): its expectations, and the comparison docs/batch-api.md
// quotes: the batch API at half the fan-out's cost (the same tokens at
// half the price), in less wall time, with no 429, where the naive
// fan-out collects tens of thousands.
func TestBatchVsFanout(t *testing.T) {
	if testing.Short() {
		t.Skip("50,000 items, three rows")
	}
	s, err := Load("../scenarios/batch-vs-fanout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), s, Options{Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
	if f := Failures(rep); len(f) > 0 {
		t.Fatalf("expectations: %s", strings.Join(f, "; "))
	}
	rows := map[string]int{}
	for i, r := range rep.Results {
		rows[r.Name] = i
		t.Logf("%-24s completed %d, attempts %d, 429s %d, wall %.0f s, $%.2f", r.Name, r.Completed, r.Attempts, r.Throttled, r.WallSeconds, r.CostUSD)
	}
	tb, sem, api := rep.Results[rows["token-bucket(rpm 1000)"]], rep.Results[rows["semaphore(20)"]], rep.Results[rows["batch API"]]
	if tb.InputTokens != api.InputTokens || tb.OutputTokens != api.OutputTokens {
		t.Errorf("tokens: fan-out %d/%d, batch %d/%d: the same items should use the same tokens", tb.InputTokens, tb.OutputTokens, api.InputTokens, api.OutputTokens)
	}
	if tb.CostUSD == 0 || math.Abs(api.CostUSD-tb.CostUSD/2) > 1e-6 {
		t.Errorf("cost: batch $%.4f, fan-out $%.4f: want half", api.CostUSD, tb.CostUSD)
	}
	// One batch of 50,000 at 30 a second after 30 s ends at 1,696.7 s;
	// the polls (1 min doubling to 10 min) read it at 2,100 s.
	if api.WallSeconds != 2100 || api.WallSeconds >= tb.WallSeconds {
		t.Errorf("wall: batch %.1f s (want 2100), fan-out %.1f s", api.WallSeconds, tb.WallSeconds)
	}
	if sem.Throttled == 0 || api.Throttled != 0 {
		t.Errorf("429s: semaphore %d, batch %d", sem.Throttled, api.Throttled)
	}
}

// TestBatchAPIRowErrors: a batch-api row's bad keys are named by file,
// line and key.
func TestBatchAPIRowErrors(t *testing.T) {
	_, err := Parse("b.yaml", []byte(`name: b
items: 10
strategies:
  - name: api
    kind: batch-api
    batch_size: -1
    resubmit: [expired, later]
    poll: 10m
    poll_max: 1m
    n: 3
    expect: {completed: 10}
`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"b.yaml:6: strategies[0].batch_size: must not be negative, got -1",
		`strategies[0].resubmit[1]: want expired, errored or canceled, got "later"`,
		"strategies[0].poll: want 0 < poll <= poll_max, got 10m0s and 1m0s",
		`strategies[0].n: `,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
