package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// batchItems writes n input lines t-0 … t-(n-1) and returns the path.
func batchItems(t testing.TB, n int, maxTokens int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id": "t-%d", "prompt": "Classify ticket %d.", "max_tokens": %d, "metadata": {"row": %d}}`+"\n", i, i, maxTokens, i)
	}
	return writeFile(t, "items.jsonl", b.String())
}

// results reads an output file: each id's results, in file order.
func results(t testing.TB, path string) map[string][]engine.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make(map[string][]engine.Result)
	if _, err := engine.ReadJSONL(f, func(r engine.Result) error {
		got[r.ID] = append(got[r.ID], r)
		return nil
	}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return got
}

// exactlyOnce fails unless each of t-0 … t-(n-1) has exactly one result
// and nothing else is in the output, and returns the results.
func exactlyOnce(t testing.TB, path string, n int) map[string]engine.Result {
	t.Helper()
	got := results(t, path)
	out := make(map[string]engine.Result)
	for i := range n {
		id := fmt.Sprintf("t-%d", i)
		if len(got[id]) != 1 {
			t.Errorf("%s: %d results in the output, want exactly 1", id, len(got[id]))
			continue
		}
		out[id] = got[id][0]
	}
	if len(got) != n {
		t.Errorf("output has %d ids, want %d", len(got), n)
	}
	return out
}

// mockServer serves the mock (cfg) over loopback HTTP (mocktest), behind
// wrap when it is not nil, and counts the requests that reach it.
func mockServer(t *testing.T, cfg mock.Config, wrap func(http.Handler) http.Handler) (url string, requests *atomic.Int64) {
	t.Helper()
	requests = new(atomic.Int64)
	srv := mocktest.Start(t, cfg, mocktest.Wrap(func(h http.Handler) http.Handler {
		if wrap != nil {
			h = wrap(h)
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			h.ServeHTTP(w, r)
		})
	}))
	return srv.URL, requests
}

// spendCapped wraps a mock so that, while capped holds, a request whose
// body says "capped" gets Anthropic's 400 for a spent workspace spend
// limit in place of the mock's answer.
func spendCapped(capped *atomic.Bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if capped.Load() && bytes.Contains(body, []byte("capped")) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"type": "error", "error": {"type": "invalid_request_error", "message": "You have reached your specified workspace API usage limits. You will regain access on 2027-01-01 at 00:00 UTC."}}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func fastMock() mock.Config {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = time.Millisecond
	return cfg
}

func TestBatchHelp(t *testing.T) {
	out, _, code := runCLI(t, t.Context(), "help", "batch")
	if code != 0 {
		t.Fatalf("help batch: exit %d", code)
	}
	for _, flag := range []string{"--input", "--output", "--provider", "--model", "--max-tokens", "--stream", "--system-cache", "--base-url",
		"--target mock", "--api-key-command", "--strategy", "--config", "--only", "--max-retries", "--workers",
		"--state-file", "--schema", "--max-invalid", "--retry-failed", "--skip-invalid", "--grace", "--format",
		"--shared-redis", "--shared-key", "--shared-lease-ttl", "--shared-peers", "--shared-op-timeout",
		"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "130 interrupted"} {
		if !strings.Contains(out, flag) {
			t.Errorf("help batch lacks %q", flag)
		}
	}
}

