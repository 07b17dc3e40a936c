package loadgen

import (
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/reports"
)

// TestOwnBoundNote checks that a row held by its own configured bound (an
// adaptive max below the server's limit) says so in its result and under
// the table, and that a row the server limited does not.
func TestOwnBoundNote(t *testing.T) {
	rep := runVirtual(t, "../../scenarios/published-rpm.yaml", "adaptive", "adaptive, max 3")
	var b strings.Builder
	if err := reports.Table(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		want := ""
		if r.Name == "adaptive, max 3" {
			want = "max: 3"
		}
		if r.Stats.Bound != want {
			t.Errorf("%s: Stats.Bound = %q, want %q", r.Name, r.Stats.Bound, want)
		}
	}
	if want := "adaptive, max 3: ended at its own bound (max: 3)"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "adaptive: ended") {
		t.Errorf("the unbounded adaptive row has a bound note:\n%s", b.String())
	}
}
