package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// limits reads /_admin/limits of the server at url.
func limits(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url + "/_admin/limits")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestEnvPrecedence: flags > environment > config file > defaults, for
// each layer a limit only it sets and one the layer above overrides.
func TestEnvPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mock.yaml")
	cfg := "limits:\n  max_concurrent: 5\n  rpm: 100\n  itpm: 1000\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MOCKLLM_CONFIG", path)
	t.Setenv("MOCKLLM_RPM", "50")           // over the file
	t.Setenv("MOCKLLM_ITPM", "")            // empty: unset, the file's stays
	t.Setenv("MOCKLLM_MAX_CONCURRENT", "7") // the flag wins
	t.Setenv("MOCKLLM_RETRY_AFTER", "2s")   // env only
	t.Setenv("MOCKLLM_API_KEY", "k1, k2,")
	url := start(t, "--max-concurrent", "9")
	got := limits(t, url)
	want := map[string]any{"max_concurrent": 9.0, "rpm": 50.0, "itpm": 1000.0, "retry_after": "2s"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("limits.%s = %v, want %v", k, got[k], v)
		}
	}
	body := `{"model":"claude-haiku-4-5","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`
	for key, status := range map[string]int{"k1": 200, "k2": 200, "k3": 401} {
		req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("MOCKLLM_API_KEY=k1,k2: key %s = %d, want %d", key, resp.StatusCode, status)
		}
	}
}

// TestEnvErrors: a bad value names its variable; a flag given on the
// command line shadows a bad variable.
func TestEnvErrors(t *testing.T) {
	for _, tt := range []struct {
		env, value, want string
	}{
		{"MOCKLLM_MAX_CONCURRENT", "ten", `environment variable MOCKLLM_MAX_CONCURRENT: invalid value "ten" for --max-concurrent: parse error`},
		{"MOCKLLM_TTFT", "5", `environment variable MOCKLLM_TTFT: invalid value "5" for --ttft: parse error`},
		{"MOCKLLM_RPM", "-1", "limits.rpm"},
		{"MOCKLLM_ADDR", "256.0.0.1:0", "listen"},
	} {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			err := run(context.Background(), nil, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s=%q: run = %v, want an error containing %q", tt.env, tt.value, err, tt.want)
			}
		})
	}
	t.Setenv("MOCKLLM_RPM", "lots")
	start(t, "--rpm", "3") // the flag wins; the variable is not read
}

func TestHelpListsEnv(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"--help"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"addr", "config", "max-concurrent", "per-token-latency", "api-key", "redis-prefix", "decode-budget", "shutdown-timeout"} {
		line := regexp.MustCompile(`(?m)^  ` + envName(name) + ` +--` + name + `$`)
		if !line.MatchString(out.String()) {
			t.Errorf("--help lacks the line %q", line)
		}
	}
	if strings.Contains(out.String(), "MOCKLLM_VERSION") {
		t.Error("--help lists MOCKLLM_VERSION; --version has no variable")
	}
}

// TestVersion: --version prints one line, NAME VERSION (revision REV, GO),
// and starts nothing; MOCKLLM_VERSION does not turn it on.
func TestVersion(t *testing.T) {
	var out, errOut strings.Builder
	if err := run(context.Background(), []string{"--version", "--addr", "256.0.0.1:0"}, &out, &errOut); err != nil {
		t.Fatalf("run(--version) = %v", err)
	}
	if re := regexp.MustCompile(`^mockllm \S+ \(revision \S+, \S+\)\n$`); !re.MatchString(out.String()) || errOut.Len() > 0 {
		t.Errorf("--version: stdout %q, stderr %q; want one line matching %s", out.String(), errOut.String(), re)
	}
	t.Setenv("MOCKLLM_VERSION", "true")
	start(t) // serves
}
