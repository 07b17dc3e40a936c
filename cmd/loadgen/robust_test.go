package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/reports"
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

// TestRunAllRefused: a row whose every call the server refuses with a
// client error (here a scripted 400 on every attempt) fails the run, and
// the output names the error, unless its expect: says the failures are
// intended.
func TestRunAllRefused(t *testing.T) {
	const scenario = `name: refused
items: 10
server:
  faults: {script: [{attempts: 100, status: 400}]}
strategies:
  - {name: plain, kind: semaphore, n: 5}
  - name: intended
    kind: semaphore
    n: 5
    expect: {failed: 10}
`
	stdout, stderr, code := runCLI(t, t.Context(), "run", writeFile(t, "refused.yaml", scenario))
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	out := stdout + stderr
	if !strings.Contains(out, "plain: failed: expected < 10") || !strings.Contains(out, "got 10: 400 invalid_request_error ×10") {
		t.Errorf("output does not name the row and its dominant error:\n%s", out)
	}
	if strings.Contains(out, "intended: failed: expected <") {
		t.Errorf("the row whose expect: intends the failures failed too:\n%s", out)
	}
	if !strings.Contains(stderr, "1 expectation(s) failed") {
		t.Errorf("stderr:\n%s\nwant 1 expectation(s) failed", stderr)
	}
}
