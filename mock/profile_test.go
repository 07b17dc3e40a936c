package mock

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"
)

// Every shipped profile parses, names its source and date, and makes a
// server.
func TestShippedProfiles(t *testing.T) {
	ps, err := Profiles()
	if err != nil {
		t.Fatalf("Profiles: %v", err)
	}
	if len(ps) < 2 {
		t.Fatalf("%d profiles, want the shipped ones", len(ps))
	}
	for _, p := range ps {
		if p.Source == "" || p.Checked == "" || p.Description == "" {
			t.Errorf("%s: source %q checked %q description %q, want all three", p.Name, p.Source, p.Checked, p.Description)
		}
		s, err := New(p.Config)
		if err != nil {
			t.Errorf("%s: New: %v", p.Name, err)
			continue
		}
		s.Close()
	}
	p, err := LookupProfile("anthropic-start")
	if err != nil {
		t.Fatal(err)
	}
	if l := p.Config.Limits; l.RPM != 1000 || l.ITPM != 500000 || l.OTPM != 100000 || l.Burst != time.Second {
		t.Errorf("anthropic-start limits = %+v, want rpm 1000, itpm 500000, otpm 100000, burst 1s", l)
	}
}

// A configuration naming a profile starts from it; the keys beside it
// override it, and the rest keep the profile's values.
func TestConfigProfile(t *testing.T) {
	cfg, err := ParseConfig([]byte("profile: anthropic-start\nlimits:\n  max_concurrent: 5\n  rpm: 50\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{MaxConcurrent: 5, RPM: 50, ITPM: 500000, OTPM: 100000, Burst: time.Second}
	if cfg.Limits != want || cfg.Profile != "anthropic-start" || cfg.Latency.PerToken != 5*time.Millisecond {
		t.Errorf("limits = %+v (profile %q, per_token %v), want %+v from anthropic-start with the overrides", cfg.Limits, cfg.Profile, cfg.Latency.PerToken, want)
	}
	// mockllm --profile: the same, with or without the key in the file.
	for _, src := range []string{"limits: {max_concurrent: 5, rpm: 50}\n", "profile: anthropic-start\nlimits: {max_concurrent: 5, rpm: 50}\n"} {
		cfg, err := ParseConfigProfile([]byte(src), "f.yaml", "anthropic-start")
		if err != nil || cfg.Limits != want {
			t.Errorf("ParseConfigProfile(%q) = %+v, %v; want %+v", src, cfg.Limits, err, want)
		}
	}
	if cfg, err := ParseConfigProfile(nil, "empty.yaml", "anthropic-scale"); err != nil || cfg.Limits.RPM != 4000 {
		t.Errorf("an empty file with --profile anthropic-scale: rpm %d, %v; want 4000", cfg.Limits.RPM, err)
	}

	bad := []struct{ src, profile, want string }{
		{"seed: 1\nprofile: nope\n", "", `f.yaml:2: profile: unknown profile "nope" (want one of anthropic-scale, anthropic-start, anthropic-tier1, azure-tier1, openai-tier1, openai-tier5; mockllm profiles lists them)`},
		{"profile: anthropic-start\nlimits: {burst: -1s}\n", "", "f.yaml:2: limits.burst: must be in [0, 24h0m0s]"},
		{"profile: anthropic-scale\n", "anthropic-start", `f.yaml:1: profile: the file names "anthropic-scale" and --profile "anthropic-start"; name one`},
		{"", "nope", `unknown profile "nope"`},
	}
	for _, b := range bad {
		_, err := ParseConfigProfile([]byte(b.src), "f.yaml", b.profile)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParseConfigProfile(%q, %q) = %v, want an error containing %q", b.src, b.profile, err, b.want)
		}
	}
}

// A profile file is held to its schema.
func TestParseProfiles(t *testing.T) {
	good := "name: x\nprovider: openai\ndescription: d\nsource: https://example.com/limits\nchecked: 2026-12-01\nserver:\n  limits: {tpm: 100}\n"
	ps, err := parseProfiles(fstest.MapFS{"x.yaml": {Data: []byte(good)}})
	if err != nil || len(ps) != 1 || ps[0].Config.Limits.TPM != 100 || ps[0].Config.Latency.PerToken != 5*time.Millisecond {
		t.Fatalf("parseProfiles(good) = %+v, %v", ps, err)
	}
	for _, tt := range []struct{ src, want string }{
		{strings.Replace(good, "name: x", "name: y", 1), `profiles/x.yaml:1: name: must be the file's name, "x", got "y"`},
		{strings.Replace(good, "provider: openai", "provider: gemini", 1), `profiles/x.yaml:2: provider: want one of anthropic, openai, azure-openai, got "gemini"`},
		{strings.Replace(good, "checked: 2026-12-01", "checked: December", 1), `profiles/x.yaml:5: checked: want the date the figures were checked, YYYY-MM-DD, got "December"`},
		{strings.Replace(good, "source: https://example.com/limits", "source: memory", 1), `profiles/x.yaml:4: source: must name the page`},
		{strings.Replace(good, "{tpm: 100}", "{tpm: -1}", 1), `profiles/x.yaml:7: server.limits.tpm: must not be negative, got -1`},
		{good + "  profile: anthropic-start\n", `server.profile: a profile cannot start from another profile`},
		{good + "extra: 1\n", `profiles/x.yaml:8: extra: unknown key "extra"`},
	} {
		_, err := parseProfiles(fstest.MapFS{"x.yaml": {Data: []byte(tt.src)}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseProfiles(%q) = %v, want an error containing %q", tt.src, err, tt.want)
		}
	}
}

// openai-tier1 limits each model apart, as OpenAI does: gpt-4o's 30,000
// tokens a minute are spent by one large request while gpt-4o-mini's pool
// still admits, and a dated snapshot shares gpt-4o's pool.
func TestOpenAITierProfile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := ParseConfigProfile(nil, "f.yaml", "openai-tier1")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Latency.PerToken = 0
		ts := startServer(t, cfg)
		defer ts.stop()
		body := func(model string, maxTokens int) string {
			return strings.Replace(openaiBody(maxTokens, false, false, "hi"), "gpt-4o-mini", model, 1)
		}
		var got []string
		for _, step := range []struct {
			model string
			max   int
		}{{"gpt-4o", 20000}, {"gpt-4o-2024-08-06", 20000}, {"gpt-4o-mini", 20000}, {"gpt-4o-mini-2024-07-18", 20000}} {
			r := ts.do(t, "POST", "/v1/chat/completions", body(step.model, step.max))
			got = append(got, fmt.Sprintf("%s %d %s", step.model, r.status, r.header.Get("X-Ratelimit-Limit-Tokens")))
		}
		want := "[gpt-4o 200 30000 gpt-4o-2024-08-06 429 30000 gpt-4o-mini 200 200000 gpt-4o-mini-2024-07-18 200 200000]"
		if fmt.Sprint(got) != want {
			t.Errorf("replies = %v\nwant      %s", got, want)
		}
	})
}

