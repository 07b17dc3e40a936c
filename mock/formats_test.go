package mock

// The server-side conformance table: the same checks, over the wire, for
// every format the server registers (formats in routes.go), as
// provider/formats_test.go runs them on the client side. A new format is one
// package under mock/internal, one entry in formats and one entry here; a
// registered format missing from the table fails
// TestServerConformanceCoversEveryFormat.
//
// It is an internal test (package mock) to read the registry, so it starts
// the server with helpers_test.go's startServer rather than mock/mocktest,
// which imports mock.

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
)

// serverConformance is how to ask each format for an answer, and what it
// answers with where formats differ.
type serverConformance struct {
	// body is a valid request of maxTokens tokens' output.
	body func(maxTokens int, stream bool) string
	// badBody is a request with one bad field, badField, that a 400 names.
	badBody, badField string
	// frames are markers of the stream's frames, in the order they come,
	// the last in the stream's last frame (output is max_tokens long, so
	// the answer ends capped).
	frames []string
	// requestID and remaining are the request-id header and the
	// requests-remaining rate-limit header.
	requestID, remaining string
	// overloaded is the status of an overload answer.
	overloaded int
	// limitType is the rate-limit 429's error type in its envelope
	// (errorType reads it).
	limitType string
	// authType is the 401's.
	authType string
	// ownEnvelope: the 429 and the 401 come in an envelope of a code and
	// a message only (Azure's), whose code limitType and authType are.
	ownEnvelope bool
	// rpmText is what the 429 of an rpm limit says of it; "" is the
	// limit's name, LimitRPM.
	rpmText string
}

var serverConformanceTable = map[string]serverConformance{
	"anthropic": {
		body:     func(n int, stream bool) string { return anthropicBody(n, stream, "hi") },
		badBody:  `{"model":"claude-sonnet-4-5","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`,
		badField: "max_tokens",
		frames: []string{"event: message_start\n", "event: content_block_start\n", "event: content_block_delta\n",
			"event: message_delta\n", "event: message_stop\n"},
		requestID:  "Request-Id",
		remaining:  "Anthropic-Ratelimit-Requests-Remaining",
		overloaded: 529,
		limitType:  "rate_limit_error",
		authType:   "authentication_error",
	},
	"openai": {
		body:       func(n int, stream bool) string { return openaiBody(n, stream, false, "hi") },
		badBody:    `{"model":"gpt-4o-mini","max_completion_tokens":0,"messages":[{"role":"user","content":"hi"}]}`,
		badField:   "max_completion_tokens",
		frames:     []string{`"role":"assistant"`, `"delta":{"content":"`, `"finish_reason":"length"`, "data: [DONE]\n\n"},
		requestID:  "X-Request-Id",
		remaining:  "X-Ratelimit-Remaining-Requests",
		overloaded: 503,
		limitType:  "requests",
		authType:   "invalid_request_error",
	},
	"openai-responses": {
		body: func(n int, stream bool) string {
			b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "input": "hi", "max_output_tokens": n, "stream": stream})
			return string(b)
		},
		badBody:  `{"model":"gpt-4o-mini","input":"hi","max_output_tokens":1}`,
		badField: "max_output_tokens",
		frames: []string{"event: response.created\n", "event: response.output_item.added\n",
			"event: response.output_text.delta\n", "event: response.incomplete\n"},
		requestID:  "X-Request-Id",
		remaining:  "X-Ratelimit-Remaining-Requests",
		overloaded: 503,
		limitType:  "requests",
		authType:   "invalid_request_error",
	},
	"azure-openai": {
		body:       func(n int, stream bool) string { return openaiBody(n, stream, false, "hi") },
		badBody:    `{"model":"gpt-4o-mini","max_completion_tokens":0,"messages":[{"role":"user","content":"hi"}]}`,
		badField:   "max_completion_tokens",
		frames:     []string{`"prompt_filter_results":[`, `"role":"assistant"`, `"delta":{"content":"`, `"finish_reason":"length"`, "data: [DONE]\n\n"},
		requestID:  "X-Request-Id",
		remaining:  "X-Ratelimit-Remaining-Requests",
		overloaded: 503,
		limitType:  "429", authType: "401", ownEnvelope: true,
		rpmText: "exceeded call rate limit",
	},
	"azure-openai-responses": {
		body: func(n int, stream bool) string {
			b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "input": "hi", "max_output_tokens": n, "stream": stream})
			return string(b)
		},
		badBody:  `{"model":"gpt-4o-mini","input":"hi","max_output_tokens":1}`,
		badField: "max_output_tokens",
		frames: []string{"event: response.created\n", "event: response.output_item.added\n",
			"event: response.output_text.delta\n", "event: response.incomplete\n"},
		requestID:  "X-Request-Id",
		remaining:  "X-Ratelimit-Remaining-Requests",
		overloaded: 503,
		limitType:  "429", authType: "401", ownEnvelope: true,
		rpmText: "exceeded call rate limit",
	},
}

