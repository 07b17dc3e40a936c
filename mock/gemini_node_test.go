package mock_test

import (
	"path/filepath"
	"testing"
)

// TestNodeGoogleClients runs testdata/node/google.mjs — @google/genai and
// the AI SDK's @ai-sdk/google, unchanged — against two mocks: one serving
// as mockllm does by default, for genai on both backends (the Gemini API
// with a key, Vertex AI with a bearer token) and the AI SDK, and one whose
// key allows one request a minute. The first mock's metrics show each
// backend's requests succeeded; the limited mock's counts show each SDK's
// retry rule: 1 success, and 1 + 3 + 3 = 7 throttled attempts (genai
// without retryOptions, genai with attempts 3, the AI SDK with maxRetries
// 2).
func TestNodeGoogleClients(t *testing.T) {
	srv := scriptMock(t, "api_keys: [sk-test]\noutput: {tokens: {fixed: 12}}\nlatency: {per_token: 1ms}\n")
	lsrv := scriptMock(t, "api_keys: [sk-test]\nlatency: {per_token: 1ms}\nlimits: {rpm: 1}\n")
	runNode(t, clientScript{
		dir:  filepath.Join("testdata", "node"),
		argv: []string{"google.mjs"},
		env:  []string{"GEMINI_BASE_URL=" + srv.URL, "VERTEX_BASE_URL=" + srv.URL, "GEMINI_LIMITED_URL=" + lsrv.URL},
	}, "@google/genai", "@ai-sdk/google", "google-auth-library")
	if st := srv.Mock.Stats(); st.Throttled != 0 || st.Errors != 0 || st.Admitted != 13 {
		t.Errorf("mock: %d admitted, %d throttled, %d errors; want 13 (one per check), 0, 0", st.Admitted, st.Throttled, st.Errors)
	}
	// genai's four checks and the AI SDK's five on the Gemini API, genai's
	// four on Vertex AI (its paths, its bearer token).
	checkRequests(t, map[string]string{"GEMINI_BASE_URL": srv.URL}, map[string]string{"GEMINI_BASE_URL": "map[gemini:9 vertex:4] map[]"})
	if st := lsrv.Mock.Stats(); st.Admitted != 1 || st.Throttled != 7 {
		t.Errorf("limited mock: %d admitted, %d throttled; want 1 and 7 (1 + 3 + 3 attempts)", st.Admitted, st.Throttled)
	}
}
