package mock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const fullConfig = `seed: 1
api_keys: [k1, k2]
admin_token: secret
latency:
  ttft: 100ms
  ttft_per_input_token: 1ms
  per_token: 5ms
  jitter: 0.1
output:
  tokens: {uniform: [20, 80]}
limits:
  max_concurrent: 20
  rpm: 60
  itpm: 1000
  otpm: 2000
  tpm: 0
  retry_after: 1s
  count_rejected: true
capacity:
  max_concurrent: 100
faults:
  error_500: 0.01
  overloaded: 0.02
  slow: {rate: 0.1, extra: 2s}
  reset: 0
  cut_stream: 0
  stream_error: 0
  script: [{attempts: 2, status: 529}]
schedule:
  - at: 30s
    limits: {max_concurrent: 10}
`

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(fullConfig), "mock.yaml")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"seed", cfg.Seed, int64(1)},
		{"api_keys", len(cfg.APIKeys), 2},
		{"latency.ttft", cfg.Latency.TTFT, 100 * time.Millisecond},
		{"latency.jitter", cfg.Latency.Jitter, 0.1},
		{"output.tokens", cfg.Output.Tokens, Distribution{Kind: Uniform, Min: 20, Max: 80}},
		{"limits.max_concurrent", cfg.Limits.MaxConcurrent, 20},
		{"limits.retry_after", cfg.Limits.RetryAfter, time.Second},
		{"limits.count_rejected", cfg.Limits.CountRejected, true},
		{"capacity.max_concurrent", cfg.Capacity.MaxConcurrent, 100},
		{"faults.slow.extra", cfg.Faults.Slow.Extra, 2 * time.Second},
		{"faults.script", cfg.Faults.Script[0], ScriptStep{Attempts: 2, Status: 529}},
		{"schedule[0].at", cfg.Schedule[0].At, 30 * time.Second},
		{"schedule[0].limits", *cfg.Schedule[0].Limits.MaxConcurrent, 10},
		{"schedule[0].limits.rpm", cfg.Schedule[0].Limits.RPM == nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestParseConfigDefaults(t *testing.T) {
	for _, src := range []string{"", "seed: 3\n", "latency: {ttft: 1s}\n"} {
		cfg, err := ParseConfig([]byte(src), "x.yaml")
		if err != nil {
			t.Fatalf("ParseConfig(%q): %v", src, err)
		}
		if got, want := cfg.Latency.PerToken, 5*time.Millisecond; got != want {
			t.Errorf("ParseConfig(%q): per_token = %v, want default %v", src, got, want)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		src  string
		want []string // substrings of the error
	}{
		{"seed: 1\nbogus: 2\n", []string{"f.yaml:2", `unknown key "bogus"`}},
		{"limits:\n  rpm: 5\n  rmp: 5\n", []string{"f.yaml:3", `"rmp"`, "limits.rmp"}},
		{"limits:\n  rpm: lots\n", []string{"f.yaml:2", "limits.rpm", `"lots"`, "integer"}},
		{"latency:\n  per_token: 5\n", []string{"f.yaml:2", "latency.per_token", "duration"}},
		{"limits:\n  rpm: -1\n", []string{"f.yaml:2", "limits.rpm", "negative"}},
		{"faults:\n  error_500: 2\n", []string{"f.yaml:2", "faults.error_500", "[0, 1]"}},
		{"output:\n  tokens: lots\n", []string{"f.yaml:2", "output.tokens", "distribution"}},
		{"output:\n  tokens: {uniform: [5, 1]}\n", []string{"f.yaml:2", "output.tokens", "MIN <= MAX"}},
		{"faults:\n  script: [{attempts: 1, status: 200}]\n", []string{"f.yaml:2", "faults.script[0].status"}},
		{"schedule:\n  - at: 10s\n    limits: {rpm: -3}\n", []string{"f.yaml:3", "schedule[0].limits.rpm"}},
		{"seed: [\n", []string{"f.yaml"}},
	}
	for _, tt := range tests {
		_, err := ParseConfig([]byte(tt.src), "f.yaml")
		if err == nil {
			t.Errorf("ParseConfig(%q) = nil error, want one mentioning %q", tt.src, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseConfig(%q) = %q, want it to mention %q", tt.src, err, w)
			}
		}
	}
}

// TestParseConfigMessages pins the whole message of common mistakes: the
// same words a scenario's server: block gives (internal/strict), and every
// problem of the file at once.
func TestParseConfigMessages(t *testing.T) {
	tests := []struct{ src, want string }{
		{"limits:\n  rpm: abc\n", `f.yaml:2: limits.rpm: want an integer, got "abc"`},
		{"limits:\n  rpm: 1.5\n", `f.yaml:2: limits.rpm: want an integer, got 1.5`},
		{"latency:\n  per_token: 5\n", `f.yaml:2: latency.per_token: want a duration like 500ms or 1s, got 5`},
		{"limits:\n  rmp: 5\n", `f.yaml:2: limits.rmp: unknown key "rmp" (did you mean rpm?)`},
		{"output:\n  tokens: {fixed: x}\n", `f.yaml:2: output.tokens.fixed: want an integer, got "x"`},
		{"output:\n  tokens: {uniform: [1]}\n", `f.yaml:2: output.tokens.uniform: want [MIN, MAX], got a list`},
		{"seed: 1\nlimits:\n  rpm: abc\n  itpm: -1\nfaults: {error_500: 2}\nbogus: 1\n",
			"f.yaml:3: limits.rpm: want an integer, got \"abc\"\n" +
				"f.yaml:4: limits.itpm: must not be negative, got -1\n" +
				"f.yaml:5: faults.error_500: must be a rate in [0, 1], got 2\n" +
				"f.yaml:6: bogus: unknown key \"bogus\" (want one of admin_token, api_keys, aws_secret_keys, azure, batches, cache, capacity, decode_budget, faults, latency, limits, limits_by_model, long_context, max_header_bytes, metrics_token, models, organization, output, prices, profile, quota, schedule, seed, strict)"},
		{"limits:\n  rpm: -1\n", `f.yaml:2: limits.rpm: must not be negative, got -1`},
		{"limits:\n  rpm: 60\n  burst: 25h\n", `f.yaml:3: limits.burst: must be in [0, 24h0m0s] (0 is one minute), got 25h0m0s`},
		{"limits:\n  burst: 5\n", `f.yaml:2: limits.burst: want a duration like 500ms or 1s, got 5`},
		{"limits:\n  retry_after_ms: 1000\n", `f.yaml:2: limits.retry_after_ms: want true or false, got 1000`},
		{"schedule:\n  - at: 1s\n    limits: {burst: -1s}\n", `f.yaml:3: schedule[0].limits.burst: must be in [0, 24h0m0s] (0 is one minute), got -1s`},
		{"quota:\n  requests: 5\n  input_tokens: -1\n", `f.yaml:3: quota.input_tokens: must not be negative, got -1`},
		{"cache:\n  min_tokens: 100\n", `f.yaml:2: cache.min_tokens: must be 0 (the default, 1024) or in [128, 16777216], got 100`},
		{"limits_by_model:\n  \"claude-sonnet-*\":\n    rpm: 50\n    itpm: -1\n", `f.yaml:4: limits_by_model.claude-sonnet-*.itpm: must not be negative, got -1`},
		{"limits_by_model:\n  \"[\": {rpm: 1}\n", `f.yaml:2: limits_by_model.[: want a model pattern such as claude-sonnet-4-*, got "["`},
		{"limits_by_model:\n  gpt-4o: {rmp: 1}\n", `f.yaml:2: limits_by_model.gpt-4o.rmp: unknown key "rmp" (did you mean rpm?)`},
		{"limits:\n  acceleration: {factor: 0.5, floor: 10}\n", `f.yaml:2: limits.acceleration.factor: must be 0 (off) or in [1, 1e6], got 0.5`},
		{"limits:\n  acceleration:\n    factor: 2\n", `f.yaml:3: limits.acceleration.floor: must be at least 1 with a factor, or no request could ever start, got 0`},
		{"quota:\n  requets: 5\n", `f.yaml:2: quota.requets: unknown key "requets" (did you mean requests?)`},
	}
	for _, tt := range tests {
		_, err := ParseConfig([]byte(tt.src), "f.yaml")
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseConfig(%q) =\n%v\nwant\n%s", tt.src, err, tt.want)
		}
	}
}

// TestLoadConfigTooLarge: a file above 4 MiB is refused before it is
// parsed, with a message naming it and the limit.
func TestLoadConfigTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte(strings.Repeat("# a comment line\n", 300_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": file larger than 4 MiB") {
		t.Errorf("LoadConfig(5 MB) = %v, want the file and the 4 MiB limit", err)
	}
}

// TestConfigEmbedded checks that a Config inside another document (a
// scenario's server: block) starts from the defaults and stays strict.
func TestConfigEmbedded(t *testing.T) {
	type scenario struct {
		Name   string `yaml:"name"`
		Server Config `yaml:"server"`
	}
	decode := func(src string) (scenario, error) {
		var s scenario
		dec := yaml.NewDecoder(strings.NewReader(src))
		dec.KnownFields(true)
		err := dec.Decode(&s)
		return s, err
	}
	s, err := decode("name: x\nserver:\n  limits: {max_concurrent: 20}\n")
	if err != nil {
		t.Fatal(err)
	}
	if s.Server.Limits.MaxConcurrent != 20 || s.Server.Latency.PerToken != 5*time.Millisecond {
		t.Errorf("embedded config = %+v, want max_concurrent 20 and the default per_token", s.Server)
	}
	if _, err := decode("name: x\nserver:\n  limits: {max_concurent: 20}\n"); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("unknown key in an embedded config: err = %v, want one naming line 3", err)
	}
}