func TestServerConformanceCoversEveryFormat(t *testing.T) {
	var names []string
	for _, wr := range formats {
		names = append(names, wr.Name())
		if _, ok := serverConformanceTable[wr.Name()]; !ok {
			t.Errorf("the server registers format %q, which has no entry in the conformance table", wr.Name())
		}
	}
	for n := range serverConformanceTable {
		if !slices.Contains(names, n) {
			t.Errorf("the conformance table names %q, which the server does not register (formats: %q)", n, names)
		}
	}
	if len(names) < 5 {
		t.Errorf("formats = %q, want at least the five built-in formats", names)
	}
}

// limitOrAuthType is errorType, or for a format with an envelope of its
// own (serverConformance.ownEnvelope) errorCode.
func limitOrAuthType(t *testing.T, r reply, f serverConformance) string {
	t.Helper()
	if f.ownEnvelope {
		return errorCode(t, r)
	}
	return errorType(t, r)
}

// errorCode is the code of the error in an envelope of a code and a
// message (Azure's).
func errorCode(t *testing.T, r reply) string {
	t.Helper()
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || env.Error.Code == "" || env.Error.Message == "" {
		t.Fatalf("status %d body %q: want an error envelope with a code and a message (%v)", r.status, r.body, err)
	}
	return env.Error.Code
}

// errorType is the type of the error in an error envelope: Anthropic's
// error.type, or OpenAI's.
func errorType(t *testing.T, r reply) string {
	t.Helper()
	var env struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || env.Error.Type == "" {
		t.Fatalf("status %d body %q: want an error envelope (%v)", r.status, r.body, err)
	}
	return env.Error.Type
}

