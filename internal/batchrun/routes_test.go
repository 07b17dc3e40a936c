package batchrun

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/mock"
)

// mixedProviders are the providers of TestRunBatchMixedProviders' lines,
// the model each line names (empty: the route's default), and the stop
// reasons its wire format answers with.
var mixedProviders = []struct {
	name, model string
	stops       []string
}{
	{"", "", []string{"end_turn", "max_tokens"}}, // the batch's own provider, anthropic
	{"openai", "", []string{"stop", "length"}},
	{"openai-responses", "gpt-5.4-mini", []string{"completed", "incomplete", "max_output_tokens"}},
	{"azure-openai", "", []string{"stop", "length"}},
	{"bedrock", "", []string{"end_turn", "max_tokens"}},
	{"gemini", "gemini-2.5-pro", []string{"STOP", "MAX_TOKENS"}},
	{"vertex", "", []string{"STOP", "MAX_TOKENS"}},
	{"vertex-anthropic", "", []string{"end_turn", "max_tokens"}},
}

// TestRunBatchMixedProviders: one input of 3,000 lines over the eight
// providers, each line naming its provider (or none: the batch's own) in
// its metadata, run against the embedded mock. Every id is in the output
// once, each provider's lines reached the mock through that provider's API
// (the mock's request counter by API equals the lines naming it), and each
// result carries its format's own stop reason.
func TestRunBatchMixedProviders(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "batch.yaml")
	os.WriteFile(cfgPath, []byte("server:\n  latency: {per_token: 100us}\n  limits: {max_concurrent: 30}\n"), 0o644)
	cfg, err := loadgen.LoadBatchConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	in := filepath.Join(dir, "items.jsonl")
	var b strings.Builder
	want := map[string]int{}
	for i := range n {
		p := mixedProviders[i%len(mixedProviders)]
		md := fmt.Sprintf(`{"row": %d}`, i)
		if p.name != "" {
			md = fmt.Sprintf(`{"row": %d, "provider": %q}`, i, p.name)
			if p.model != "" {
				md = fmt.Sprintf(`{"row": %d, "provider": %q, "model": %q}`, i, p.name, p.model)
			}
		}
		fmt.Fprintf(&b, `{"id": "item-%d", "prompt": "p %d", "max_tokens": 16, "metadata": %s}`+"\n", i, i, md)
		want[cmpOrDefault(p.name, "anthropic")]++
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	out := filepath.Join(dir, "out.jsonl")

	var srv *mock.Server
	rep, err := Run(t.Context(), Options{Input: in, Output: out, Config: cfg, Mock: true, Workers: 64,
		Strategy: "semaphore:n=4", ProviderStrategies: map[string]string{"gemini": "adaptive", "bedrock": "semaphore:n=2"},
		mockReady: func(s *mock.Server) { srv = s }})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.AllOK() || rep.Completed != n {
		t.Fatalf("summary %+v, want %d completed", rep.Summary, n)
	}
	for name, w := range want {
		if c := rep.Providers[name]; c == nil || c.Completed != w || c.Failed != 0 {
			t.Errorf("summary's %s: %+v, want %d completed", name, c, w)
		}
	}

	// Every id once, each answered in its provider's format.
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	if _, err := engine.ReadJSONL(f, func(r engine.Result) error {
		if seen[r.ID] {
			return fmt.Errorf("id %s twice", r.ID)
		}
		seen[r.ID] = true
		i, _ := strconv.Atoi(strings.TrimPrefix(r.ID, "item-"))
		p := mixedProviders[i%len(mixedProviders)]
		if !r.OK() || !strings.Contains(strings.Join(p.stops, " "), r.StopReason) || r.StopReason == "" {
			return fmt.Errorf("%s (%s): stop_reason %q, error %v; want one of %q", r.ID, cmpOrDefault(p.name, "anthropic"), r.StopReason, r.Err, p.stops)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Errorf("output holds %d ids, want %d", len(seen), n)
	}

	// At the mock: the 200s of each API.
	resp, err := (&http.Client{Transport: srv.InProcess()}).Get("http://mock.invalid/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := map[string]int{}
	re := regexp.MustCompile(`^mockllm_requests_total\{api="([^"]+)",key="[^"]*",status="200"\} (\d+)$`)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.Atoi(m[2])
			got[m[1]] += v
		}
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("mock: %d %s requests answered 200, want %d", got[name], name, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("mock: 200s by API %v, want %v", got, want)
	}
	t.Logf("by API at the mock: %v; %d attempts, %d 429s", got, rep.Run.Attempts, rep.Run.Throttled)
}

func cmpOrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestRunBatchProviderErrors: a line's metadata.provider or metadata.model
// that cannot be used is an input error naming the line and the field,
// before any call; --provider-strategy's mistakes are usage errors; and
// --via batch-api refuses lines naming another provider than the batch's.
func TestRunBatchProviderErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "items.jsonl")
	os.WriteFile(in, []byte(`{"id": "a", "prompt": "p"}
{"id": "b", "prompt": "p", "metadata": {"provider": "gemni"}}
{"id": "c", "prompt": "p", "metadata": {"provider": 7}}
{"id": "d", "prompt": "p", "metadata": {"provider": "openai", "model": ""}}
{"id": "e", "prompt": "p", "metadata": ["provider", "kept as it is"]}
`), 0o644)
	_, err := Run(t.Context(), Options{Input: in, Output: filepath.Join(dir, "out.jsonl"), Mock: true})
	var ie *batch.InputErrors
	if !errors.As(err, &ie) {
		t.Fatalf("RunBatch: %v, want input errors", err)
	}
	wantMsgs := []string{
		in + `:2: metadata.provider: unknown provider "gemni" (did you mean gemini?); want one of anthropic, azure-openai, bedrock, gemini, openai, openai-responses, vertex, vertex-anthropic`,
		in + `:3: metadata.provider: want a non-empty string, got 7`,
		in + `:4: metadata.model: want a non-empty string, got ""`,
	}
	if got := strings.Split(ie.Error(), "\n"); strings.Join(got, "\n") != strings.Join(wantMsgs, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", ie.Error(), strings.Join(wantMsgs, "\n"))
	}
	if _, err := os.Stat(filepath.Join(dir, "out.jsonl")); !os.IsNotExist(err) {
		t.Errorf("an invalid input made an output (stat: %v)", err)
	}

	for _, tt := range []struct {
		specs map[string]string
		want  string
	}{
		{map[string]string{"gemni": "adaptive"}, `--provider-strategy gemni=adaptive: unknown provider "gemni"`},
		{map[string]string{"anthropic": "adaptive"}, `--provider-strategy anthropic=adaptive: anthropic is the batch's provider, whose strategy is --strategy`},
		{map[string]string{"gemini": "semaphore:n=x"}, `--provider-strategy gemini=semaphore:n=x: --strategy "semaphore:n=x": n: want an integer, got "x"`},
	} {
		_, err := Run(t.Context(), Options{Input: in, Output: filepath.Join(dir, "out.jsonl"), Mock: true, ProviderStrategies: tt.specs})
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ProviderStrategies %v: %v, want a usage error containing %q", tt.specs, err, tt.want)
		}
	}

	// A target without the key of a provider a line names: that line's error.
	os.WriteFile(in, []byte(`{"id": "a", "prompt": "p"}
{"id": "b", "prompt": "p", "metadata": {"provider": "gemini"}}
`), 0o644)
	env := map[string]string{"ANTHROPIC_API_KEY": "k"}
	_, err = Run(t.Context(), Options{Input: in, Output: filepath.Join(dir, "out.jsonl"), Getenv: func(k string) string { return env[k] }})
	if !errors.As(err, &ie) || ie.Error() != in+":2: metadata.provider: gemini: no API key for gemini: set GEMINI_API_KEY, or give --api-key-command, or --base-url for a server that needs no key" {
		t.Errorf("a line naming a provider without a key: %v", err)
	}

	// --via batch-api: one provider's batch API for every line.
	for _, tt := range []struct{ line, want string }{
		{`{"id": "b", "prompt": "p", "metadata": {"provider": "gemini"}}`,
			in + `:2: metadata.provider: gemini: a batch-API run sends every line to anthropic's batch API; give the lines of other providers a batch of their own (or run them without the batch API, which routes each line to its provider)`},
		{`{"id": "b", "prompt": "p", "metadata": {"provider": "openai"}}`,
			in + `:2: metadata.provider: openai: a batch-API run sends every line to anthropic's batch API; give the lines of other providers a batch of their own (or run them without the batch API, which routes each line to its provider)`},
	} {
		os.WriteFile(in, []byte(`{"id": "a", "prompt": "p", "metadata": {"provider": "anthropic", "model": "claude-haiku-4-5"}}`+"\n"+tt.line+"\n"), 0o644)
		_, err := RunAPI(t.Context(), Options{Input: in, Output: filepath.Join(dir, "api.jsonl"), Mock: true})
		if !errors.As(err, &ie) || ie.Error() != tt.want {
			t.Errorf("--via batch-api with %s: %v\nwant: %s", tt.line, err, tt.want)
		}
	}
	os.WriteFile(in, []byte(`{"id": "a", "prompt": "p", "metadata": {"model": "gpt-4o"}}`+"\n"), 0o644)
	_, err = RunAPI(t.Context(), Options{Input: in, Output: filepath.Join(dir, "api.jsonl"), Mock: true, Provider: "openai"})
	if want := in + `:1: metadata.model: "gpt-4o": openai's Batch API takes one model per batch, this run's "gpt-5.4-mini"`; !errors.As(err, &ie) || ie.Error() != want {
		t.Errorf("--via batch-api, openai, another model: %v\nwant: %s", err, want)
	}
}
