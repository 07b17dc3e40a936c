package mock

import (
	"strings"
	"testing"
	"time"
)

// The Gemini and Vertex wire details no SDK test reaches: ?key=, the
// statuses of a missing or wrong credential, the SSE framing, and the
// 400s naming their field.
func TestGeminiWire(t *testing.T) {
	ts := startServer(t, Config{APIKeys: []string{"k"}, Output: Output{Tokens: Distribution{Kind: Fixed, Min: 3}}})
	defer ts.stop()
	const path = "/v1beta/models/gemini-2.5-flash:generateContent"
	const body = `{"contents":[{"role":"user","parts":[{"text":"Hello"}]}]}`
	status := func(r reply) (int, string, string) {
		m := r.json(t)
		e, _ := m["error"].(map[string]any)
		s, _ := e["status"].(string)
		msg, _ := e["message"].(string)
		return r.status, s, msg
	}
	tests := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		want                     string // in the body
	}{
		{"key in the query", "POST", path + "?key=k", body, nil, 200, `"finishReason":"STOP"`},
		{"no key", "POST", path, body, nil, 403, "PERMISSION_DENIED"},
		{"wrong key", "POST", path, body, []string{"x-goog-api-key", "nope"}, 400, "API_KEY_INVALID"},
		{"vertex without a token", "POST", "/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:generateContent", body, nil, 401, "UNAUTHENTICATED"},
		{"bad role", "POST", path, `{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`, []string{"x-goog-api-key", "k"}, 400, `"field":"contents[0].role"`},
		{"no contents", "POST", path, `{}`, []string{"x-goog-api-key", "k"}, 400, `"field":"contents"`},
		{"empty part", "POST", path, `{"contents":[{"parts":[{}]}]}`, []string{"x-goog-api-key", "k"}, 400, `"field":"contents[0].parts[0]"`},
		{"schema without json", "POST", path, `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseSchema":{"type":"OBJECT"}}}`, []string{"x-goog-api-key", "k"}, 400, "generationConfig.responseMimeType"},
		{"bad type", "POST", path, `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":"many"}}`, []string{"x-goog-api-key", "k"}, 400, "Invalid JSON payload received"},
		{"stream without alt=sse", "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", body, []string{"x-goog-api-key", "k"}, 400, `"field":"alt"`},
		{"unknown method", "POST", "/v1beta/models/gemini-2.5-flash:embedContent", body, []string{"x-goog-api-key", "k"}, 404, "NOT_FOUND"},
		{"unknown path", "POST", "/v1beta/tunedModels", body, []string{"x-goog-api-key", "k"}, 404, "NOT_FOUND"},
		{"unknown model", "POST", "/v1beta/models/gemini-0:generateContent", body, []string{"x-goog-api-key", "k"}, 404, "models/gemini-0 is not found"},
		{"claude without anthropic_version", "POST", "/v1/projects/p/locations/l/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict",
			`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, []string{"authorization", "Bearer k"}, 400, "anthropic_version: field required"},
		{"claude with a model in the body", "POST", "/v1/projects/p/locations/l/publishers/anthropic/models/claude-haiku-4-5:rawPredict",
			`{"anthropic_version":"vertex-2023-10-16","model":"x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, []string{"authorization", "Bearer k"}, 400, "takes the model from the path"},
		{"claude", "POST", "/v1/projects/p/locations/l/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict",
			`{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, []string{"authorization", "Bearer k"}, 200, `"model":"claude-haiku-4-5@20251001"`},
		{"claude, unknown model", "POST", "/v1/projects/p/locations/l/publishers/anthropic/models/claude-0:rawPredict",
			`{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, []string{"authorization", "Bearer k"}, 404, "NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(t, tt.method, tt.path, tt.body, tt.headers...)
			if r.status != tt.status || !strings.Contains(string(r.body), tt.want) {
				t.Errorf("%d %s, want %d with %s", r.status, r.body, tt.status, tt.want)
			}
			if r.status != 200 && strings.Contains(string(r.body), `"error":{"code"`) {
				if code, st, msg := status(r); code != r.status || st == "" || msg == "" {
					t.Errorf("envelope: code %d status %q message %q", code, st, msg)
				}
			}
			for _, h := range []string{"Openai-Version", "Anthropic-Organization-Id", "Retry-After"} {
				if r.header.Get(h) != "" {
					t.Errorf("%s sent: Google's front end sends none", h)
				}
			}
		})
	}

	// The stream: data frames ending in CRLF CRLF, the tokens (merged when
	// they fall due at once), then a last
	// with finishReason and the whole usage.
	r := ts.do(t, "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body, "x-goog-api-key", "k")
	frames := strings.Split(strings.TrimSuffix(string(r.body), "\r\n\r\n"), "\r\n\r\n")
	last := frames[len(frames)-1]
	if r.status != 200 || len(frames) < 2 || !strings.Contains(last, `"finishReason":"STOP"`) || !strings.Contains(last, `"candidatesTokenCount":3`) {
		t.Errorf("stream: %d, %d frames: %q", r.status, len(frames), r.body)
	}
	for _, f := range frames {
		if !strings.HasPrefix(f, "data: {") {
			t.Errorf("frame %q, want data: {…}", f)
		}
	}
	// countTokens, both request forms.
	for _, b := range []string{body, `{"generateContentRequest":{"model":"models/gemini-2.5-flash",` + body[1:] + `}`} {
		r := ts.do(t, "POST", "/v1beta/models/gemini-2.5-flash:countTokens", b, "x-goog-api-key", "k")
		if r.status != 200 || !strings.Contains(string(r.body), `"totalTokens":2`) {
			t.Errorf("countTokens %s: %d %s, want totalTokens 2", b, r.status, r.body)
		}
	}
}

// TestGeminiRetryInfo: the wait the core computes travels as RetryInfo's
// retryDelay, in whole seconds as retry-after would (1.5 s is 2s), with no
// retry-after header.
func TestGeminiRetryInfo(t *testing.T) {
	ts := startServer(t, Config{Faults: Faults{Script: []ScriptStep{{Attempts: 1, Status: 429, RetryAfter: 1500 * time.Millisecond}}}})
	defer ts.stop()
	r := ts.do(t, "POST", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"parts":[{"text":"x"}]}]}`, "x-stainless-retry-count", "0")
	if r.status != 429 || !strings.Contains(string(r.body), `"retryDelay":"2s"`) || !strings.Contains(string(r.body), "RESOURCE_EXHAUSTED") || r.header.Get("Retry-After") != "" {
		t.Errorf("%d %v %s, want 429 RESOURCE_EXHAUSTED with retryDelay 2s and no retry-after", r.status, r.header, r.body)
	}
	// formatProtoDuration's fractional seconds: mock/internal/gemini's
	// TestFormatProtoDuration.
}