// anthropic-tier1 limits each model class apart: Sonnet 4's 8,000 output
// tokens a minute are spent by one large request while Haiku 4.5's pool
// still admits; a dated Sonnet 4 shares its class's pool; the tier's spend
// cap is its quota.
func TestAnthropicTierProfile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := ParseConfigProfile(nil, "f.yaml", "anthropic-tier1")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Quota.USD != 100 {
			t.Errorf("quota.usd = %v, want the tier's $100", cfg.Quota.USD)
		}
		cfg.Latency.PerToken = 0
		ts := startServer(t, cfg)
		defer ts.stop()
		var got []string
		for _, model := range []string{"claude-sonnet-4-20250514", "claude-sonnet-4-0", "claude-haiku-4-5-20251001"} {
			r := ts.do(t, "POST", "/v1/messages", strings.Replace(anthropicBody(6000, false, "hi"), "claude-sonnet-4-5", model, 1))
			got = append(got, fmt.Sprintf("%s %d %s", model, r.status, r.header.Get("Anthropic-Ratelimit-Output-Tokens-Limit")))
		}
		want := "[claude-sonnet-4-20250514 200 8000 claude-sonnet-4-0 429 8000 claude-haiku-4-5-20251001 200 10000]"
		if fmt.Sprint(got) != want {
			t.Errorf("replies = %v\nwant      %s", got, want)
		}
	})
}

// azure-tier1 gives each model's deployment its tier quota, ten seconds
// of which a bucket holds: gpt-4.1's 1,000,000 tokens a minute admit five
// requests of 30,000 at once and refuse the sixth, while gpt-4.1-mini's
// deployment still admits; ten seconds later gpt-4.1 admits again.
func TestAzureTierProfile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := ParseConfigProfile(nil, "f.yaml", "azure-tier1")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Latency.PerToken = 0
		ts := startServer(t, cfg)
		defer ts.stop()
		body := `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":30000}`
		var got []string
		send := func(deployment string) {
			r := ts.do(t, "POST", "/openai/deployments/"+deployment+"/chat/completions?api-version=2024-10-21", body)
			got = append(got, fmt.Sprintf("%s %d", deployment, r.status))
		}
		for range 6 {
			send("gpt-4.1")
		}
		send("gpt-4.1-mini")
		time.Sleep(10 * time.Second)
		send("gpt-4.1")
		want := "[gpt-4.1 200 gpt-4.1 200 gpt-4.1 200 gpt-4.1 200 gpt-4.1 200 gpt-4.1 429 gpt-4.1-mini 200 gpt-4.1 200]"
		if fmt.Sprint(got) != want {
			t.Errorf("replies = %v\nwant      %s", got, want)
		}
	})
}
