package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/keyid"
	"github.com/ratelab/ratelab/internal/record"
)

// TestBatchRecord: batch --record writes a line per attempt, readable back.
func TestBatchRecord(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "items.jsonl")
	if err := os.WriteFile(in, []byte("{\"id\":\"a\",\"prompt\":\"hi\",\"max_tokens\":5}\n{\"id\":\"b\",\"prompt\":\"ho\",\"max_tokens\":5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "rec.jsonl")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"batch", "--target", "mock", "--input", in, "--output", filepath.Join(dir, "out.jsonl"), "--record", rec}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	f, err := record.Read(rec)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Source != "loadgen batch" || len(f.Attempts) != 2 {
		t.Fatalf("header %+v, %d attempts; want loadgen batch, 2", f.Header, len(f.Attempts))
	}
	for _, a := range f.Attempts {
		if a.Status != 200 || a.Provider != "anthropic" || a.MaxTokens != 5 || a.Usage == nil || a.Usage.OutputTokens != 5 {
			t.Errorf("attempt %+v", a)
		}
	}
}

// TestProfileNoKey: a scenario sent with no key finds its profile under no
// key's label (record.KeyLabel(""), the fingerprint of "", which recordings
// now give a keyless attempt), and under the names used before no key had
// a label: a PROVIDER-nokey.yaml an earlier calibrate --save kept is read
// while there is no newer one, and a recording's "" keys are no key's, one
// key with the new label (not two), saved under it.
func TestProfileNoKey(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir := filepath.Join(cache, "ratelab", "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(dir, "anthropic-nokey.yaml")
	if err := os.WriteFile(legacy, []byte("limits: {max_concurrent: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keyless := writeFile(t, "keyless.yaml", workScenario+"target: {url: \"http://127.0.0.1:1\"}\n")
	_, stderr, code := runCLI(t, t.Context(), "run", keyless, "--profile", "auto", "--virtual")
	if code != 0 || !strings.Contains(stderr, "profile: the one saved for anthropic key (none)") || !strings.Contains(stderr, legacy) {
		t.Fatalf("--profile auto with an earlier nokey profile: exit %d\n%s", code, stderr)
	}

	// A recording whose lines label no key both ways: "" (written before)
	// and the fingerprint of "".
	b, err := os.ReadFile(recordProbe(t))
	if err != nil {
		t.Fatal(err)
	}
	keyField := regexp.MustCompile(`,"key":"[0-9a-f]{12}"`)
	lines := strings.SplitAfter(string(b), "\n")
	for i := 1; i < len(lines); i++ {
		label := ""
		if i%2 == 0 {
			label = `,"key":"` + record.KeyLabel("") + `"`
		}
		lines[i] = keyField.ReplaceAllLiteralString(lines[i], label)
	}
	mixed := writeFile(t, "mixed.jsonl", strings.Join(lines, ""))
	out, stderr, code := runCLI(t, t.Context(), "calibrate", mixed, "-o", filepath.Join(t.TempDir(), "p.yaml"), "--save")
	saved := filepath.Join(dir, "anthropic-"+keyid.Fingerprint("")+".yaml")
	if code != 0 || !strings.Contains(out, "saved "+saved+": the profile of anthropic key (none)") {
		t.Fatalf("calibrate --save of keyless lines labelled both ways: exit %d\n%s\n%s", code, out, stderr)
	}
	_, stderr, code = runCLI(t, t.Context(), "run", keyless, "--profile", "auto", "--virtual")
	if code != 0 || !strings.Contains(stderr, saved) {
		t.Errorf("--profile auto once a profile is saved under no key's label: exit %d\n%s; want %s, not the earlier nokey one", code, stderr, saved)
	}
}