func TestBatchUsageErrors(t *testing.T) {
	items := batchItems(t, 2, 5)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	state := filepath.Join(t.TempDir(), "state.json")
	tests := []struct {
		name string
		args []string
		env  string // ANTHROPIC_API_KEY
		want string
	}{
		{"no files", []string{"batch"}, "", "--input and --output are required"},
		{"no key no url", []string{"batch", "--input", items, "--output", out}, "", "no API key for anthropic: set ANTHROPIC_API_KEY"},
		{"key flag", []string{"batch", "--api-key=sk-flag-value-1234", "--input", items}, "", "never taken as a flag value"},
		{"bad target", []string{"batch", "--input", items, "--output", out, "--target", "prod"}, "", "--target: want mock"},
		{"bad strategy", []string{"batch", "--input", items, "--output", out, "--target", "mock", "--strategy", "semaphore"}, "", "n: required"},
		{"bad strategy kind", []string{"batch", "--input", items, "--output", out, "--target", "mock", "--strategy", "fastest"}, "", `unknown kind "fastest"`},
		{"bad provider", []string{"batch", "--input", items, "--output", out, "--target", "mock", "--provider", "cohere"}, "", `unknown provider "cohere"`},
		{"bad base url", []string{"batch", "--input", items, "--output", out, "--base-url", "localhost:8080"}, "k-1234", "must start with http://"},
		{"same file", []string{"batch", "--input", items, "--output", items, "--target", "mock"}, "", "are the same file"},
		{"missing input", []string{"batch", "--input", "/nonexistent/items.jsonl", "--output", out, "--target", "mock"}, "", "no such file"},
		{"missing schema", []string{"batch", "--input", items, "--output", out, "--target", "mock", "--schema", "/nonexistent/s.json"}, "", "--schema"},
		{"key command fails", []string{"batch", "--input", items, "--output", out, "--api-key-command", "echo denied >&2; exit 3"}, "", "--api-key-command: exit status 3: denied"},
		{"shared without key", []string{"batch", "--input", items, "--output", out, "--target", "mock", "--strategy", "semaphore:n=5", "--shared-redis", "redis://127.0.0.1:1/0"}, "", "--shared-key: required"},
		{"shared without redis", []string{"batch", "--input", items, "--output", out, "--target", "mock", "--strategy", "semaphore:n=5", "--shared-key", "k"}, "", "--shared-redis: required"},
		{"shared bad redis", []string{"batch", "--input", items, "--output", out, "--target", "mock", "--strategy", "semaphore:n=5", "--shared-redis", "127.0.0.1:6379", "--shared-key", "k"}, "", "--shared-redis: want redis://"},
		{"shared kind", []string{"batch", "--input", items, "--output", out, "--target", "mock", "--strategy", "aimd", "--shared-redis", "redis://127.0.0.1:1/0", "--shared-key", "k"}, "", "--strategy: kind aimd cannot share its limits through Redis"},
		{"shared unreachable", []string{"batch", "--input", items, "--output", out, "--target", "mock", "--strategy", "semaphore:n=5", "--shared-redis", "redis://127.0.0.1:1/0", "--shared-key", "k", "--shared-op-timeout", "300ms"}, "", "redis unreachable"},
		{"key command silent", []string{"batch", "--input", items, "--output", out, "--api-key-command", "true"}, "", "printed nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("ANTHROPIC_API_KEY", tt.env)
			_, stderr, code := runCLI(t, t.Context(), append(tt.args, "--state-file", state)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if strings.Contains(stderr, "sk-flag-value") {
				t.Errorf("stderr repeats the key given as a flag:\n%s", stderr)
			}
		})
	}
}

