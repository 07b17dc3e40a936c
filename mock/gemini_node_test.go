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

// TestNodeGoogleClients runs testdata/node/google.mjs — @google/genai and
// the AI SDK's @ai-sdk/google, unchanged — against two mocks: one serving
// as mockllm does by default, one whose key allows one request a minute.
// The limited mock's counts then show each SDK's retry rule: 1 success, and
// 1 + 3 + 3 = 7 throttled attempts (genai without retryOptions, genai with
// attempts 3, the AI SDK with maxRetries 2).
func TestNodeGoogleClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the JavaScript client tests need node and `npm ci` in mock/testdata/node (make node-deps)")
	}
	dir := filepath.Join("testdata", "node")
	for _, pkg := range []string{"@google/genai", "@ai-sdk/google"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil {
			t.Fatalf("node is installed but %s/node_modules/%s is missing: run `npm ci` in %s", dir, pkg, dir)
		}
	}
	serve := func(yaml string) (string, *mock.Server) {
		cfg, err := mock.ParseConfig([]byte(yaml), "node.yaml")
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
		t.Cleanup(func() { srv.Close() })
		return "http://" + ln.Addr().String(), srv
	}
	base, srv := serve("api_keys: [sk-test]\noutput: {tokens: {fixed: 12}}\nlatency: {per_token: 1ms}\n")
	lbase, lsrv := serve("api_keys: [sk-test]\nlatency: {per_token: 1ms}\nlimits: {rpm: 1}\n")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "google.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GEMINI_BASE_URL="+base, "GEMINI_LIMITED_URL="+lbase)
	out, err := cmd.CombinedOutput()
	t.Logf("node google.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("node google.mjs: %v", err)
	}
	if st := srv.Stats(); st.Throttled != 0 || st.Errors != 0 || st.Admitted != 9 {
		t.Errorf("mock: %d admitted, %d throttled, %d errors; want 9 (one per check), 0, 0", st.Admitted, st.Throttled, st.Errors)
	}
	if st := lsrv.Stats(); st.Admitted != 1 || st.Throttled != 7 {
		t.Errorf("limited mock: %d admitted, %d throttled; want 1 and 7 (1 + 3 + 3 attempts)", st.Admitted, st.Throttled)
	}
}
