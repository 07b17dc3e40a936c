package mock_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/pyenv"
	"github.com/ratelab/ratelab/mock"
)

// TestPythonGoogleGenAI runs testdata/python/google_genai_clients.py —
// google-genai, unchanged, from the venv of python/requirements.lock —
// against two mocks: both backends (the Gemini API with a key, Vertex AI
// with a bearer token) on one, the 429s on one whose key allows one
// request a minute. The limited mock's counts show the SDK's retry rule: 1
// success and 1 + 3 = 4 throttled attempts (none without retry_options,
// attempts=3 with them).
func TestPythonGoogleGenAI(t *testing.T) {
	py := pyenv.Python(t)
	serve := func(yaml string) (string, *mock.Server) {
		cfg, err := mock.ParseConfig([]byte(yaml), "python.yaml")
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
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "python", "google_genai_clients.py"))
	cmd.Env = append(os.Environ(), "GEMINI_BASE_URL="+base, "VERTEX_BASE_URL="+base, "GEMINI_LIMITED_URL="+lbase)
	out, err := cmd.CombinedOutput()
	t.Logf("google_genai_clients.py:\n%s", out)
	if err != nil {
		t.Fatalf("google_genai_clients.py: %v", err)
	}
	if st := srv.Stats(); st.Admitted != 8 || st.Throttled != 0 || st.Errors != 0 {
		t.Errorf("mock: %d admitted, %d throttled, %d errors; want 8 (four checks a backend), 0, 0", st.Admitted, st.Throttled, st.Errors)
	}
	if st := lsrv.Stats(); st.Admitted != 1 || st.Throttled != 4 {
		t.Errorf("limited mock: %d admitted, %d throttled; want 1 and 4 (1 + 3 attempts)", st.Admitted, st.Throttled)
	}
}
