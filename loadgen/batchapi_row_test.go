package loadgen

import (
	"math"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ratelab/ratelab/reports"
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

// TestBatchAPIRowInBubble runs a small batch-api row both ways a scenario
// runs in simulated time: in a synctest bubble over an in-memory listener
// (as TestScenariosVirtual runs the shipped files, with the mock and
// batch.API on the bubble's time) and under Options.Virtual (a clock.Sim,
// as TestBatchVsFanout runs batch-vs-fanout.yaml). Both give the figures
// of the queue model exactly: 600 requests after 30 s of startup at 30 a
// second end at 50 s, read by the first poll, a minute after the creation,
// at half the synchronous price.
func TestBatchAPIRowInBubble(t *testing.T) {
	src := []byte(`name: small-batch
seed: 1
items: 600
request: {provider: anthropic, model: claude-fable-5-1, max_tokens: 100, prompt_tokens: 200}
server:
  profile: anthropic-start
  output: {length: max_tokens}
strategies:
  - name: batch API
    kind: batch-api
    expect: {completed: 600, throttled: 0, attempts: 600}
`)
	s, err := Parse("small-batch.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	var bubble reports.Report
	synctest.Test(t, func(t *testing.T) {
		bubble, err = Run(t.Context(), s, Options{Listen: ListenMemory})
	})
	if err != nil {
		t.Fatalf("in a bubble: %v", err)
	}
	sim, err := Run(t.Context(), s, Options{Virtual: true})
	if err != nil {
		t.Fatalf("virtual: %v", err)
	}
	for _, rep := range []reports.Report{bubble, sim} {
		if f := Failures(rep); len(f) > 0 {
			t.Errorf("expectations: %s", strings.Join(f, "; "))
		}
		r := rep.Results[0]
		if r.Completed != 600 || r.Attempts != 600 || r.Throttled != 0 || r.WallSeconds != 60 || math.Abs(r.CostUSD-2.10) > 1e-9 {
			t.Errorf("completed %d, attempts %d, 429s %d, wall %v s, $%v; want 600, 600, 0, 60 s, $2.10 (600 × (200 × $5 + 100 × $25) per million)",
				r.Completed, r.Attempts, r.Throttled, r.WallSeconds, r.CostUSD)
		}
	}
}
