package mock

import (
	"flag"
	"io"
	"slices"
	"testing"
	"time"
)

// TestFlagsApply: the flags given override the config; the others leave it
// alone, even when their zero value differs from the config's.
func TestFlagsApply(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := AddFlags(fs)
	err := fs.Parse([]string{"--rpm", "7", "--ttft", "2s", "--api-key", "a", "--api-key", "b",
		"--metrics-token", "m", "--max-header-bytes", "4096", "--decode-budget", "1000", "--seed", "3"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Limits.MaxConcurrent, cfg.Limits.RPM, cfg.AdminToken = 5, 100, "admin"
	f.Apply(&cfg)
	want := DefaultConfig()
	want.Limits.MaxConcurrent, want.Limits.RPM, want.AdminToken = 5, 7, "admin"
	want.Latency.TTFT, want.APIKeys, want.MetricsToken = 2*time.Second, []string{"a", "b"}, "m"
	want.MaxHeaderBytes, want.DecodeBudget, want.Seed = 4096, 1000, 3
	if cfg.Limits != want.Limits || cfg.Latency != want.Latency || !slices.Equal(cfg.APIKeys, want.APIKeys) ||
		cfg.AdminToken != want.AdminToken || cfg.MetricsToken != want.MetricsToken ||
		cfg.MaxHeaderBytes != want.MaxHeaderBytes || cfg.DecodeBudget != want.DecodeBudget || cfg.Seed != want.Seed {
		t.Errorf("Apply:\n got %+v\nwant %+v", cfg, want)
	}
	// The config owns its key list: the flag's slice is not shared.
	cfg.APIKeys[0] = "changed"
	again := DefaultConfig()
	f.Apply(&again)
	if again.APIKeys[0] != "a" {
		t.Errorf("a second Apply sees %q, want a", again.APIKeys[0])
	}
}
