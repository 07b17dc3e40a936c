package mock_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/mock"
)

// The fuzz targets feed arbitrary request bodies through the mock's Handler
// and arbitrary YAML through ParseConfig. `go test` runs only the seeds
// below; `go test -fuzz FuzzAnthropicMessages ./mock/` explores.
//
// With no limits and no faults configured the mock has no reason to answer
// 5xx, so any 5xx is a bug (a recovered panic answers 500), and every 4xx
// must be in the provider's own error envelope.

const fuzzKey = "sk-fuzz"

// fuzzHandler is a mock with zero latency and short outputs, so that a
// fuzzed max_tokens cannot make a response large or slow.
func fuzzHandler(f *testing.F) http.Handler {
	f.Helper()
	cfg, err := mock.ParseConfig([]byte(`
seed: 1
api_keys: [`+fuzzKey+`]
latency: {ttft: 0s, ttft_per_input_token: 0s, per_token: 0s}
output: {tokens: {fixed: 3}}
`), "fuzz.yaml")
	if err != nil {
		f.Fatal(err)
	}
	s, err := mock.New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	return s.Handler()
}

// requestSeeds are bodies worth starting from for both APIs.
var requestSeeds = []string{
	``,
	`{}`,
	`null`,
	`[]`,
	`"x"`,
	`{"model":`,
	`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"Hello"}]}`,
	`{"model":"m","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
	`{"model":"m","max_tokens":16,"system":"Be terse.","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
	`{"model":"m","max_tokens":16,"system":[{"type":"text","text":"Be terse."}],"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`,
	`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}`,
	`{"model":"m","max_tokens":16,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"Hello"}]}`,
	`{"model":"m","max_tokens":-1,"messages":[{"role":"user","content":"Hello"}]}`,
	`{"model":"m","max_tokens":1e300,"messages":[{"role":"user","content":"Hello"}]}`,
	`{"model":"m","max_tokens":99999999999999999999,"messages":[{"role":"user","content":"Hello"}]}`,
	`{"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"Hello"}]}`,
	`{"model":"m","max_tokens":"16","messages":[{"role":"user","content":"Hello"}]}`,
	`{"model":"m","max_tokens":16,"messages":[]}`,
	`{"model":"m","max_tokens":16,"messages":null}`,
	`{"model":"m","max_tokens":16,"messages":[null]}`,
	`{"model":"m","max_tokens":16,"messages":[{"role":"user"}]}`,
	`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":42}]}`,
	`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":[null,{"type":"text"}]}]}`,
	`{"model":"m","max_tokens":16,"messages":[{"role":"robot","content":"x"}]}`,
	`{"model":"","max_tokens":16,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":7,"max_tokens":16,"messages":[{"role":"user","content":"x"}]}`,
	`{"max_tokens":16,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":16,"stream":"yes","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"x"}]} trailing`,
	`{"model":"m","model":"n","max_tokens":16,"max_tokens":2,"messages":[{"role":"user","content":"x"}]}`,
	"{\"model\":\"m\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}",
	`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"}],"max_completion_tokens":16}`,
	`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"gpt-4o-mini","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"stream":true,"stream_options":null}`,
	`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":0}`,
	`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"n":3}`,
	`{"model":"gpt-4o-mini","messages":[{"role":"tool","content":"x","tool_call_id":"t"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`,
	`{"model":"gpt-4o-mini","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
	`{"model":"m","max_tokens":16,"messages":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
}

// anthropicErrorTypes are the error.type values of the Anthropic API.
var anthropicErrorTypes = map[string]bool{
	"invalid_request_error": true, "authentication_error": true, "billing_error": true,
	"permission_error": true, "not_found_error": true, "conflict_error": true,
	"request_too_large": true, "rate_limit_error": true, "api_error": true,
	"timeout_error": true, "overloaded_error": true,
}

// checkAnthropicError checks that body is an Anthropic error envelope.
func checkAnthropicError(t *testing.T, status int, body []byte) {
	t.Helper()
	var env struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("status %d: body is not JSON (%v): %q", status, err, body)
	}
	if env.Type != "error" || env.Error == nil || !anthropicErrorTypes[env.Error.Type] || env.Error.Message == "" || env.RequestID == "" {
		t.Fatalf("status %d: body %s is not an Anthropic error envelope {type:error, error:{type,message}, request_id}", status, body)
	}
}

// checkOpenAIError checks that body is an OpenAI error envelope.
func checkOpenAIError(t *testing.T, status int, body []byte) {
	t.Helper()
	var env struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("status %d: body is not JSON (%v): %q", status, err, body)
	}
	var msg, typ string
	json.Unmarshal(env.Error["message"], &msg)
	json.Unmarshal(env.Error["type"], &typ)
	_, hasParam := env.Error["param"]
	_, hasCode := env.Error["code"]
	if msg == "" || typ == "" || !hasParam || !hasCode {
		t.Fatalf("status %d: body %s is not an OpenAI error envelope {error:{message,type,param,code}}", status, body)
	}
}

