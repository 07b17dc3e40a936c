package loadgen

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/measure"
)

// TestResultKeepsRetryAfterWaits runs the guide's unbounded row (429s with
// retry-after: 1 s, two retries) and checks that the report row carries
// everything the engine measured: the retry-after waits, in the row and in
// the JSON contract, and the strategy's final stats.
func TestResultKeepsRetryAfterWaits(t *testing.T) {
	rep := runVirtual(t, "../../scenarios/20-concurrent.yaml", "unbounded, retries=2")
	if len(rep.Results) != 1 {
		t.Fatalf("results = %d, want 1", len(rep.Results))
	}
	r := rep.Results[0]
	// 180, 160 and 140 429s on attempts 1, 2 and 3: 20 items complete at
	// each attempt after 0, 1 and 2 waits of 1 s, and the 140 that fail
	// waited twice. Every item is counted, waits or not.
	w := r.WaitRetryAfter
	if w.Count != 200 || w.Max != 2 || w.Mean != 1.7 {
		t.Errorf("wait_retry_after: count %d, max %v, mean %v; want 200, 2, 1.7", w.Count, w.Max, w.Mean)
	}
	if r.Backoff.Mean < w.Mean {
		t.Errorf("backoff mean %v < wait_retry_after mean %v: backoff includes the retry-after waits", r.Backoff.Mean, w.Mean)
	}
	if r.Stats.Throttles != 480 {
		t.Errorf("stats.throttles = %d, want 480 (the strategy's final Stats)", r.Stats.Throttles)
	}

	var buf bytes.Buffer
	if err := reports.JSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	row := doc.Results[0]
	for _, k := range []string{"name", "kind", "items", "completed", "failed", "canceled", "attempts", "throttled",
		"overloaded", "errors", "wall_seconds", "oracle_seconds", "wall_over_oracle", "backoff", "wait_retry_after", "stats"} {
		if _, ok := row[k]; !ok {
			t.Errorf("JSON row has no %q", k)
		}
	}
	var got measure.Percentiles
	if err := json.Unmarshal(row["wait_retry_after"], &got); err != nil || got != w {
		t.Errorf("JSON wait_retry_after = %s (%v), want %+v", row["wait_retry_after"], err, w)
	}
}
