package mock

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
)

func TestBadInput(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name       string
		path, body string
		wantStatus int
		wantMsg    string // substring of the message: names the field
		wantParam  string // OpenAI's error.param
	}{
		{"not json", "/v1/messages", `{"model":`, 400, "invalid JSON", ""},
		{"array body", "/v1/messages", `[]`, 400, "JSON object", ""},
		{"null body", "/v1/messages", `null`, 400, "model: field required", ""},
		{"empty body", "/v1/messages", ``, 400, "invalid JSON", ""},
		{"model missing", "/v1/messages", `{"max_tokens":5,` + msgs + `}`, 400, "model: field required", ""},
		{"model wrong type", "/v1/messages", `{"model":5,"max_tokens":5,` + msgs + `}`, 400, "model: want a string", ""},
		{"model empty", "/v1/messages", `{"model":"","max_tokens":5,` + msgs + `}`, 400, "model: must not be empty", ""},
		{"max_tokens missing", "/v1/messages", `{"model":"m",` + msgs + `}`, 400, "max_tokens: field required", ""},
		{"max_tokens zero", "/v1/messages", `{"model":"m","max_tokens":0,` + msgs + `}`, 400, "max_tokens: must be at least 1", ""},
		{"max_tokens negative", "/v1/messages", `{"model":"m","max_tokens":-3,` + msgs + `}`, 400, "max_tokens: must be at least 1", ""},
		{"max_tokens string", "/v1/messages", `{"model":"m","max_tokens":"5",` + msgs + `}`, 400, "max_tokens: want an integer", ""},
		{"max_tokens float", "/v1/messages", `{"model":"m","max_tokens":1.5,` + msgs + `}`, 400, "max_tokens: want an integer", ""},
		{"max_tokens huge", "/v1/messages", `{"model":"m","max_tokens":99999999,` + msgs + `}`, 400, "max_tokens: 99999999 is above", ""},
		{"messages missing", "/v1/messages", `{"model":"m","max_tokens":5}`, 400, "messages: field required", ""},
		{"messages empty", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[]}`, 400, "messages: at least one", ""},
		{"messages not array", "/v1/messages", `{"model":"m","max_tokens":5,"messages":"hi"}`, 400, "messages: want an array", ""},
		{"message not object", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[1]}`, 400, "messages.0: want a message object", ""},
		{"role missing", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"content":"hi"}]}`, 400, "messages.0.role: field required", ""},
		{"role invalid", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"bot","content":"hi"}]}`, 400, "messages.0.role: want user or assistant", ""},
		{"content missing", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user"}]}`, 400, "messages.0.content: field required", ""},
		{"content number", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`, 400, "messages.0.content: want a string or an array", ""},
		{"block without type", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{}]}]}`, 400, "messages.0.content.0.type: field required", ""},
		{"block not object", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[7]}]}`, 400, "messages.0.content.0: want a content block", ""},
		{"stream not bool", "/v1/messages", `{"model":"m","max_tokens":5,"stream":"yes",` + msgs + `}`, 400, "stream: want a boolean", ""},
		{"system wrong type", "/v1/messages", `{"model":"m","max_tokens":5,"system":5,` + msgs + `}`, 400, "system: want a string", ""},
		{"count_tokens without messages", "/v1/messages/count_tokens", `{"model":"m"}`, 400, "messages: field required", ""},
		{"openai not json", "/v1/chat/completions", `{`, 400, "invalid JSON", ""},
		{"openai model missing", "/v1/chat/completions", `{` + msgs + `}`, 400, "model: field required", "model"},
		{"openai max_completion_tokens zero", "/v1/chat/completions", `{"model":"m","max_completion_tokens":0,` + msgs + `}`, 400, "max_completion_tokens: must be at least 1", "max_completion_tokens"},
		{"openai max_tokens negative", "/v1/chat/completions", `{"model":"m","max_tokens":-1,` + msgs + `}`, 400, "max_tokens: must be at least 1", "max_tokens"},
		{"openai messages empty", "/v1/chat/completions", `{"model":"m","messages":[]}`, 400, "messages: at least one", "messages"},
		{"openai role invalid", "/v1/chat/completions", `{"model":"m","messages":[{"role":"x","content":"hi"}]}`, 400, "messages.0.role", "messages.0.role"},
		{"openai user content null", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":null}]}`, 400, "messages.0.content: field required", "messages.0.content"},
		{"openai stream_options without stream", "/v1/chat/completions", `{"model":"m","stream_options":{"include_usage":true},` + msgs + `}`, 400, "stream_options", "stream_options"},
		{"openai stream_options wrong type", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":[],` + msgs + `}`, 400, "stream_options: want an object", "stream_options"},
	}
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		ts := startServer(t, cfg)
		defer ts.stop()
		for _, tt := range tests {
			r := ts.do(t, "POST", tt.path, tt.body)
			if r.status != tt.wantStatus {
				t.Errorf("%s: status = %d, want %d; body %s", tt.name, r.status, tt.wantStatus, r.body)
				continue
			}
			m := r.json(t)
			e, _ := m["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("%s: message = %q, want it to contain %q", tt.name, msg, tt.wantMsg)
			}
			if strings.HasPrefix(tt.path, "/v1/chat/") {
				if tt.wantParam != "" && e["param"] != tt.wantParam {
					t.Errorf("%s: param = %v, want %q", tt.name, e["param"], tt.wantParam)
				}
				if r.header.Get("X-Request-Id") == "" {
					t.Errorf("%s: no x-request-id", tt.name)
				}
			} else {
				if m["type"] != "error" || e["type"] != "invalid_request_error" || m["request_id"] != r.header.Get("Request-Id") || m["request_id"] == "" {
					t.Errorf("%s: envelope = %s, want type error, invalid_request_error and request_id = the request-id header", tt.name, r.body)
				}
			}
		}
		if st := ts.Stats(); st.Errors != int64(len(tests)-1) || st.Admitted != 0 { // count_tokens is not an attempt
			t.Errorf("stats: errors %d admitted %d, want %d and 0", st.Errors, st.Admitted, len(tests)-1)
		}
	})
}