// serveFuzz sends one request to h and checks the invariants every
// response must keep, returning the recorder.
func serveFuzz(t *testing.T, h http.Handler, path string, hdr map[string]string, body []byte, idHeader string, checkErr func(*testing.T, int, []byte)) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	if res.StatusCode >= 500 {
		t.Fatalf("POST %s %q: status %d, want no 5xx (none configured): %s", path, body, res.StatusCode, rec.Body.Bytes())
	}
	if res.Header.Get(idHeader) == "" {
		t.Errorf("POST %s: status %d without a %s header", path, res.StatusCode, idHeader)
	}
	if res.StatusCode >= 400 {
		if ct := res.Header.Get("content-type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("POST %s: status %d with content-type %q, want application/json", path, res.StatusCode, ct)
		}
		checkErr(t, res.StatusCode, rec.Body.Bytes())
	}
	if res.StatusCode == http.StatusOK && strings.HasPrefix(res.Header.Get("content-type"), "application/json") && !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("POST %s %q: 200 with invalid JSON %q", path, body, rec.Body.Bytes())
	}
	return rec
}

// FuzzAnthropicMessages: no body sent to /v1/messages or
// /v1/messages/count_tokens panics the server or gets a 5xx; every answer
// carries request-id; 4xx answers are Anthropic error envelopes; a 200 is
// valid JSON or an SSE stream that ends with message_stop.
func FuzzAnthropicMessages(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(requestSeeds[6]), true)
	f.Add([]byte(requestSeeds[8]), true)
	h := fuzzHandler(f)
	hdr := map[string]string{"x-api-key": fuzzKey, "anthropic-version": "2023-06-01"}
	f.Fuzz(func(t *testing.T, body []byte, countTokens bool) {
		path := "/v1/messages"
		if countTokens {
			path = "/v1/messages/count_tokens"
		}
		rec := serveFuzz(t, h, path, hdr, body, "request-id", checkAnthropicError)
		if rec.Code == http.StatusOK && strings.HasPrefix(rec.Header().Get("content-type"), "text/event-stream") {
			if out := rec.Body.String(); !strings.HasSuffix(strings.TrimSpace(out), `data: {"type":"message_stop"}`) {
				t.Errorf("stream does not end with message_stop: %q", out)
			}
		}
	})
}

// FuzzOpenAIChat: the same for /v1/chat/completions with OpenAI envelopes
// and x-request-id; a 200 stream ends with data: [DONE].
func FuzzOpenAIChat(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	h := fuzzHandler(f)
	hdr := map[string]string{"authorization": "Bearer " + fuzzKey}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := serveFuzz(t, h, "/v1/chat/completions", hdr, body, "x-request-id", checkOpenAIError)
		if rec.Code == http.StatusOK && strings.HasPrefix(rec.Header().Get("content-type"), "text/event-stream") {
			if out := rec.Body.String(); !strings.HasSuffix(strings.TrimSpace(out), "data: [DONE]") {
				t.Errorf("stream does not end with [DONE]: %q", out)
			}
		}
	})
}

