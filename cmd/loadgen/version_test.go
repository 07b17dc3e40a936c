package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestVersion: loadgen --version (and loadgen version) prints one line,
// loadgen VERSION (revision REV, GO).
func TestVersion(t *testing.T) {
	re := regexp.MustCompile(`^loadgen \S+ \(revision \S+, \S+\)\n$`)
	for _, arg := range []string{"--version", "version"} {
		var stdout, stderr strings.Builder
		err := run(t.Context(), []string{arg}, &stdout, &stderr)
		if err != nil || !re.MatchString(stdout.String()) || stderr.Len() > 0 {
			t.Errorf("loadgen %s: %v, stdout %q, stderr %q; want one line matching %s", arg, err, stdout.String(), stderr.String(), re)
		}
	}
}