func TestServerConformance(t *testing.T) {
	const key = "sk-conformance"
	auth := []string{"Authorization", "Bearer " + key}
	checks := []struct {
		name  string
		cfg   func(cfg *Config)
		check func(t *testing.T, ts *testServer, path string, f serverConformance)
	}{
		{"plain 200", nil, func(t *testing.T, ts *testServer, path string, f serverConformance) {
			r := ts.do(t, "POST", path, f.body(16, false), auth...)
			if r.status != 200 {
				t.Fatalf("status %d body %s, want 200", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if !strings.Contains(string(r.body), Filler(16)) {
				t.Errorf("body %s, want the 16 tokens of filler text", r.body)
			}
			if !json.Valid(r.body) {
				t.Errorf("body %s is not JSON", r.body)
			}
		}},
		{"stream frames in order", nil, func(t *testing.T, ts *testServer, path string, f serverConformance) {
			r := ts.do(t, "POST", path, f.body(16, true), auth...)
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d Content-Type %q, want a 200 event stream", r.status, r.header.Get("Content-Type"))
			}
			rest := string(r.body)
			for _, m := range f.frames {
				i := strings.Index(rest, m)
				if i < 0 {
					t.Fatalf("stream %q: no %q after the frames before it (%q)", r.body, m, f.frames)
				}
				rest = rest[i+len(m):]
			}
			if strings.Count(rest, "\n\n") > 1 {
				t.Errorf("stream %q: frames after the last expected one %q", r.body, f.frames[len(f.frames)-1])
			}
		}},
		{"429 envelope and headers", func(cfg *Config) { cfg.Limits.RPM = 1 }, func(t *testing.T, ts *testServer, path string, f serverConformance) {
			if r := ts.do(t, "POST", path, f.body(16, false), auth...); r.status != 200 {
				t.Fatalf("first request: status %d body %s, want 200", r.status, r.body)
			}
			r := ts.do(t, "POST", path, f.body(16, false), auth...)
			if r.status != 429 {
				t.Fatalf("second request at rpm 1: status %d body %s, want 429", r.status, r.body)
			}
			if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
				t.Errorf("retry-after %q, want whole seconds in [1, 60]", r.header.Get("Retry-After"))
			}
			if rem := r.header.Get(f.remaining); rem != "0" {
				t.Errorf("%s %q, want 0", f.remaining, rem)
			}
			if typ := limitOrAuthType(t, r, f); typ != f.limitType {
				t.Errorf("error type %q, want %q", typ, f.limitType)
			}
			if text := cmp.Or(f.rpmText, LimitRPM); !strings.Contains(string(r.body), text) {
				t.Errorf("body %s, want the limit named (%s)", r.body, text)
			}
		}},
		{"overload status", func(cfg *Config) { cfg.Faults.Overloaded = 1 }, func(t *testing.T, ts *testServer, path string, f serverConformance) {
			r := ts.do(t, "POST", path, f.body(16, false), auth...)
			if r.status != f.overloaded {
				t.Fatalf("status %d body %s, want %d", r.status, r.body, f.overloaded)
			}
			errorType(t, r)
		}},
		{"400 names the field", nil, func(t *testing.T, ts *testServer, path string, f serverConformance) {
			r := ts.do(t, "POST", path, f.badBody, auth...)
			if r.status != 400 {
				t.Fatalf("status %d body %s, want 400", r.status, r.body)
			}
			if !strings.Contains(string(r.body), f.badField) {
				t.Errorf("body %s, want the field %s named", r.body, f.badField)
			}
			errorType(t, r)
		}},
		{"request id", nil, func(t *testing.T, ts *testServer, path string, f serverConformance) {
			ok := ts.do(t, "POST", path, f.body(16, false), auth...)
			bad := ts.do(t, "POST", path, f.badBody, auth...)
			for _, r := range []reply{ok, bad} {
				if id := r.header.Get(f.requestID); !strings.HasPrefix(id, "req_") {
					t.Errorf("status %d: %s %q, want a req_ id", r.status, f.requestID, id)
				}
			}
			if ok.header.Get(f.requestID) == bad.header.Get(f.requestID) {
				t.Errorf("two requests share the request id %q", ok.header.Get(f.requestID))
			}
		}},
		{"auth failure", nil, func(t *testing.T, ts *testServer, path string, f serverConformance) {
			r := ts.do(t, "POST", path, f.body(16, false))
			if r.status != 401 {
				t.Fatalf("no key: status %d body %s, want 401", r.status, r.body)
			}
			if typ := limitOrAuthType(t, r, f); typ != f.authType {
				t.Errorf("error type %q, want %q", typ, f.authType)
			}
			r = ts.do(t, "POST", path, f.body(16, false), "Authorization", "Bearer sk-wrong")
			if r.status != 401 {
				t.Errorf("wrong key: status %d body %s, want 401", r.status, r.body)
			}
		}},
	}
	for _, wr := range formats {
		f, ok := serverConformanceTable[wr.Name()]
		if !ok {
			continue // TestServerConformanceCoversEveryFormat fails
		}
		for _, c := range checks {
			t.Run(wr.Name()+"/"+c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := Config{APIKeys: []string{key}}
					if c.cfg != nil {
						c.cfg(&cfg)
					}
					ts := startServer(t, cfg)
					defer ts.stop()
					c.check(t, ts, wr.Spec().Path, f)
				})
			})
		}
	}
}
