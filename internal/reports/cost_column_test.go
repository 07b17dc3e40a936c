package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/measure"
)

// A batch-api row is compared with fan-out rows on price, so the table
// shows every row's cost; a table without one is unchanged.
func TestTableCostColumnWithBatchAPIRow(t *testing.T) {
	fanout := Result{Name: "semaphore(20)", Kind: "semaphore", Summary: measure.Summary{Items: 10, Completed: 10, Attempts: 10}, CostUSD: 3.5}
	for _, tc := range []struct {
		rows []Result
		want bool
	}{
		{[]Result{fanout}, false},
		{[]Result{fanout, {Name: "batch API", Kind: "batch-api", Summary: measure.Summary{Items: 10, Completed: 10, Attempts: 10}, CostUSD: 1.75}}, true},
	} {
		var b bytes.Buffer
		if err := Table(&b, Report{Scenario: "s", Results: tc.rows}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if got := strings.Contains(out, "cost $"); got != tc.want {
			t.Errorf("rows %d: cost column %v, want %v:\n%s", len(tc.rows), got, tc.want, out)
		}
		if tc.want && (!strings.Contains(out, "3.50") || !strings.Contains(out, "1.75")) {
			t.Errorf("want each row's cost (3.50, 1.75):\n%s", out)
		}
	}
}
