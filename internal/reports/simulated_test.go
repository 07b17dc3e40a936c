package reports

import (
	"bytes"
	"strings"
	"testing"
)

// TestSimulatedMarked: a simulated report says so in every format, and a
// real one in none.
func TestSimulatedMarked(t *testing.T) {
	for _, simulated := range []bool{false, true} {
		r := Report{Scenario: "s", Target: "embedded mock", Simulated: simulated,
			Results: []Result{{Name: "sem", Kind: "semaphore"}}}
		marks := map[string]string{
			"table":    SimulatedNote,
			"markdown": "**Simulated:**",
			"json":     `"simulated": true`,
			"csv":      ",true\n",
		}
		for format, mark := range marks {
			render, err := Format(format)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := render(&b, r); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), mark); got != simulated {
				t.Errorf("%s, simulated %v: contains %q = %v\n%s", format, simulated, mark, got, b.String())
			}
		}
		var b bytes.Buffer
		if err := HTML(&b, r); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), `class="tag simulated"`); got != simulated {
			t.Errorf("html, simulated %v: badge = %v", simulated, got)
		}
	}
}