// TestBatchBadInput: each kind of defect is reported with its line number,
// and no call reaches the server.
func TestBatchBadInput(t *testing.T) {
	url, requests := mockServer(t, fastMock(), nil)
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-bad-input")
	good := `{"id": "a", "prompt": "x"}`
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"malformed JSON", []string{good, `{"id": "b", "prompt": "y"`}, "items.jsonl:2: invalid JSON"},
		{"not an object", []string{good, `"b"`}, "items.jsonl:2: want a JSON object"},
		{"missing id", []string{good, `{"prompt": "y"}`}, "items.jsonl:2: id: required"},
		{"empty id", []string{`{"id": "", "prompt": "y"}`}, "items.jsonl:1: id: required"},
		{"missing prompt", []string{good, ``, `{"id": "b"}`}, "items.jsonl:3: prompt: required"},
		{"duplicate id", []string{good, `{"id": "b", "prompt": "y"}`, `{"id": "a", "prompt": "z"}`}, `items.jsonl:3: id: duplicate id "a" (first on line 1)`},
		{"unknown key", []string{`{"id": "a", "prompt": "x", "model": "m"}`}, "items.jsonl:1: model: unknown key"},
		{"wrong type", []string{`{"id": "a", "prompt": "x", "max_tokens": "ten"}`}, `items.jsonl:1: max_tokens: want an integer, got "ten"`},
		{"bad message", []string{`{"id": "a", "messages": [{"role": "user", "content": ""}]}`}, "items.jsonl:1: messages[0].content: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "items.jsonl")
			if err := os.WriteFile(in, []byte(strings.Join(tt.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := requests.Load()
			_, stderr, code := runCLI(t, t.Context(), "batch", "--input", in, "--output", filepath.Join(dir, "out.jsonl"),
				"--base-url", url, "--state-file", "")
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if got := strings.ReplaceAll(stderr, dir+"/", ""); !strings.Contains(got, tt.want) || !strings.Contains(got, "nothing was run") {
				t.Errorf("stderr lacks %q and 'nothing was run':\n%s", tt.want, got)
			}
			if n := requests.Load() - before; n != 0 {
				t.Errorf("%d requests reached the server, want 0", n)
			}
		})
	}

	// --skip-invalid runs the good lines and lists the others.
	dir := t.TempDir()
	in := filepath.Join(dir, "items.jsonl")
	os.WriteFile(in, []byte(good+"\nnope\n"+`{"id": "a", "prompt": "again"}`+"\n"+`{"id": "b", "prompt": "y"}`+"\n"), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	_, stderr, code := runCLI(t, t.Context(), "batch", "--input", in, "--output", out, "--base-url", url, "--state-file", "", "--skip-invalid")
	if code != exitFailed || !strings.Contains(stderr, "skipping 2 invalid input lines") || !strings.Contains(stderr, "items.jsonl:2:") {
		t.Errorf("--skip-invalid: exit %d, stderr:\n%s\nwant exit 1 listing lines 2 and 3", code, stderr)
	}
	if got := results(t, out); len(got) != 2 || len(got["a"]) != 1 || got["a"][0].Text == "" || len(got["b"]) != 1 {
		t.Errorf("--skip-invalid: output %v, want one success each for a and b", got)
	}

	// --format json lists the skipped lines in the field-error shape.
	out2 := filepath.Join(dir, "out2.jsonl")
	stdout, _, _ := runCLI(t, t.Context(), "batch", "--input", in, "--output", out2, "--base-url", url, "--state-file", "", "--skip-invalid", "--format", "json")
	var sum struct {
		Invalid struct {
			Errors []map[string]any `json:"errors"`
			Total  int              `json:"total"`
		} `json:"invalid"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("--format json: %v\n%s", err, stdout)
	}
	if inv := sum.Invalid; inv.Total != 2 || len(inv.Errors) != 2 || inv.Errors[0]["line"] != 2.0 || inv.Errors[1]["path"] != "id" ||
		inv.Errors[0]["file"] != in || inv.Errors[0]["message"] == nil {
		t.Errorf("--format json: invalid = %+v, want 2 errors with file, line, path and message", inv)
	}
}

// TestBatchRequeueTightLimit runs a batch with no retries against a limit
// of 2 concurrent calls with an unbounded client: most calls are throttled,
// and every throttled item is re-queued until it succeeds, none lost and
// none recorded twice.
func TestBatchRequeueTightLimit(t *testing.T) {
	cfg := fastMock()
	cfg.Limits.MaxConcurrent = 2
	cfg.Limits.RetryAfter = 5 * time.Millisecond
	url, requests := mockServer(t, cfg, nil)
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-requeue")
	const n = 40
	out := filepath.Join(t.TempDir(), "out.jsonl")
	stdout, stderr, code := runCLI(t, t.Context(), "batch", "--input", batchItems(t, n, 5), "--output", out,
		"--base-url", url, "--strategy", "unbounded:max_retries=0", "--workers", "10", "--state-file", "")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", code, stdout, stderr)
	}
	attempts := 0
	for id, r := range exactlyOnce(t, out, n) {
		if !r.OK() {
			t.Errorf("%s: %v, want success", id, r.Err)
		}
		attempts += r.Attempts
	}
	if int64(attempts) != requests.Load() {
		t.Errorf("results count %d attempts, the server saw %d", attempts, requests.Load())
	}
	if attempts <= n || !strings.Contains(stdout, "re-queued") || strings.Contains(stdout, "re-queued 0)") {
		t.Errorf("%d attempts for %d items, summary:\n%s\nwant throttles re-queued", attempts, n, stdout)
	}
}

// jsonMock rewrites the text of the mock's Anthropic answers: items whose
// prompt contains "bad" always get text that fails the schema, "flaky" ones
// get invalid JSON on their first call only, the rest get valid JSON.
func jsonMock(next http.Handler) http.Handler {
	var mu sync.Mutex
	calls := make(map[string]int)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		json.Unmarshal(body, &req)
		prompt := req.Messages[0].Content
		mu.Lock()
		k := calls[prompt]
		calls[prompt]++
		mu.Unlock()
		var resp map[string]any
		if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &resp) == nil {
			text := `{"label": "billing", "confidence": 0.9}`
			switch {
			case strings.Contains(prompt, "bad"):
				text = `{"label": "unknown-label"}`
			case strings.Contains(prompt, "flaky") && k == 0:
				text = `{"label": "billing", "confid`
			case strings.Contains(prompt, "fenced"):
				text = "```json\n" + text + "\n```"
			}
			resp["content"] = []map[string]any{{"type": "text", "text": text}}
			b, _ := json.Marshal(resp)
			rec.Body = bytes.NewBuffer(b)
			rec.Header().Del("Content-Length")
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

func TestBatchSchema(t *testing.T) {
	url, requests := mockServer(t, fastMock(), jsonMock)
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-schema")
	schema := writeFile(t, "label.schema.json", `{
  "type": "object",
  "required": ["label"],
  "properties": {"label": {"enum": ["billing", "bug", "other"]}, "confidence": {"type": "number"}}
}`)
	in := writeFile(t, "items.jsonl", strings.Join([]string{
		`{"id": "ok", "prompt": "fine", "max_tokens": 5}`,
		`{"id": "fenced", "prompt": "fenced", "max_tokens": 5}`,
		`{"id": "flaky", "prompt": "flaky", "max_tokens": 5}`,
		`{"id": "bad", "prompt": "bad", "max_tokens": 5}`,
	}, "\n")+"\n")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	stdout, stderr, code := runCLI(t, t.Context(), "batch", "--input", in, "--output", out, "--base-url", url,
		"--schema", schema, "--max-invalid", "2", "--strategy", "semaphore:n=4", "--state-file", "")
	if code != exitFailed {
		t.Errorf("exit %d, want 1 (one item failed validation):\n%s%s", code, stdout, stderr)
	}
	got := results(t, out)
	for _, id := range []string{"ok", "fenced", "flaky"} {
		if rs := got[id]; len(rs) != 1 || !rs[0].OK() {
			t.Errorf("%s: %+v, want one success", id, rs)
		}
	}
	if rs := got["flaky"]; len(rs) == 1 && rs[0].Attempts != 2 {
		t.Errorf("flaky: %d attempts, want 2 (asked again once)", rs[0].Attempts)
	}
	bad := got["bad"]
	if len(bad) != 1 || bad[0].Err == nil || bad[0].Err.Type != "validation_error" ||
		!strings.Contains(bad[0].Err.Message, "/label") || bad[0].Attempts != 3 {
		t.Errorf("bad: %+v, want one validation_error naming /label after 3 attempts (1 + --max-invalid 2)", bad)
	}
	if bad[0].Err != nil {
		t.Logf("validation message: %s", bad[0].Err.Message)
	}
	if n := requests.Load(); n != 1+1+2+3 {
		t.Errorf("server saw %d requests, want 7", n)
	}
	if !strings.Contains(stdout, "validation_error 1") {
		t.Errorf("summary lacks the failure by kind:\n%s", stdout)
	}
}

// TestBatchSecretRedaction: a key the server echoes back in its errors
// never reaches stdout, stderr, the results or the state file, whether it
// comes from the environment or from --api-key-command.
func TestBatchSecretRedaction(t *testing.T) {
	const good, wrong = "sk-ant-GOOD-0123456789abcdef", "sk-ant-WRONG-9876543210fedcba"
	cfg := fastMock()
	cfg.APIKeys = []string{good}
	echo := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if k := r.Header.Get("X-Api-Key"); k != good {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key %s"}}`, k)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	url, _ := mockServer(t, cfg, echo)
	dir := t.TempDir()
	in := batchItems(t, 5, 3)
	state := filepath.Join(dir, "state.json")
	check := func(name, key string, texts ...string) {
		t.Helper()
		for i, s := range texts {
			if strings.Contains(s, key) {
				t.Errorf("%s: the key appears in text %d:\n%s", name, i, s)
			}
		}
	}
	for _, tt := range []struct {
		name, env, command, key string
		code                    int
	}{
		{"env good", good, "", good, 0},
		{"env wrong", wrong, "", wrong, exitFailed},
		{"command good", "", "printf '%s\\n' " + good, good, 0},
		{"command wrong", "", "echo " + wrong, wrong, exitFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("ANTHROPIC_API_KEY", tt.env)
			out := filepath.Join(dir, tt.name+".jsonl")
			args := []string{"batch", "--input", in, "--output", out, "--base-url", url, "--state-file", state}
			if tt.command != "" {
				args = append(args, "--api-key-command", tt.command)
			}
			stdout, stderr, code := runCLI(t, t.Context(), args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d:\n%s%s", code, tt.code, stdout, stderr)
			}
			data, _ := os.ReadFile(out)
			stateData, _ := os.ReadFile(state)
			check(tt.name, tt.key, stdout, stderr, string(data), string(stateData))
			if tt.code != 0 && !strings.Contains(string(data), "[REDACTED]") {
				t.Errorf("%s: results lack the redacted error:\n%s", tt.name, data)
			}
		})
	}
}

// buildLoadgen builds the loadgen binary into dir.
func buildLoadgen(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "loadgen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// countLines counts the complete lines of path.
func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n
}

// TestBatchKillResume starts loadgen batch as a process against the
// embedded mock, interrupts it part-way (SIGTERM, SIGINT, then SIGKILL), cuts
// the output's last line in half as a kill mid-write would, and reruns it
// to the end: every id is in the output exactly once, each a success.
func TestBatchKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const n = 300
	dir := t.TempDir()
	bin := buildLoadgen(t, dir)
	in := batchItems(t, n, 10)
	out := filepath.Join(dir, "results.jsonl")
	config := writeFile(t, "batch.yaml", `# 10 ms a call, 4 at once: about 0.75 s for the whole batch
server:
  latency: {per_token: 1ms}
  limits: {max_concurrent: 4}
strategies:
  - {name: sem4, kind: semaphore, n: 4}
`)
	args := []string{"batch", "--input", in, "--output", out, "--target", "mock", "--config", config, "--state-file", ""}

	// start runs the batch and waits until the output has at least lines
	// complete lines, then sends sig and returns the exit status and stderr.
	interrupt := func(lines int, sig syscall.Signal) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for countLines(out) < lines && ctx.Err() == nil {
			time.Sleep(2 * time.Millisecond)
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}

	var counts []int
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		code, stderr := interrupt(countLines(out)+40, sig)
		counts = append(counts, countLines(out))
		// The batch may have finished before the signal landed on a fast machine.
		if done := code == 0 && countLines(out) == n; !done && (code != exitInterrupted || !strings.Contains(stderr, "rerun the same command to resume")) {
			t.Errorf("%v: exit %d, want 130 asking for a rerun; stderr:\n%s", sig, code, stderr)
		}
	}
	code, _ := interrupt(countLines(out)+60, syscall.SIGKILL)
	counts = append(counts, countLines(out))
	if code != -1 && countLines(out) != n {
		t.Errorf("SIGKILL: exit %d, want killed", code)
	}
	// Simulate a kill in the middle of a write: half of one more line.
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"index":299,"id":"t-299","text":"the lab`)
	f.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	final, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed batch: %v\n%s", err, final)
	}
	if !strings.Contains(string(final), "was torn") {
		t.Errorf("resumed batch did not report the torn line:\n%s", final)
	}
	t.Logf("lines after SIGTERM, SIGINT, SIGKILL: %v; final run:\n%s", counts, final)
	for id, r := range exactlyOnce(t, out, n) {
		if !r.OK() {
			t.Errorf("%s: %v", id, r.Err)
		}
	}
}

