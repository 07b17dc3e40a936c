package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// start runs run(args) until the test ends and returns the base URL it
// printed.
func start(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"--addr", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.Close()
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v, want nil after cancel", err)
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading first line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line = %q, want listening on http://127.0.0.1:PORT", line)
	}
	return url
}

func TestRunServesAndShutsDown(t *testing.T) {
	url := start(t, "--per-token-latency", "1ms", "--api-key", "k1", "--api-key", "k2")
	body := `{"model":"claude-haiku-4-5","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`
	for _, tt := range []struct {
		key  string
		want int
	}{{"k1", 200}, {"k2", 200}, {"nope", 401}, {"", 401}} {
		req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("anthropic-version", "2023-06-01")
		if tt.key != "" {
			req.Header.Set("x-api-key", tt.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("key %q: status = %d, want %d", tt.key, resp.StatusCode, tt.want)
		}
	}
}

func TestRunFlagsOverrideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mock.yaml")
	cfg := "limits:\n  max_concurrent: 5\n  rpm: 100\n  retry_after: 2s\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	url := start(t, "--config", path, "--rpm", "7", "--tpm", "9000", "--retry-after", "3s")
	resp, err := http.Get(url + "/_admin/limits")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"max_concurrent": 5.0, "rpm": 7.0, "tpm": 9000.0, "retry_after": "3s"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("limits.%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestRunErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("limits:\n  rpmm: 3\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "bogus"},
		{[]string{"--config", bad}, `bad.yaml:2: limits.rpmm: unknown key "rpmm" (did you mean rpm?)`},
		{[]string{"--config", "/nonexistent.yaml"}, "nonexistent"},
		{[]string{"--rpm", "-1"}, "limits.rpm"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--addr", "256.0.0.1:0"}, "listen"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestHelp(t *testing.T) {
	var out, errOut strings.Builder
	if err := run(context.Background(), []string{"--help"}, &out, &errOut); err != nil {
		t.Fatalf("run(--help) = %v, want nil", err)
	}
	if errOut.Len() > 0 {
		t.Errorf("--help wrote to stderr: %q", errOut.String())
	}
	for _, w := range []string{"--config", "-max-concurrent", "-rpm", "-itpm", "-otpm", "-tpm", "-per-token-latency",
		"-ttft", "-retry-after", "-api-key", "-admin-token", "-seed", "-addr", "count_rejected", "schedule:", "script:", "ceil(characters/4)", "GOGC"} {
		if !strings.Contains(out.String(), strings.TrimPrefix(w, "-")) {
			t.Errorf("--help does not mention %q", w)
		}
	}
}

// TestBinarySIGTERM builds the command and checks that SIGTERM is a
// graceful exit 0 that lets an in-flight response finish.
func TestBinarySIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "mockllm")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--per-token-latency", "5ms")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v", err)
	}
	url := strings.TrimPrefix(strings.TrimSpace(line), "listening on ")
	// A response of 100 tokens at 5ms is in flight when SIGTERM arrives.
	got := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", url+"/v1/messages",
			strings.NewReader(`{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	waitInFlight(t, url, 1)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v, want status 0", err)
	}
	if code := <-got; code != 200 {
		t.Errorf("in-flight request status = %d, want 200", code)
	}
}

// waitInFlight polls /_admin/stats until n requests are in flight.
func waitInFlight(t *testing.T, url string, n int) {
	t.Helper()
	for range 1000 {
		resp, err := http.Get(url + "/_admin/stats")
		if err == nil {
			var st struct {
				InFlight int `json:"in_flight"`
			}
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if st.InFlight == n {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never saw %d requests in flight", n)
}
