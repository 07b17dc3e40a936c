package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

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
