package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// probeScenario is docs/calibrate.md's probe, shorter: a ramp of long
// streams against a mock with a cap of 8.
const probeScenario = `name: probe
items: {count: 100}
arrival: {rate: 25/s, process: constant}
request: {max_tokens: 2000, stream: true}
server:
  latency: {ttft: 300ms, per_token: 12ms}
  limits: {max_concurrent: 8, rpm: 4000, itpm: 400000, otpm: 80000}
strategies:
  - name: probe
    kind: unbounded
    max_retries: 0
    expect: {}
`

// recordProbe records probeScenario in virtual time and returns the file.
func recordProbe(t *testing.T) string {
	t.Helper()
	rec := filepath.Join(t.TempDir(), "probe.jsonl")
	if _, stderr, code := runCLI(t, t.Context(), "run", writeFile(t, "probe.yaml", probeScenario), "--virtual", "--record", rec); code != 0 {
		t.Fatalf("recording the probe: exit %d\n%s", code, stderr)
	}
	return rec
}

// TestCalibrateAdminKey: calibrate --admin-key reads the limits the mock's
// Anthropic admin endpoint publishes (here rpm 2000, where the recording's
// headers said 4000: the published value wins) and says where each limit
// came from; a wrong key and an OpenAI recording without a project are
// clear errors.
func TestCalibrateAdminKey(t *testing.T) {
	rec := recordProbe(t)
	cfg := mock.DefaultConfig()
	cfg.AdminToken = "sk-admin"
	cfg.Limits = mock.Limits{RPM: 2000, ITPM: 400000}
	ts := mocktest.Start(t, cfg)

	prof := filepath.Join(t.TempDir(), "profile.yaml")
	t.Setenv("TEST_ADMIN_KEY", "sk-admin")
	out, stderr, code := runCLI(t, t.Context(), "calibrate", rec, "-o", prof, "--admin-key", "env:TEST_ADMIN_KEY", "--admin-url", ts.URL)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	src := "source: published (GET " + ts.URL + "/v1/organizations/rate_limits?model="
	for _, want := range []string{
		"limits.rpm: 2000   " + src,
		"the limit header of 100 responses said 4000 mostly: the published value wins",
		"limits.itpm: 400000   " + src,
		"responses agrees",
		"limits.otpm: 80000   evidence: the limit header of 100 responses",
		"sources: published (GET " + ts.URL + "/v1/organizations/rate_limits?model=",
		"): rpm, itpm; the recording's headers: otpm; every other value: the recording",
		"limits.max_concurrent: 8   evidence: exact",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	p, err := mock.LoadConfig(prof)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.RPM != 2000 || p.Limits.ITPM != 400000 || p.Limits.OTPM != 80000 || p.Limits.MaxConcurrent != 8 {
		t.Errorf("profile limits %+v: want rpm 2000 (published), itpm 400000, otpm 80000, cap 8", p.Limits)
	}

	_, stderr, code = runCLI(t, t.Context(), "calibrate", rec, "--admin-key", "sk-user", "--admin-url", ts.URL)
	if code != exitUsage || !strings.Contains(stderr, "401") || !strings.Contains(stderr, "invalid admin key") {
		t.Errorf("a wrong admin key: exit %d\n%s", code, stderr)
	}
	_, stderr, code = runCLI(t, t.Context(), "calibrate", rec, "--admin-url", ts.URL)
	if code != exitUsage || !strings.Contains(stderr, "need --admin-key") {
		t.Errorf("--admin-url alone: exit %d\n%s", code, stderr)
	}

	oa := filepath.Join(t.TempDir(), "openai.jsonl")
	os.WriteFile(oa, []byte(`{"ratelab_recording":1,"source":"test","started":"2026-01-01T00:00:00Z"}`+"\n"+
		`{"sent_at":"2026-01-01T00:00:01Z","path":"/v1/chat/completions","provider":"openai","model":"gpt-4o","in_flight":1,"status":200,"headers_ms":1,"latency_ms":2}`+"\n"), 0o644)
	_, stderr, code = runCLI(t, t.Context(), "calibrate", oa, "--admin-key", "sk-admin", "--admin-url", ts.URL)
	if code != exitUsage || !strings.Contains(stderr, "--admin-project: OpenAI publishes rate limits per project") {
		t.Errorf("OpenAI without a project: exit %d\n%s", code, stderr)
	}
}

const workScenario = `name: work
items: {count: 40}
request: {max_tokens: 100, stream: true}
strategies:
  - name: semaphore
    kind: semaphore
    n: 8
    max_retries: -1
    expect: {completed: 40}
`

// TestProfileMemory: calibrate --save keeps the profile under the cache
// directory by provider and key fingerprint, and run --profile auto finds
// it for a later run with that key, as --profile FILE would; another key,
// or none saved, is a clear error.
func TestProfileMemory(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	work := writeFile(t, "work.yaml", workScenario)
	_, stderr, code := runCLI(t, t.Context(), "run", work, "--profile", "auto", "--virtual")
	label := record.KeyLabel("ratelab-test-key") // the key loadgen sends the embedded mock
	if code != exitUsage || !strings.Contains(stderr, "run: --profile auto: no profile saved for anthropic key "+label) || !strings.Contains(stderr, "loadgen calibrate RECORDING --save") {
		t.Fatalf("before any --save: exit %d\n%s", code, stderr)
	}

	rec := recordProbe(t)
	out, stderr, code := runCLI(t, t.Context(), "calibrate", rec, "-o", filepath.Join(t.TempDir(), "p.yaml"), "--save")
	saved := filepath.Join(cache, "ratelab", "profiles", "anthropic-"+label+".yaml")
	if code != 0 || !strings.Contains(out, "saved "+saved+": the profile of anthropic key "+label) {
		t.Fatalf("calibrate --save: exit %d\n%s\n%s", code, out, stderr)
	}
	p, err := mock.LoadConfig(saved)
	if err != nil || p.Limits.MaxConcurrent != 8 || p.Limits.RPM != 4000 {
		t.Fatalf("the saved profile: %v %+v", err, p.Limits)
	}

	auto, stderr, code := runCLI(t, t.Context(), "run", work, "--profile", "auto", "--virtual")
	if code != 0 || !strings.Contains(stderr, "profile: the one saved for anthropic key "+label) || !strings.Contains(stderr, saved) {
		t.Fatalf("--profile auto: exit %d\n%s", code, stderr)
	}
	explicit, _, code := runCLI(t, t.Context(), "run", work, "--profile", saved, "--virtual")
	if code != 0 || auto != explicit {
		t.Errorf("--profile auto and --profile %s differ:\n%s\n%s", saved, auto, explicit)
	}
	plain, _, _ := runCLI(t, t.Context(), "run", work, "--virtual")
	if plain == auto {
		t.Errorf("--profile auto ran as the scenario's own mock would: the profile was not used")
	}

	t.Setenv("OTHER_KEY", "sk-other")
	other := writeFile(t, "other.yaml", workScenario+"target: {url: \"http://127.0.0.1:1\", api_key_env: OTHER_KEY}\n")
	_, stderr, code = runCLI(t, t.Context(), "run", other, "--profile", "auto", "--virtual")
	if code != exitUsage || !strings.Contains(stderr, "no profile saved for anthropic key "+record.KeyLabel("sk-other")) {
		t.Errorf("another key: exit %d\n%s", code, stderr)
	}

	two := filepath.Join(t.TempDir(), "two.jsonl")
	os.WriteFile(two, []byte(`{"ratelab_recording":1,"source":"test","started":"2026-01-01T00:00:00Z"}`+"\n"+
		`{"sent_at":"2026-01-01T00:00:01Z","path":"/v1/messages","provider":"anthropic","key":"aaaaaaaaaaaa","in_flight":1,"status":200,"headers_ms":1,"latency_ms":2}`+"\n"+
		`{"sent_at":"2026-01-01T00:00:01Z","path":"/v1/messages","provider":"anthropic","key":"bbbbbbbbbbbb","in_flight":1,"status":200,"headers_ms":1,"latency_ms":2}`+"\n"), 0o644)
	_, stderr, code = runCLI(t, t.Context(), "calibrate", two, "--save")
	if code != exitUsage || !strings.Contains(stderr, "calibrate: --save: the recordings hold 2 keys (aaaaaaaaaaaa at "+two+":2, bbbbbbbbbbbb at "+two+":3)") {
		t.Errorf("two keys: exit %d\n%s", code, stderr)
	}
}
