package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

func TestParseStrategySpec(t *testing.T) {
	tests := []struct {
		spec    string
		kind    string
		requeue bool
		check   func(*Row) bool
		err     string
	}{
		{spec: "adaptive", kind: KindAdaptive, requeue: true},
		{spec: "semaphore:n=20", kind: KindSemaphore, requeue: true, check: func(s *Row) bool {
			return *s.Config.(*strategies.SemaphoreConfig) == strategies.SemaphoreConfig{Max: 20}
		}},
		{spec: "token-bucket:rpm=50, tpm=40000", kind: KindTokenBucket, requeue: true, check: func(s *Row) bool {
			return *s.Config.(*strategies.TokenBucketConfig) == strategies.TokenBucketConfig{RPM: 50, TPM: 40000}
		}},
		{spec: "aimd:max=64,requeue=false,max_retries=5", kind: KindAIMD, check: func(s *Row) bool {
			return *s.Config.(*strategies.AIMDConfig) == strategies.AIMDConfig{Max: 64} && s.Retries() == 5
		}},
		{spec: "adaptive:state_file=/tmp/a.json", kind: KindAdaptive, requeue: true, check: func(s *Row) bool { return s.stateFile() == "/tmp/a.json" }},
		{spec: "semaphore", err: "n: required"},
		{spec: "semaphore:n", err: "want KIND or KIND:KEY=VALUE"},
		{spec: "semaphore:n=ten", err: `n: want an integer, got "ten"`},
		{spec: "semaphore:n=-3", err: `"semaphore:n=-3": n: must not be negative, got -3`},
		{spec: "semaphore:nn=3", err: `nn: unknown key "nn" (did you mean n?)`},
		{spec: "fastest", err: `unknown kind "fastest"`},
		{spec: "semaphore:n=2,rpm=5", err: "rpm: not a parameter of kind semaphore"},
		{spec: "semaphore:n={x: 1}", err: "want KIND or KIND:KEY=VALUE"},
	}
	for _, tt := range tests {
		st, err := ParseStrategySpec(tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrBatchUsage) {
				t.Errorf("ParseStrategySpec(%q) = %v, want a usage error containing %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseStrategySpec(%q): %v", tt.spec, err)
			continue
		}
		if st.Kind != tt.kind || st.Requeue != tt.requeue || st.Name != tt.spec || (tt.check != nil && !tt.check(st)) {
			t.Errorf("ParseStrategySpec(%q) = %+v, want kind %s, requeue %v", tt.spec, st, tt.kind, tt.requeue)
		}
	}
}

func TestUnfence(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"```json\n{\"a\": 1}\n```", "{\"a\": 1}\n"},
		{"  ```\n[1, 2]\n```  ", "[1, 2]\n"},
		{"```{\"a\": 1}```", `{"a": 1}`},
		{"```", "```"},
		{"text ```json\n{}\n```", "text ```json\n{}\n```"},
	}
	for _, tt := range tests {
		if got := unfence(tt.in); got != tt.want {
			t.Errorf("unfence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCommandKey(t *testing.T) {
	const secret = "sk-SECRET-0123456789"
	tests := []struct {
		command, want, err string
	}{
		{command: "printf '  " + secret + "\\n'", want: secret},
		{command: "echo " + secret + "; echo 'vault: token expired' >&2; exit 2", err: "--api-key-command: exit status 2: vault: token expired"},
		{command: "echo " + secret + "; echo 'oops " + secret + "' >&2; exit 1", err: "exit status 1: oops [REDACTED]"},
		{command: "true", err: "printed nothing"},
		{command: "echo a; echo b", err: "more than one line"},
	}
	for _, tt := range tests {
		got, err := CommandKey(t.Context(), tt.command)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("CommandKey(%q) error = %v, want %q", tt.command, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("CommandKey(%q) error holds the key: %v", tt.command, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CommandKey(%q) = %q, %v; want %q", tt.command, got, err, tt.want)
		}
	}
}

// TestCommandKeyTimeout: a key command that never finishes is stopped at
// the timeout (here the caller's deadline, shorter than
// KeyCommandTimeout), and the error names the timeout, not "signal: killed";
// a child that keeps its stdout open does not hold it longer.
func TestCommandKeyTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := CommandKey(ctx, "sleep 30 & sleep 30")
	if err == nil || !strings.Contains(err.Error(), "--api-key-command did not finish within 300ms") {
		t.Errorf("CommandKey(sleep) error = %v, want it to name the 300ms timeout", err)
	}
	if err != nil && strings.Contains(err.Error(), "killed") {
		t.Errorf("CommandKey(sleep) error = %v, want no 'killed'", err)
	}
	// Bounded by the timeout plus exec's WaitDelay (1 s), far below the
	// 30 s the children would hold stdout.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("CommandKey(sleep) returned after %v, want soon after the timeout", d)
	}
}

func TestSchemaCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	os.WriteFile(path, []byte(`{"type": "object", "required": ["label"], "properties": {"label": {"type": "string"}}}`), 0o644)
	check, err := SchemaCheck(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ text, err string }{
		{`{"label": "bug"}`, ""},
		{"```json\n{\"label\": \"bug\"}\n```", ""},
		{`{"label": 3}`, "at '/label': got number, want string"},
		{`{}`, "missing property 'label'"},
		{`{"label": "bug"`, "response is not JSON"},
		{`{"label": "a"} {}`, "response is not JSON"},
		{`Sure! Here it is`, "response is not JSON"},
	}
	for _, tt := range tests {
		err := check(engine.Item{}, provider.Response{Text: tt.text})
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("check(%q) = %v, want valid", tt.text, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("check(%q) = %v, want %q", tt.text, err, tt.err)
		}
	}
	os.WriteFile(path, []byte(`{"type": 12}`), 0o644)
	if _, err := SchemaCheck(path); err == nil || !errors.Is(err, ErrBatchUsage) {
		t.Errorf("SchemaCheck(invalid schema) = %v, want a usage error", err)
	}
}

func TestLoadBatchConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	s, err := LoadBatchConfig(write("ok.yaml", "request: {provider: openai, model: gpt-x}\ntarget: {url: http://127.0.0.1:9, api_key_env: MY_KEY}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Request.Provider != "openai" || s.Target.APIKeyEnv != "MY_KEY" || len(s.Strategies) != 0 {
		t.Errorf("config = %+v", s)
	}
	_, err = LoadBatchConfig(write("bad.yaml", "request:\n  modle: x\n"))
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:2: request.modle: unknown key") {
		t.Errorf("bad config: %v, want bad.yaml:2: request.modle: unknown key", err)
	}
	// A scenario file is a valid config: its items are not used.
	if _, err := LoadBatchConfig("../../scenarios/20-concurrent.yaml"); err != nil {
		t.Errorf("a shipped scenario as a config: %v", err)
	}
}

// TestRunBatchAdaptiveState runs two batches against the embedded mock
// with the adaptive strategy: the first learns the mock's limit and saves
// it, keyed by provider, the embedded mock and the key's fingerprint; the
// second starts from it.
func TestRunBatchAdaptiveState(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "batch.yaml")
	os.WriteFile(cfgPath, []byte("server:\n  latency: {per_token: 1ms}\n  limits: {max_concurrent: 4}\n"), 0o644)
	cfg, err := LoadBatchConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "items.jsonl")
	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf(`{"id": "%d", "prompt": "p", "max_tokens": 4}`, i))
	}
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	state := filepath.Join(dir, "adaptive.json")
	run := func(out string) BatchReport {
		t.Helper()
		rep, err := RunBatch(t.Context(), BatchOptions{Input: in, Output: filepath.Join(dir, out), Config: cfg, Mock: true, StateFile: state, Workers: 50})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.AllOK() || rep.Completed != 200 || rep.Kind != KindAdaptive {
			t.Fatalf("%s: %+v, want 200 completed by adaptive", out, rep.Summary)
		}
		return rep
	}
	first := run("first.jsonl")
	if first.StateLoaded {
		t.Errorf("first batch: started from a state file that did not exist")
	}
	var f struct {
		Limits []strategies.LearnedState `json:"limits"`
	}
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &f); err != nil || len(f.Limits) != 1 {
		t.Fatalf("state file: %v\n%s", err, data)
	}
	e := f.Limits[0]
	if e.Provider != "anthropic" || e.BaseURL != "embedded-mock" || e.KeyFingerprint != strategies.Fingerprint(DefaultAPIKey) || e.Window <= 0 {
		t.Errorf("state entry = %+v, want the embedded mock, a key fingerprint and a window", e)
	}
	t.Logf("learned: limit %d, window %g; first batch: %d attempts, %d 429s", e.Limit, e.Window, first.Run.Attempts, first.Run.Throttled)
	if second := run("second.jsonl"); !second.StateLoaded {
		t.Errorf("second batch did not start from the state file")
	}
}

func TestRunBatchNoKey(t *testing.T) {
	_, err := RunBatch(context.Background(), BatchOptions{Input: "x", Output: "y", Getenv: func(string) string { return "" }})
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("RunBatch without a key: %v, want ErrNoKey naming ANTHROPIC_API_KEY", err)
	}
	_, err = RunBatch(context.Background(), BatchOptions{Input: "x", Output: "y", Provider: "openai", Getenv: func(string) string { return "" }})
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("RunBatch without a key: %v, want ErrNoKey naming OPENAI_API_KEY", err)
	}
}
