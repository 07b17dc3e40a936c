package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mockllm profiles lists every profile with its limits and source.
func TestProfilesCommand(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"profiles"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"NAME             PROVIDER      MODELS                   RPM    ITPM     OTPM    TPM        BURST  CHECKED",
		"anthropic-start  anthropic     all                      1000   500000   100000  -          1s     2026-12-01",
		"anthropic-tier1  anthropic     claude-haiku-4-5*        50     50000    10000   -          1s     2026-12-01",
		"                               claude-sonnet-4*         50     30000    8000    -          1s",
		"azure-tier1      azure-openai  deployment gpt-4.1       1000   -        -       1000000    10s    2026-12-07",
		"                               deployment gpt-4o-mini   20000  -        -       2000000    10s",
		"openai-tier1     openai        gpt-4o*                  500    -        -       30000      1m0s   2026-12-01",
		"                               gpt-4o-mini*             500    -        -       200000     1m0s",
		"  source: https://",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("mockllm profiles lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(context.Background(), []string{"profiles", "x"}, io.Discard, io.Discard); err == nil {
		t.Error("mockllm profiles x: nil error, want one")
	}
}

// --profile starts from a profile; the file and the flags override it.
func TestRunProfile(t *testing.T) {
	got := limits(t, start(t, "--profile", "anthropic-start", "--rpm", "60"))
	for k, v := range map[string]any{"rpm": 60.0, "itpm": 500000.0, "otpm": 100000.0, "burst": "1s"} {
		if got[k] != v {
			t.Errorf("--profile anthropic-start --rpm 60: limits.%s = %v, want %v", k, got[k], v)
		}
	}
	path := filepath.Join(t.TempDir(), "mock.yaml")
	if err := os.WriteFile(path, []byte("limits:\n  max_concurrent: 3\n  burst: 0s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = limits(t, start(t, "--profile", "anthropic-scale", "--config", path))
	for k, v := range map[string]any{"max_concurrent": 3.0, "rpm": 4000.0, "burst": nil} {
		if got[k] != v {
			t.Errorf("--profile anthropic-scale --config: limits.%s = %v, want %v", k, got[k], v)
		}
	}
	err := run(context.Background(), []string{"--profile", "nope"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--profile: unknown profile "nope" (want one of anthropic-scale, anthropic-start`) {
		t.Errorf("--profile nope: %v, want the unknown profile named with the known ones", err)
	}
}