// unsized hides a reader's length so the request is sent chunked.
type unsized struct{ io.Reader }

func TestBodyTooLarge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, DefaultConfig())
		defer ts.stop()
		big := bytes.Repeat([]byte("x"), MaxBodyBytes+1)
		for _, tc := range []struct {
			path    string
			chunked bool
		}{{"/v1/messages", false}, {"/v1/messages", true}, {"/v1/chat/completions", false}, {"/v1/messages/count_tokens", true}} {
			var body io.Reader = bytes.NewReader(big)
			if tc.chunked {
				body = unsized{body}
			}
			req, _ := http.NewRequest("POST", "http://mock"+tc.path, body)
			setHeaders(req, nil)
			resp, err := ts.client.Do(req)
			if err != nil {
				// The server may close before reading all of a chunked body;
				// the client then sees a broken pipe instead of the 413.
				if tc.chunked {
					continue
				}
				t.Fatalf("%s: %v", tc.path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 413 {
				t.Errorf("%s chunked=%v: status %d, want 413", tc.path, tc.chunked, resp.StatusCode)
			}
			want := `"request_too_large"`
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("%s chunked=%v: body %s, want %s", tc.path, tc.chunked, b, want)
			}
		}
	})
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		method, path string
		wantStatus   int
		wantBody     string
		wantAllow    string
	}{
		{"GET", "/v1/messages", 405, `"type":"error","error":{"type":"invalid_request_error","message":"method GET not allowed for /v1/messages; use POST"}`, "POST"},
		{"GET", "/v1/chat/completions", 405, `{"error":{"message":"method GET not allowed for /v1/chat/completions; use POST","type":"invalid_request_error"`, "POST"},
		{"POST", "/v1/models", 405, `"type":"invalid_request_error","message":"method POST not allowed for /v1/models; use GET"`, "GET"},
		{"GET", "/v1/nope", 404, `"type":"not_found_error","message":"not found: GET /v1/nope"`, ""},
		{"POST", "/v1/chat/nope", 404, `"code":"unknown_url"`, ""},
		{"GET", "/", 404, `"not_found_error"`, ""},
		{"GET", "/v1/models", 200, `"id":"claude-sonnet-4-5"`, ""},
		{"GET", "/metrics", 200, "# TYPE mockllm_in_flight_requests gauge", ""},
	}
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, DefaultConfig())
		defer ts.stop()
		for _, tt := range tests {
			r := ts.do(t, tt.method, tt.path, "")
			if r.status != tt.wantStatus || !strings.Contains(string(r.body), tt.wantBody) || r.header.Get("Allow") != tt.wantAllow {
				t.Errorf("%s %s: %d %q allow %q, want %d containing %q allow %q", tt.method, tt.path, r.status, r.body, r.header.Get("Allow"), tt.wantStatus, tt.wantBody, tt.wantAllow)
			}
		}
	})
}

func TestAuth(t *testing.T) {
	body := anthropicBody(1, false, "hi")
	tests := []struct {
		name    string
		path    string
		headers []string
		want    int
		wantMsg string
	}{
		{"anthropic x-api-key", "/v1/messages", []string{"x-api-key", "k1"}, 200, ""},
		{"anthropic bearer", "/v1/messages", []string{"Authorization", "Bearer k2"}, 200, ""},
		{"anthropic missing", "/v1/messages", nil, 401, `"authentication_error","message":"x-api-key header is required"`},
		{"anthropic wrong", "/v1/messages", []string{"x-api-key", "nope"}, 401, `"authentication_error","message":"invalid x-api-key"`},
		// k1's one request per minute is spent: limits are per key, across APIs.
		{"openai bearer", "/v1/chat/completions", []string{"Authorization", "Bearer k1"}, 429, `"code":"rate_limit_exceeded"`},
		{"openai x-api-key is not enough", "/v1/chat/completions", []string{"x-api-key", "k1"}, 401, `"code":"invalid_api_key"`},
		{"openai wrong", "/v1/chat/completions", []string{"Authorization", "Bearer nope"}, 401, `"code":"invalid_api_key"`},
		{"count_tokens", "/v1/messages/count_tokens", nil, 401, "authentication_error"},
	}
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.APIKeys = []string{"k1", "k2"}
		cfg.Limits.RPM = 1 // per key
		ts := startServer(t, cfg)
		defer ts.stop()
		for _, tt := range tests {
			b := body
			if tt.path == "/v1/chat/completions" {
				b = openaiBody(1, false, false, "hi")
			}
			r := ts.do(t, "POST", tt.path, b, tt.headers...)
			if r.status != tt.want || !strings.Contains(string(r.body), tt.wantMsg) {
				t.Errorf("%s: %d %s, want %d containing %s", tt.name, r.status, r.body, tt.want, tt.wantMsg)
			}
		}
		// k1 used its one request per minute twice over (anthropic, openai): the
		// second was a 429; k2 used one.
		st := ts.Stats()
		if got := st.Keys[Fingerprint("k1")]; got.Admitted != 1 || got.Throttled != 1 {
			t.Errorf("k1 stats %+v, want 1 admitted and 1 throttled", got)
		}
		if got := st.Keys[Fingerprint("k2")]; got.Admitted != 1 || got.Throttled != 0 {
			t.Errorf("k2 stats %+v, want 1 admitted", got)
		}
	})
}
