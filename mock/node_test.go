package mock_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
)

// TestNodeClients runs testdata/node/clients.mjs — the Vercel AI SDK and
// LangChain JS, unchanged — against a mock configured as mockllm serves by
// default (natural stops), with the AI SDK 6 (testdata/node) and 7
// (testdata/node-ai7, the same script through a symlink). The mock's
// metrics then show that every request succeeded and that the AI SDK's
// default OpenAI provider used the Responses API: its five checks, one
// request each. It needs node and the packages `npm ci` installs in each
// folder (make node-deps does).
func TestNodeClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the JavaScript client tests need node and `npm ci` in mock/testdata/node and mock/testdata/node-ai7 (make node-deps)")
	}
	for _, dir := range []string{"node", "node-ai7"} {
		t.Run(dir, func(t *testing.T) { runNodeClients(t, node, filepath.Join("testdata", dir)) })
	}
}

func runNodeClients(t *testing.T, node, dir string) {
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("node is installed but %s/node_modules is missing: run `npm ci` in %s", dir, dir)
	}
	cfg, err := mock.ParseConfig([]byte("output:\n  length: natural\nlatency:\n  per_token: 1ms\n"), "node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// --preserve-symlinks-main: node-ai7's clients.mjs is a symlink, and its
	// imports must resolve in its own folder's node_modules.
	cmd := exec.CommandContext(ctx, node, "--preserve-symlinks", "--preserve-symlinks-main", "clients.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANTHROPIC_BASE_URL="+base, "OPENAI_BASE_URL="+base+"/v1")
	out, err := cmd.CombinedOutput()
	t.Logf("node clients.mjs in %s:\n%s", dir, out)
	if err != nil {
		t.Fatalf("node clients.mjs: %v", err)
	}

	ok, failed := requestsByAPI(t, base)
	t.Logf("successful requests by API: %v", ok)
	if len(failed) > 0 {
		t.Errorf("requests that did not succeed, by API and status: %v", failed)
	}
	if ok["openai-responses"] != 5 {
		t.Errorf("%d successful /v1/responses requests, want 5 (the default provider's checks); by API: %v", ok["openai-responses"], ok)
	}
}

// requestsByAPI reads mockllm_requests_total from the mock's /metrics:
// successful requests by API, and the others by API and status.
func requestsByAPI(t *testing.T, base string) (ok, failed map[string]int) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	ok, failed = map[string]int{}, map[string]int{}
	label := func(line, name string) string {
		_, v, _ := strings.Cut(line, name+`="`)
		v, _, _ = strings.Cut(v, `"`)
		return v
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "mockllm_requests_total{") {
			continue
		}
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		api, status := label(line, "api"), label(line, "status")
		if status == "200" {
			ok[api] += int(n)
		} else {
			failed[api+" "+status] += int(n)
		}
	}
	return ok, failed
}
