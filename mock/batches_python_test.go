package mock_test

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/pyenv"
	"github.com/ratelab/ratelab/mock"
)

// TestPythonSDKBatches runs the Python anthropic and openai SDKs' batch
// methods (testdata/python/batches.py) against a mock on loopback, in real
// time with a fast queue: create, retrieve, results and files.content,
// cancel, list, delete.
func TestPythonSDKBatches(t *testing.T) {
	py := pyenv.Python(t)
	cfg, err := mock.ParseConfig([]byte(`
api_keys: [sk-py]
batches: {drain_rate: 200, startup: 20ms, finalize: 20ms, cancel_delay: 20ms}
`), "py.yaml")
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
	out, err := exec.Command(py, filepath.Join("testdata", "python", "batches.py"), "http://"+ln.Addr().String(), "sk-py").CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("batches.py: %v", err)
	}
	if n := strings.Count(string(out), "ok "); n != 15 {
		t.Errorf("%d checks passed, want 15", n)
	}
}