// TestBatchPermanentFailures: 400, 401, 403 and 413 are recorded after one
// attempt, never retried; --retry-failed then makes exactly those items
// again, and the output still holds each id once.
func TestBatchPermanentFailures(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	fail := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			for _, status := range []int{400, 401, 403, 413} {
				if broken.Load() && bytes.Contains(body, []byte(fmt.Sprintf("status %d", status))) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(status)
					fmt.Fprintf(w, `{"type": "error", "error": {"type": "error_%d", "message": "refused"}}`, status)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	url, requests := mockServer(t, fastMock(), fail)
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-permanent")
	var lines []string
	for i := range 8 {
		prompt := "fine"
		if i < 4 {
			prompt = fmt.Sprintf("status %d", []int{400, 401, 403, 413}[i])
		}
		lines = append(lines, fmt.Sprintf(`{"id": "t-%d", "prompt": %q, "max_tokens": 3}`, i, prompt))
	}
	in := writeFile(t, "items.jsonl", strings.Join(lines, "\n")+"\n")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := []string{"batch", "--input", in, "--output", out, "--base-url", url, "--state-file", "", "--strategy", "semaphore:n=4"}

	stdout, stderr, code := runCLI(t, t.Context(), args...)
	if code != exitFailed || !strings.Contains(stderr, "4 items failed") {
		t.Errorf("exit %d, want 1 saying 4 items failed:\n%s%s", code, stdout, stderr)
	}
	if n := requests.Load(); n != 8 {
		t.Errorf("server saw %d requests, want 8 (permanent failures are not retried)", n)
	}
	for id, r := range exactlyOnce(t, out, 8) {
		i := int(id[2] - '0')
		switch {
		case i < 4 && (r.Err == nil || r.Err.Status != []int{400, 401, 403, 413}[i] || r.Attempts != 1):
			t.Errorf("%s: %+v after %d attempts, want status %d after 1", id, r.Err, r.Attempts, []int{400, 401, 403, 413}[i])
		case i >= 4 && !r.OK():
			t.Errorf("%s: %v, want success", id, r.Err)
		}
	}

	// Rerunning makes nothing; --retry-failed makes the four again.
	if _, _, code := runCLI(t, t.Context(), args...); code != exitFailed || requests.Load() != 8 {
		t.Errorf("rerun: exit %d, %d requests; want 1 and no new request", code, requests.Load())
	}
	broken.Store(false)
	stdout, stderr, code = runCLI(t, t.Context(), append(args, "--retry-failed")...)
	if code != 0 || !strings.Contains(stderr, "4 failed results removed") {
		t.Errorf("--retry-failed: exit %d, want 0 reporting 4 removed:\n%s%s", code, stdout, stderr)
	}
	if n := requests.Load(); n != 12 {
		t.Errorf("server saw %d requests in all, want 12", n)
	}
	for id, r := range exactlyOnce(t, out, 8) {
		if !r.OK() {
			t.Errorf("%s: %v after --retry-failed", id, r.Err)
		}
	}
}

func TestBatchJSONSummary(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	config := writeFile(t, "batch.yaml", "server:\n  latency: {per_token: 1ms}\n")
	stdout, stderr, code := runCLI(t, t.Context(), "batch", "--input", batchItems(t, 12, 4), "--output", out,
		"--target", "mock", "--config", config, "--strategy", "semaphore:n=3", "--format", "json", "--state-file", "")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	var got struct {
		Output, Strategy, Target string
		Items, Completed, Failed int
		Run                      measure.Summary
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, stdout)
	}
	if got.Output != out || got.Strategy != "semaphore:n=3" || got.Target != "embedded mock" ||
		got.Items != 12 || got.Completed != 12 || got.Failed != 0 || got.Run.Attempts != 12 || got.Run.OutputTokens != 48 {
		t.Errorf("summary = %+v", got)
	}
}

