package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// TestValidateEveryProblemAtOnce: a kind of the wrong type does not hide the
// duplicate name or the negative n of the same file, and n: -3 gets one
// message (not also "required").
func TestValidateEveryProblemAtOnce(t *testing.T) {
	bad := writeFile(t, "bad.yaml", `name: bad
items: 30
strategies:
  - name: a
    kind: {semaphore: 5}
  - name: a
    kind: semaphore
    n: -3
`)
	stdout, stderr, code := runCLI(t, t.Context(), "validate", bad)
	want := bad + ":5: strategies[0].kind: want a string, got a mapping\n" +
		bad + `:6: strategies[1].name: duplicate strategy name "a" (also strategies[0])` + "\n" +
		bad + ":8: strategies[1].n: must not be negative, got -3\n"
	if code != exitFailed || stdout != want {
		t.Errorf("validate: exit %d, stdout:\n%s\nwant exit 1 and:\n%s", code, stdout, want)
	}
	if stderr != "loadgen: validate: 1 of 1 files invalid\n" {
		t.Errorf("stderr = %q", stderr)
	}
}

// TestRunAllUnauthorized: against a target that refuses the key, every
// call fails with 401; the run says so, naming the error and its count, and
// exits 1 rather than printing a table of zeros as a success.
func TestRunAllUnauthorized(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.APIKeys = []string{"the-right-key"}
	cfg.Latency.PerToken = 0
	srv := mocktest.Start(t, cfg)
	t.Setenv("RATELAB_TEST_KEY", "a-wrong-key")
	file := writeFile(t, "target.yaml", "name: unauthorized\nitems: 30\nrequest: {max_tokens: 3}\n"+
		"target: {url: \""+srv.URL+"\", provider: anthropic, api_key_env: RATELAB_TEST_KEY}\n"+
		"strategies: [{name: sem, kind: semaphore, n: 5}]\n")
	stdout, stderr, code := runCLI(t, t.Context(), "run", file)
	if code != exitFailed {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stdout, "FAIL sem: failed: expected < 30") || !strings.Contains(stdout, "got 30: 401 authentication_error ×30") {
		t.Errorf("the table does not name the dominant error:\n%s", stdout)
	}
	if !strings.Contains(stderr, "1 expectation(s) failed") {
		t.Errorf("stderr = %q", stderr)
	}
}

// TestReportNamesLoadgenOnce: an error is printed with one "loadgen: "
// whether it carries the package's prefix, none, or one inside another.
func TestReportNamesLoadgenOnce(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{errors.New("run: --out: permission denied"), "loadgen: run: --out: permission denied\n"},
		{fmt.Errorf("%w: x.yaml:3: target.api_key_env: unset", loadgen.ErrNoKey), "loadgen: target key not set: x.yaml:3: target.api_key_env: unset\n"},
		{fmt.Errorf("loadgen: x.yaml: strategy %q: %w", "a", errors.New("loadgen: unknown strategy kind \"b\"")), "loadgen: x.yaml: strategy \"a\": unknown strategy kind \"b\"\n"},
	} {
		var b strings.Builder
		report(tt.err, &b)
		if b.String() != tt.want {
			t.Errorf("report(%q) printed %q, want %q", tt.err, b.String(), tt.want)
		}
	}
}
