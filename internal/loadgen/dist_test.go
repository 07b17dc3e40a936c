package loadgen

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputDistributionsVirtual runs 2,000 calls against a mock whose
// answers' lengths are lognormal, then drawn from a histogram file next to
// the scenario, and holds the mean length the client was billed to the
// distribution's (a bound of several standard errors; the run is seeded).
func TestOutputDistributionsVirtual(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lengths.txt"), []byte("# observed\n20 1\n60 2\n100 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tokens string
		mean   float64
	}{
		{"{lognormal: {mean: 60, sigma: 0.5}}", 60},
		{"{histogram: lengths.txt}", 60},
	} {
		path := filepath.Join(dir, "dist.yaml")
		src := `name: dist
items: 2000
request: {max_tokens: 1000}
server:
  latency: {per_token: 1ms}
  limits: {max_concurrent: 100}
  output: {tokens: ` + tt.tokens + `}
strategies:
  - {name: sem, kind: semaphore, n: 100}
`
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		rep := runVirtual(t, path)
		r := rep.Results[0]
		got := float64(r.OutputTokens) / float64(r.Completed)
		if r.Completed != 2000 || math.Abs(got-tt.mean)/tt.mean > 0.04 {
			t.Errorf("%s: %d completed, mean output %.2f tokens; want 2000 and %v within 4 %%", tt.tokens, r.Completed, got, tt.mean)
		}
		if r.OracleSeconds <= 0 || math.Abs(r.OracleSeconds-20*0.06) > 0.001 {
			t.Errorf("%s: oracle %v s, want 20 waves of the mean call, 1.2 s", tt.tokens, r.OracleSeconds)
		}
	}
}

func TestOutputDistributionErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("10\nlots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t.yaml")
	src := sweepScenario("  - {name: s, kind: semaphore, n: 2}\n")
	src = strings.Replace(src, "server:\n", "server:\n  output: {tokens: {histogram: bad.txt}}\n", 1)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := path + ":4: server.output.tokens.histogram: " + filepath.Join(dir, "bad.txt") + `:2: want a token count from 1 to 128000, got "lots"`
	if err == nil || err.Error() != want {
		t.Errorf("Load: err = %v\nwant %s", err, want)
	}
}
