package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/reports"
)

// TestRunTimelineTooFine: --timeline 1ns (two hundred million samples a
// second) writes a report.json whose timelines keep at most
// engine.MaxTimelinePoints points each, and stderr says which resolution
// was used instead.
func TestRunTimelineTooFine(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runCLI(t, t.Context(), "run", writeFile(t, "quick.yaml", quick), "--timeline", "1ns", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep reports.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results {
		tl := res.Timeline
		if tl == nil || len(tl.Points) > engine.MaxTimelinePoints || tl.RequestedResolutionSeconds != 1e-9 || tl.ResolutionSeconds < 1e-3 {
			t.Errorf("%s: timeline %d points at %g s (requested %g s), want at most %d at 1 ms or more, requested 1e-09",
				res.Name, len(tl.Points), tl.ResolutionSeconds, tl.RequestedResolutionSeconds, engine.MaxTimelinePoints)
		}
		if !strings.Contains(stderr, "note: "+res.Name+": timeline resolution 1ns asked, ") {
			t.Errorf("stderr does not say the resolution of %s was changed:\n%s", res.Name, stderr)
		}
	}
	t.Logf("report.json %d bytes; stderr:\n%s", len(data), stderr)
}