// TestBatchConfigTarget: a config's target (URL, provider, key variable),
// request and strategy drive the batch, here against OpenAI's wire format
// with streaming.
func TestBatchConfigTarget(t *testing.T) {
	cfg := fastMock()
	cfg.APIKeys = []string{"sk-config-target-key"}
	cfg.Models = mock.Models{Extra: []string{"gpt-test"}} // the gateway's own model name
	url, requests := mockServer(t, cfg, nil)
	t.Setenv("MY_GATEWAY_KEY", "sk-config-target-key")
	config := writeFile(t, "batch.yaml", fmt.Sprintf(`target: {url: %s, provider: openai, api_key_env: MY_GATEWAY_KEY}
request: {model: gpt-test, max_tokens: 3, stream: true}
strategies:
  - {name: fast, kind: semaphore, n: 8}
  - {name: slow, kind: semaphore, n: 1}
`, url))
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := []string{"batch", "--input", batchItems(t, 10, 0), "--output", out, "--config", config, "--state-file", ""}
	if _, stderr, code := runCLI(t, t.Context(), args...); code != exitUsage || !strings.Contains(stderr, `has 2 strategies ("fast", "slow"): choose one with --only NAME`) {
		t.Errorf("two strategies, none chosen: exit %d:\n%s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, t.Context(), append(args, "--only", "slow")...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "openai gpt-test at "+url+"/v1, strategy slow") {
		t.Errorf("summary does not name the config's target, model and strategy:\n%s", stdout)
	}
	for id, r := range exactlyOnce(t, out, 10) {
		if !r.OK() || r.StopReason != "length" || r.Usage.OutputTokens != 3 || r.Timings.TTFT <= 0 {
			t.Errorf("%s: %+v, want a streamed success of 3 tokens", id, r)
		}
	}
	if requests.Load() != 10 {
		t.Errorf("server saw %d requests, want 10", requests.Load())
	}
}

// TestBatchSchemaMalformedMock runs --schema against a mock configured to
// return JSON, invalid some of the time (output.text with faults.malformed):
// each invalid answer is asked again, so every item ends valid, and the
// re-asks are exactly the malformed answers the mock served. With every
// answer malformed, each item is recorded as a validation error after
// 1 + --max-invalid attempts.
func TestBatchSchemaMalformedMock(t *testing.T) {
	schema := writeFile(t, "label.schema.json", `{"type": "object", "required": ["label"],
  "properties": {"label": {"enum": ["billing", "bug", "other"]}}}`)
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf(`{"id": "t%d", "prompt": "ticket %d", "max_tokens": 50}`, i, i))
	}
	in := writeFile(t, "items.jsonl", strings.Join(lines, "\n")+"\n")
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-malformed")

	for _, tc := range []struct {
		name      string
		malformed float64
		wantCode  int
	}{{"sometimes", 0.3, 0}, {"always", 1, exitFailed}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fastMock()
			cfg.Seed = 7
			cfg.Output.Text = `{"label": "billing", "confidence": 0.92}`
			cfg.Faults.Malformed = tc.malformed
			srv := mocktest.Start(t, cfg)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			// One call at a time: the mock's seeded draws then fall on the
			// same items on every run.
			stdout, stderr, code := runCLI(t, t.Context(), "batch", "--input", in, "--output", out, "--base-url", srv.URL,
				"--schema", schema, "--max-invalid", "5", "--strategy", "semaphore:n=1", "--state-file", "")
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d:\n%s%s", code, tc.wantCode, stdout, stderr)
			}
			got := results(t, out)
			st := srv.Mock.Stats()
			malformed := int(st.Faults["malformed"])
			attempts, reasked := 0, 0
			for id, rs := range got {
				if len(rs) != 1 {
					t.Fatalf("%s: %d results, want 1", id, len(rs))
				}
				r := rs[0]
				attempts += r.Attempts
				reasked += r.Attempts - 1
				switch {
				case tc.malformed < 1 && (!r.OK() || r.Text != cfg.Output.Text):
					t.Errorf("%s: %+v, want the configured JSON", id, r)
				case tc.malformed == 1 && (r.Err == nil || r.Err.Type != "validation_error" || r.Attempts != 6):
					t.Errorf("%s: %+v, want a validation_error after 6 attempts", id, r)
				}
			}
			if len(got) != 30 || int(st.Attempts) != attempts {
				t.Errorf("%d results, %d attempts recorded; mock saw %d attempts; want 30 results and equal attempts", len(got), attempts, st.Attempts)
			}
			// Every malformed answer, and only those, was asked again (or,
			// on the last try, recorded as the item's validation error).
			if tc.malformed < 1 && (malformed != reasked || malformed == 0) {
				t.Errorf("mock served %d malformed answers, items were asked again %d times; want equal and > 0", malformed, reasked)
			}
			if tc.malformed == 1 && malformed != attempts {
				t.Errorf("mock served %d malformed answers of %d attempts, want all", malformed, attempts)
			}
		})
	}
}

