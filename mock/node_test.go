package mock_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
)

// TestNodeClients runs testdata/node/clients.mjs — the Vercel AI SDK and
// LangChain JS, unchanged — against a mock configured as mockllm serves by
// default (natural stops). It needs node and the packages `npm ci`
// installs in testdata/node (.ci/run does); it skips, saying which, only
// when node is absent.
func TestNodeClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the JavaScript client tests need node and `npm ci` in mock/testdata/node")
	}
	dir := filepath.Join("testdata", "node")
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
	cmd := exec.CommandContext(ctx, node, "clients.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANTHROPIC_BASE_URL="+base, "OPENAI_BASE_URL="+base+"/v1")
	out, err := cmd.CombinedOutput()
	t.Logf("node clients.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("node clients.mjs: %v", err)
	}
}
