package mock_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPythonSDKBatches runs the Python anthropic and openai SDKs' batch
// methods (testdata/python/batches.py) against a mock on loopback, in real
// time with a fast queue: create, retrieve, results and files.content,
// cancel, list, delete.
func TestPythonSDKBatches(t *testing.T) {
	srv := scriptMock(t, `
api_keys: [sk-py]
batches: {drain_rate: 200, startup: 20ms, finalize: 20ms, cancel_delay: 20ms}
`)
	out := runPython(t, clientScript{argv: []string{filepath.Join("testdata", "python", "batches.py"), srv.URL, "sk-py"}})
	if n := strings.Count(out, "ok "); n != 15 {
		t.Errorf("%d checks passed, want 15", n)
	}
}
