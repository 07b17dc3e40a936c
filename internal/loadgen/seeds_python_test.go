package loadgen

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ratelab/ratelab/internal/pyenv"
	"github.com/ratelab/ratelab/internal/reports"
)

// TestSeedsPython runs scenarios/seeds-python.yaml: the seeds' own Python
// programs (examples/seeds/: the guide's anthropic-SDK clients and the
// semaphore seed's LiteLLM Listing 2.9) as real processes against the
// guide's mock, with the venv's interpreter (make py-deps) first on PATH,
// as a user with the venv activated runs them. The file's expectations are
// the guide's figures, counted by the server: gather with two retries at
// least 60 of 200 in at most 540 attempts with at most 480 429s, with ten
// 200 in at most 1,100 (the guide's 60, 540, 480 and 1,100, 900 exactly
// when no wave of retries spreads past the 0.5 s a slot is held),
// Semaphore(20) and (10) and Listing 2.9 200 in 200 without a 429. Beside
// them the test asserts what the file cannot say: how the 429s fall by
// attempt (every wave of retries meets the same 20 slots) and that
// Semaphore(50), the guide's racy row, loses some calls but never more
// than the 429s' arithmetic allows, and that LiteLLM's num_retries=3 makes
// four attempts a call at most.
func TestSeedsPython(t *testing.T) {
	rep := runWithVenv(t, "../../scenarios/seeds-python.yaml")
	rows := byName(rep)
	for _, r := range rep.Results {
		st := ""
		if r.Command != nil {
			st = r.Command.Status
		}
		t.Logf("%s: %d of %d, %d attempts, %d 429s by attempt %v, %.2f s, peak %d %s",
			r.Name, r.Completed, r.Items, r.Attempts, r.Throttled, r.ThrottledByAttempt, r.WallSeconds, peak(r), st)
	}
	// The gather rows: waves of retries, each a second after the last.
	// Every attempt is a success or a 429 (attempts = completed + 429s),
	// and a wave is never refused more than the wave before less the 20
	// slots it finds free; exactly 180, 160, 140, … when each wave
	// arrives within the 0.5 s a call holds its slot, as on an idle
	// machine (on a loaded one a wave spreads, and its late retries find
	// the slots its first admitted calls freed: 180, 160, 131 once).
	// With two retries, a call refused three times fails: the third
	// wave's 429s are the failed calls.
	for _, c := range []struct {
		row     string
		retries int
	}{{"guide gather, retries=2 (anthropic SDK)", 2}, {"guide gather, retries=10 (anthropic SDK)", 10}} {
		g := rows[c.row]
		by := g.ThrottledByAttempt
		ok := len(by) >= 1 && len(by) <= c.retries+1 && by[0] <= 180 && g.Attempts == int64(g.Completed)+g.Throttled
		var sum int64
		for i, n := range by {
			sum += n
			if i > 0 && n > by[i-1]-20 {
				ok = false
			}
		}
		if len(by) == c.retries+1 && int64(g.Failed) != by[c.retries] || len(by) <= c.retries && g.Failed != 0 {
			ok = false
		}
		if !ok || sum != g.Throttled {
			t.Errorf("%s: 429s by attempt %v (sum %d), %d attempts, %d completed, %d failed, %d 429s; want at most %d waves, at most 180 first, each wave at least 20 fewer than the one before, summing to the 429s, attempts = completed + 429s, the failed calls those refused on the last attempt",
				c.row, by, sum, g.Attempts, g.Completed, g.Failed, g.Throttled, c.retries+1)
		}
	}
	// LiteLLM's num_retries=3 is the openai SDK's max_retries (four
	// attempts, X-Stainless-Retry-Count 0..3), and, because tenacity is
	// installed (google-genai requires it), LiteLLM's completion_with_retries
	// then retries the whole call too, each time with the SDK's four
	// attempts, its retry count starting again at 0. So a first attempt is
	// counted more often than the 200 first calls' 180 429s, the attempts
	// exceed the SDK's 4 a call (the server, grouping by retry count, sees
	// each restart as a new call of at most 4), and some calls still fail. Later waves are
	// racy: the listing sends no max_tokens, so a call holds its slot
	// 1.28 s, and a retry 1 s after its 429 may find a slot freed or not.
	l := rows["Listing 2.9 unbounded (LiteLLM)"]
	t.Logf("Listing 2.9 unbounded: %d of 200, %d attempts, at most %d a call, 429s by attempt %v, %d failed", l.Completed, l.Attempts, l.MaxAttempts, l.ThrottledByAttempt, l.Failed)
	if by := l.ThrottledByAttempt; len(by) != 4 || by[0] <= 180 || l.Attempts <= 4*200 || l.Failed == 0 {
		t.Errorf("Listing 2.9 unbounded: 429s by attempt %v, %d attempts, %d failed, at most %d a call; want four SDK attempt counts, more than 180 429s at the SDK's first (LiteLLM's own retries restart it), more than 800 attempts, some failed", by, l.Attempts, l.Failed, l.MaxAttempts)
	}
	r := rows["guide Semaphore(50) (anthropic SDK)"]
	if r.Failed == 0 || r.Completed < 100 || r.Attempts != int64(r.Completed)+r.Throttled || r.Throttled < 3*int64(r.Failed) {
		t.Errorf("Semaphore(50): %d of 200, %d attempts, %d 429s; want some failed, at least 100 done, attempts = completed + 429s, three 429s a failed call (the guide: 160, 320, 160)",
			r.Completed, r.Attempts, r.Throttled)
	}
}

// runWithVenv runs the scenario at path with the project's venv first on
// PATH, as a user with it activated runs the file's python3 rows, and
// reports every expectation of the file that failed.
func runWithVenv(t *testing.T, path string) reports.Report {
	t.Helper()
	py := pyenv.Python(t)
	t.Setenv("PATH", filepath.Dir(py)+string(os.PathListSeparator)+os.Getenv("PATH"))
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), s, Options{CommandOut: t.TempDir()})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rep.Results) != len(s.Strategies) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(s.Strategies))
	}
	for _, f := range Failures(rep) {
		t.Errorf("%s", f)
	}
	return rep
}

// TestSeedsPerProvider runs scenarios/seeds-per-provider.yaml: the
// semaphore seed's Listing 2.12 (one semaphore per provider, OpenAI 30 and
// Anthropic 10, around LiteLLM) against a key whose Claude and GPT models
// have pools of 10 and 30 slots. The file's expectations are the listing's
// promise, counted by the server: 400 of 400 in 400 attempts, no 429,
// never more than 40 in flight; ratelab's per-provider strategy the same at
// the oracle's 5 s; one shared semaphore(40) meets 429s. Beside them the
// test asserts that the listing fills both semaphores (40 in flight) and
// that the shared semaphore, which nothing stops from sending more than a
// pool's slots of one provider at once, loses calls to its retries.
func TestSeedsPerProvider(t *testing.T) {
	rep := runWithVenv(t, "../../scenarios/seeds-per-provider.yaml")
	rows := byName(rep)
	if got := rows["Listing 2.12 (LiteLLM, 30 and 10)"]; peak(got) != 40 {
		t.Errorf("Listing 2.12: peak concurrency %d, want 40 (both semaphores full)", peak(got))
	}
	if sh := rows["semaphore(40), shared"]; sh.Failed == 0 || sh.Completed+sh.Failed != 400 || sh.Throttled < 3*int64(sh.Failed) {
		t.Errorf("shared semaphore(40): %d of 400, %d failed, %d 429s; want some failed after three 429s each, every item accounted for", sh.Completed, sh.Failed, sh.Throttled)
	}
}