// TestBatchQuotaExit: a spent spend cap (Anthropic's 400 for a limit the
// organization set) stops the batch with exit status 3 after one request
// for the refused item, records nothing for it, and a rerun once the cap is
// raised resumes with the items left.
func TestBatchQuotaExit(t *testing.T) {
	var capped atomic.Bool
	capped.Store(true)
	refuse := spendCapped(&capped)
	cfg := fastMock()
	cfg.Latency.PerToken = 20 * time.Millisecond // the others are slow beside the refusal
	url, requests := mockServer(t, cfg, refuse)
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-quota")
	var lines []string
	for i := range 6 {
		prompt := "fine"
		if i == 0 {
			prompt = "capped"
		}
		lines = append(lines, fmt.Sprintf(`{"id": "t-%d", "prompt": %q, "max_tokens": 3}`, i, prompt))
	}
	in := writeFile(t, "items.jsonl", strings.Join(lines, "\n")+"\n")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	// One worker takes the items in order, so the refused one goes first
	// whatever the machine's load (with more workers, any of them could
	// win the semaphore's one slot first).
	args := []string{"batch", "--input", in, "--output", out, "--base-url", url, "--state-file", "", "--strategy", "semaphore:n=1", "--workers", "1"}

	stdout, stderr, code := runCLI(t, t.Context(), args...)
	if code != exitQuota || !strings.Contains(stderr, "quota or spend cap spent") || !strings.Contains(stderr, "of 6 items have no result yet") {
		t.Errorf("exit %d, want 3 saying the quota is spent and how many items are left:\n%s%s", code, stdout, stderr)
	}
	// The refused item went first and was not retried, and the batch
	// stopped there: no other item was started.
	if n := requests.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1: the batch stopped at the refusal", n)
	}
	if got := results(t, out); len(got["t-0"]) != 0 {
		t.Errorf("the refused item has %d results, want none (left for the resume)", len(got["t-0"]))
	}
	capped.Store(false)
	if stdout, stderr, code := runCLI(t, t.Context(), args...); code != 0 {
		t.Errorf("rerun: exit %d, want 0:\n%s%s", code, stdout, stderr)
	}
	for id, r := range exactlyOnce(t, out, 6) {
		if !r.OK() {
			t.Errorf("%s: %v after the rerun", id, r.Err)
		}
	}
	// The rerun made only what the first run left: the refusal, then each
	// item once, in one run or the other.
	if n := requests.Load(); n != 1+6 {
		t.Errorf("%d requests in all, want 7 (the refusal, then each item once)", n)
	}
}

