package mock_test

import (
	"path/filepath"
	"testing"
)

// TestPythonGoogleGenAI runs testdata/python/google_genai_clients.py —
// google-genai, unchanged, from the venv of python/requirements.lock —
// against two mocks: both backends (the Gemini API with a key, Vertex AI
// with a bearer token) on one, the 429s on one whose key allows one
// request a minute. The limited mock's counts show the SDK's retry rule: 1
// success and 1 + 3 = 4 throttled attempts (none without retry_options,
// attempts=3 with them).
func TestPythonGoogleGenAI(t *testing.T) {
	srv := scriptMock(t, "api_keys: [sk-test]\noutput: {tokens: {fixed: 12}}\nlatency: {per_token: 1ms}\n")
	lsrv := scriptMock(t, "api_keys: [sk-test]\nlatency: {per_token: 1ms}\nlimits: {rpm: 1}\n")
	runPython(t, clientScript{
		argv: []string{filepath.Join("testdata", "python", "google_genai_clients.py")},
		env:  []string{"GEMINI_BASE_URL=" + srv.URL, "VERTEX_BASE_URL=" + srv.URL, "GEMINI_LIMITED_URL=" + lsrv.URL},
	})
	if st := srv.Mock.Stats(); st.Admitted != 8 || st.Throttled != 0 || st.Errors != 0 {
		t.Errorf("mock: %d admitted, %d throttled, %d errors; want 8 (four checks a backend), 0, 0", st.Admitted, st.Throttled, st.Errors)
	}
	if st := lsrv.Mock.Stats(); st.Admitted != 1 || st.Throttled != 4 {
		t.Errorf("limited mock: %d admitted, %d throttled; want 1 and 4 (1 + 3 attempts)", st.Admitted, st.Throttled)
	}
}
