package mock_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/pyenv"
	"github.com/ratelab/ratelab/mock"
)

// azureClientsConfig is the Azure mock the Python and Node clients run
// against: chat-prod serves gpt-4o, limited and limited-ai serve it at one request at
// once, then one a second (the clients' 429 checks wait up to that second);
// mini serves gpt-4o-mini. Answers are 12 tokens.
const azureClientsConfig = `
api_keys: [` + sdkKey + `]
latency: {per_token: 1ms}
output: {tokens: {fixed: 12}}
azure:
  deployments:
    chat-prod: {model: gpt-4o}
    limited: {model: gpt-4o, limits: {rpm: 60, burst: 1s}}
    limited-ai: {model: gpt-4o, limits: {rpm: 60, burst: 1s}}
    mini: {model: gpt-4o-mini}
`

// serveAzure serves cfg on 127.0.0.1 until the test ends and returns its
// base URL.
func serveAzure(t *testing.T, yaml string) string {
	t.Helper()
	cfg, err := mock.ParseConfig([]byte(yaml), "azure.yaml")
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
	return "http://" + ln.Addr().String()
}

// runAzureClient runs a client script with MOCK_URL and MOCK_FILTER_URL
// and checks that it printed every check's ok line.
func runAzureClient(t *testing.T, want []string, name string, args ...string) {
	t.Helper()
	url := serveAzure(t, azureClientsConfig)
	filter := serveAzure(t, azureClientsConfig+"  content_filter: 1\n")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "MOCK_URL="+url, "MOCK_FILTER_URL="+filter)
	cmd.Dir = filepath.Dir(args[len(args)-1])
	cmd.Args[len(cmd.Args)-1] = filepath.Base(args[len(args)-1])
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", args[len(args)-1], out)
	if err != nil {
		t.Fatalf("%s: %v", args[len(args)-1], err)
	}
	for _, w := range want {
		if !strings.Contains(string(out), "\nok "+w) && !strings.HasPrefix(string(out), "ok "+w) {
			t.Errorf("no %q line: the check did not run", "ok "+w)
		}
	}
}

// TestAzurePythonClient runs openai.AzureOpenAI, unchanged, against the
// mock: plain, stream, tools, structured output, a 429 it retries after
// retry-after-ms, and the content filter's 400.
func TestAzurePythonClient(t *testing.T) {
	py := pyenv.Python(t)
	runAzureClient(t, []string{"plain", "stream", "tools", "structured", "429 retried", "429 error", "content_filter"}, py, "testdata/python/azure_openai.py")
}

// TestAzureNodeClients runs openai's AzureOpenAI and the AI SDK's
// @ai-sdk/azure, unchanged, against the mock (testdata/node/azure.mjs).
func TestAzureNodeClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the JavaScript client tests need node and `npm ci` in mock/testdata/node (make node-deps)")
	}
	if _, err := os.Stat("testdata/node/node_modules/@ai-sdk/azure"); err != nil {
		t.Fatal("testdata/node/node_modules lacks @ai-sdk/azure: run make node-deps")
	}
	var want []string
	for _, c := range []string{"openai", "ai-sdk responses", "ai-sdk chat"} {
		for _, k := range []string{"plain", "stream", "tools", "structured"} {
			want = append(want, c+" "+k)
		}
	}
	runAzureClient(t, append(want, "openai 429", "openai content_filter", "ai-sdk 429"), node, "testdata/node/azure.mjs")
}