// TestBatchSystemCache: --system-cache (or the config's
// request.system_cache) sends each line's system prompt with Anthropic's
// cache_control, so the mock writes it to its cache on the first call and
// later calls read it; without it nothing is cached. It is refused for
// OpenAI, which caches by itself, and for a TTL Anthropic does not take.
func TestBatchSystemCache(t *testing.T) {
	url, _ := mockServer(t, fastMock(), nil)
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-cache")
	system := strings.Repeat("You classify support tickets by product area and urgency. ", 300) // well over the 1,024-token minimum
	var lines []string
	for i := range 4 {
		lines = append(lines, fmt.Sprintf(`{"id": "t-%d", "system": %q, "prompt": "ticket %d", "max_tokens": 3}`, i, system, i))
	}
	lines = append(lines, `{"id": "t-4", "prompt": "no system prompt", "max_tokens": 3}`)
	in := writeFile(t, "items.jsonl", strings.Join(lines, "\n")+"\n")
	config := writeFile(t, "config.yaml", "request: {system_cache: 1h}\n")
	for _, tc := range []struct {
		name   string
		args   []string
		cached bool
	}{
		{"none", nil, false},
		{"flag", []string{"--system-cache", "5m"}, true},
		{"config", []string{"--config", config}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.jsonl")
			args := append([]string{"batch", "--input", in, "--output", out, "--base-url", url, "--state-file", "", "--workers", "1"}, tc.args...)
			if stdout, stderr, code := runCLI(t, t.Context(), args...); code != 0 {
				t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
			}
			got := exactlyOnce(t, out, 5)
			for id, r := range got {
				u := r.Usage
				wantWrite, wantRead := tc.cached && id == "t-0", tc.cached && id != "t-0" && id != "t-4"
				if (u.CacheCreationInputTokens > 0) != wantWrite || (u.CacheReadInputTokens > 0) != wantRead {
					t.Errorf("%s: usage %+v; want a cache write %v, a cache read %v", id, u, wantWrite, wantRead)
				}
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--system-cache", "10m"}, "--system-cache: want 5m or 1h"},
		{[]string{"--system-cache", "5m", "--provider", "openai"}, "--system-cache is Anthropic's cache_control; openai caches"},
	} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		args := append([]string{"batch", "--input", in, "--output", out, "--base-url", url, "--state-file", ""}, tc.args...)
		if _, stderr, code := runCLI(t, t.Context(), args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