// FuzzParseConfig: ParseConfig never panics, and a config it accepts makes
// a server (New does not panic; it may still refuse the config).
func FuzzParseConfig(f *testing.F) {
	seeds := []string{
		``,
		`{}`,
		`seed: 1`,
		"latency: {ttft: 200ms, ttft_per_input_token: 1ms, per_token: 5ms, jitter: 0.1}\noutput: {tokens: max_tokens}",
		"output: {tokens: {fixed: 10}}",
		"output: {tokens: {uniform: [5, 50]}}",
		"output: {tokens: {uniform: [50, 5]}}",
		"output: {tokens: {fixed: 1, uniform: [1, 2]}}",
		"output: {tokens: [1, 2]}",
		"limits: {max_concurrent: 20, rpm: 50, itpm: 10000, otpm: 2000, tpm: 30000, retry_after: 1s, count_rejected: true}",
		"limits: {max_concurrent: -1}",
		"limits: {rpm: 1e9}",
		"limits: {retry_after: 5}",
		"limits: {rpm: 60, itpm: 6000, otpm: 600, tpm: 100, burst: 1s, retry_after_ms: true}",
		"limits: {rpm: 1, burst: 1ns}",
		"limits: {burst: -1s}",
		"limits: {burst: 25h, retry_after_ms: yes}",
		"schedule: [{at: 1s, limits: {burst: 10s, retry_after_ms: false}}]",
		"quota: {requests: 10, input_tokens: 1000, output_tokens: 500, should_retry: false}",
		"quota: {requests: -1, input_tokens: x}",
		"quota: {request: 1}",
		"cache: {off: false, min_tokens: 2048, reads_count_itpm: true}",
		"cache: {min_tokens: 5}",
		"cache: {ttl: 1h}",
		"profile: anthropic-start\nlimits: {max_concurrent: 5}",
		"profile: nope",
		"limits: {acceleration: {factor: 2, floor: 60}}",
		"limits: {acceleration: {factor: -1, floor: -1}}",
		"schedule: [{at: 1m, limits: {acceleration: {factor: 1.5, floor: 10}}}]",
		"limits_by_model: {'claude-sonnet-*': {rpm: 50, itpm: 30000, burst: 1s}, 'gpt-4o*': {tpm: 100}}",
		"limits_by_model: {'[': {rpm: 1}, '': {}}",
		"profile: [a]",
		"capacity: {max_concurrent: 100}",
		"faults: {error_500: 0.1, overloaded: 0.05, slow: {rate: 0.1, extra: 2s}, reset: 0.01, cut_stream: 0.01, stream_error: 0.02}",
		"faults: {error_500: 2}",
		"faults: {script: [{attempts: 2, status: 529}, {attempts: 1, status: 429, retry_after: 2s}]}",
		"faults: {script: [{attempts: 0, status: 200}]}",
		"schedule: [{at: 30s, limits: {max_concurrent: 10}}, {at: 1m, limits: {rpm: 5}}]",
		"schedule: [{at: 1m, limits: {rpm: 5}}, {at: 30s, limits: {rpm: 6}}]",
		"api_keys: [a, b, '']\nadmin_token: t",
		"unknown: 1",
		"latency:\n  per_token: -5ms\n  bogus: 1",
		"seed: [1, 2",
		"&a [*a]",
		"a: &a\n  b: *a\nlatency: *a",
		"\xff\xfe",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := mock.ParseConfig(data, "fuzz.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Errorf("ParseConfig error %q does not name the file", err)
			}
			return
		}
		if s, err := mock.New(cfg); err == nil {
			s.Close()
		}
	})
}
