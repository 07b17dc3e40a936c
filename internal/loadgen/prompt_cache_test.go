package loadgen

import (
	"testing"
	"testing/synctest"

	"github.com/ratelab/ratelab/internal/reports"
)

// TestPromptCacheVirtual runs prompt-cache.yaml's token-first row in
// virtual time as shipped, with the default workers (every item taken, and
// its cost estimated, before the first response), and without
// system_cache: the cache learned from the responses makes it twice as
// fast as estimates made blind, and the cache itself some seventy times
// faster than none.
func TestPromptCacheVirtual(t *testing.T) {
	run := func(change func(*Scenario)) reports.Result {
		t.Helper()
		s, err := Load("../../scenarios/prompt-cache.yaml")
		if err != nil {
			t.Fatal(err)
		}
		change(s)
		var rep reports.Report
		synctest.Test(t, func(t *testing.T) {
			rep, err = Run(t.Context(), s, Options{Listen: ListenMemory, Only: []string{"token-first"}})
		})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Results[0]
	}
	shipped := run(func(*Scenario) {})
	blind := run(func(s *Scenario) { s.Workers = s.Items.Count() })
	none := run(func(s *Scenario) { s.Request.SystemCache = "" })
	for _, tt := range []struct {
		name    string
		r       reports.Result
		wallMS  int64
		comment string
	}{
		{"shipped", shipped, 16750, "the cache learned after the first wave"},
		{"workers 200", blind, 34780, "every estimate made before the first response"},
		{"no system_cache", none, 1158750, "nothing cached: ITPM binds"},
	} {
		if tt.r.Completed != 200 || tt.r.Throttled != 0 {
			t.Errorf("%s: completed %d, 429s %d; want 200, 0", tt.name, tt.r.Completed, tt.r.Throttled)
		}
		if got := int64(tt.r.WallSeconds*1000 + 0.5); got < tt.wallMS*99/100 || got > tt.wallMS*101/100 {
			t.Errorf("%s (%s): wall = %d ms, want %d ms ±1%%", tt.name, tt.comment, got, tt.wallMS)
		}
	}
	t.Logf("wall: %.3f s shipped, %.3f s with 200 workers, %.3f s without system_cache", shipped.WallSeconds, blind.WallSeconds, none.WallSeconds)
	if shipped.WallSeconds*2 > blind.WallSeconds || shipped.WallSeconds*50 > none.WallSeconds {
		t.Errorf("wall %.2f s with the cache learned, %.2f s blind, %.2f s uncached: want at least 2x and 50x",
			shipped.WallSeconds, blind.WallSeconds, none.WallSeconds)
	}
}
