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
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// serverConformance is how to ask each format for an answer, and what it
// answers with where formats differ.
type serverConformance struct {
	// path is the endpoint a request is sent to (streamed or not); nil:
	// the format's wire.Spec.Path.
	path func(stream bool) string
	// body is a valid request of maxTokens tokens' output.
	body func(maxTokens int, stream bool) string
	// badBody is a request with one bad field, badField, that a 400 names.
	badBody, badField string
	// streamType is the Content-Type a stream starts with, and split cuts
	// a stream into its frames, checking their framing (sseFrames,
	// eventstreamFrames).
	streamType string
	split      func(stream []byte) ([]string, error)
	// frames are markers of the stream's frames, in the order they come,
	// the last in the stream's last frame (output is max_tokens long, so
	// the answer ends capped).
	frames []string
	// requestID and remaining are the request-id header and the
	// requests-remaining rate-limit header; remaining is empty for a format
	// that sends no rate-limit headers (no header names "ratelimit").
	requestID, remaining string
	// retryAfter is whether a rate-limit 429 says when to retry
	// (retry-after in whole seconds); false: it sends none of retry-after,
	// retry-after-ms and x-should-retry.
	retryAfter bool
	// overloaded is the status of an overload answer.
	overloaded int
	// errType reads an error answer's type (envelopeErrorType,
	// amznErrorType); limitType is the rate-limit 429's.
	errType   func(t *testing.T, r reply) string
	limitType string
	// retryDelayBody, for an API that sends no retry-after header, finds
	// the wait of a 429 in its body, in whole seconds (group 1); nil: the
	// wait is in retry-after when retryAfter is set.
	retryDelayBody *regexp.Regexp
	// noKey and wrongKey are the statuses of a request without a key and
	// with a wrong one; authType is the error type of the first.
	noKey, wrongKey int
	authType        string
	// rpmText is what the 429 of an rpm limit says of it; "" is the
	// limit's name, LimitRPM.
	rpmText string
}

// The paths of the Google formats' conformance entries.
const (
	studioPath          = "/v1beta/models/gemini-2.5-flash"
	vertexPath          = "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash"
	vertexAnthropicPath = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929"
)

// generatePath is a Gemini model path's generateContent or, streamed,
// streamGenerateContent?alt=sse.
func generatePath(model string) func(bool) string {
	return func(stream bool) string {
		if stream {
			return model + ":streamGenerateContent?alt=sse"
		}
		return model + ":generateContent"
	}
}

// geminiBody is a generateContent request of maxTokens tokens' output
// (the path says whether it streams).
func geminiBody(maxTokens int, _ bool) string {
	return `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":` + strconv.Itoa(maxTokens) + `}}`
}

var (
	geminiFrames      = []string{`data: {"candidates":[{"content":{"parts":[{"text":"`, `"finishReason":"MAX_TOKENS"`}
	googleRetryDelay  = regexp.MustCompile(`"retryDelay":"(\d+)s"`)
	geminiBadBody     = `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":0}}`
	geminiBadField    = "generationConfig.maxOutputTokens"
	vertexClaudeStart = `{"anthropic_version":"vertex-2023-10-16",`
)

// The entries of formats that others build on: Azure serves the OpenAI
// formats under its paths, Vertex AI the Gemini API, Claude on Vertex AI
// the Messages API. An entry of such a format is its base's, with what
// differs.
var (
	anthropicEntry = serverConformance{
		body:       func(n int, stream bool) string { return anthropicBody(n, stream, "hi") },
		badBody:    `{"model":"claude-sonnet-4-5","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`,
		badField:   "max_tokens",
		streamType: "text/event-stream",
		split:      sseFrames,
		frames: []string{"event: message_start\n", "event: content_block_start\n", "event: content_block_delta\n",
			"event: message_delta\n", "event: message_stop\n"},
		requestID:  "Request-Id",
		remaining:  "Anthropic-Ratelimit-Requests-Remaining",
		retryAfter: true,
		overloaded: 529,
		errType:    envelopeErrorType,
		limitType:  "rate_limit_error",
		noKey:      401,
		wrongKey:   401,
		authType:   "authentication_error",
	}
	openaiEntry = serverConformance{
		body:       func(n int, stream bool) string { return openaiBody(n, stream, false, "hi") },
		badBody:    `{"model":"gpt-4o-mini","max_completion_tokens":0,"messages":[{"role":"user","content":"hi"}]}`,
		badField:   "max_completion_tokens",
		streamType: "text/event-stream",
		split:      sseFrames,
		frames:     []string{`"role":"assistant"`, `"delta":{"content":"`, `"finish_reason":"length"`, "data: [DONE]"},
		requestID:  "X-Request-Id",
		remaining:  "X-Ratelimit-Remaining-Requests",
		retryAfter: true,
		overloaded: 503,
		errType:    envelopeErrorType,
		limitType:  "requests",
		noKey:      401,
		wrongKey:   401,
		authType:   "invalid_request_error",
	}
	responsesEntry = openaiEntry.with(func(e *serverConformance) {
		e.body = func(n int, stream bool) string {
			b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "input": "hi", "max_output_tokens": n, "stream": stream})
			return string(b)
		}
		e.badBody = `{"model":"gpt-4o-mini","input":"hi","max_output_tokens":1}`
		e.badField = "max_output_tokens"
		e.frames = []string{"event: response.created\n", "event: response.output_item.added\n",
			"event: response.output_text.delta\n", "event: response.incomplete\n"}
	})
	// AI Studio: no key is 403 PERMISSION_DENIED, a wrong one 400
	// (API_KEY_INVALID); no rate-limit headers, the wait in RetryInfo.
	geminiEntry = serverConformance{
		path:           generatePath(studioPath),
		body:           geminiBody,
		badBody:        geminiBadBody,
		badField:       geminiBadField,
		frames:         geminiFrames,
		streamType:     "text/event-stream",
		split:          crlfSSEFrames,
		requestID:      "X-Request-Id",
		retryDelayBody: googleRetryDelay,
		errType:        envelopeErrorType,
		overloaded:     503,
		limitType:      "RESOURCE_EXHAUSTED",
		noKey:          403,
		wrongKey:       400,
		authType:       "PERMISSION_DENIED",
	}
)

// with returns e changed by f.
func (e serverConformance) with(f func(*serverConformance)) serverConformance {
	f(&e)
	return e
}

// azureEntry is the entry of an OpenAI format (base) under Azure's path p: its
// envelope of a code and a message, and its 429 text.
func azureEntry(base serverConformance, p string) serverConformance {
	return base.with(func(e *serverConformance) {
		e.path = azurePath(p)
		e.errType = azureErrorCode
		e.limitType = "429"
		e.rpmText = "exceeded call rate limit"
		e.authType = "401"
	})
}

var serverConformanceTable = map[string]serverConformance{
	"anthropic":        anthropicEntry,
	"openai":           openaiEntry,
	"openai-responses": responsesEntry,
	// Bedrock Runtime (docs/bedrock.md): the model in the path, Converse's
	// body, binary event-stream frames, its errors in x-amzn-ErrorType, no
	// rate-limit headers and no retry hints, and 403 for a bad credential.
	"bedrock": {
		path: func(stream bool) string {
			if stream {
				return "/model/anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream"
			}
			return "/model/anthropic.claude-sonnet-4-5-20250929-v1:0/converse"
		},
		body: func(n int, _ bool) string {
			return fmt.Sprintf(`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":%d}}`, n)
		},
		badBody:    `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":0}}`,
		badField:   "inferenceConfig.maxTokens",
		streamType: "application/vnd.amazon.eventstream",
		split:      eventstreamFrames,
		frames: []string{":event-type=messageStart\n", ":event-type=contentBlockDelta\n", ":event-type=contentBlockStop\n",
			`"stopReason":"max_tokens"`, ":event-type=metadata\n"},
		requestID:  "X-Amzn-Requestid",
		overloaded: 503,
		errType:    amznErrorType,
		limitType:  "ThrottlingException",
		noKey:      403,
		wrongKey:   403,
		authType:   "MissingAuthenticationTokenException",
	},
	"gemini": geminiEntry,
	// Vertex AI: a missing or wrong bearer token is 401 UNAUTHENTICATED.
	"vertex": geminiEntry.with(func(e *serverConformance) {
		e.path = generatePath(vertexPath)
		e.noKey, e.wrongKey, e.authType = 401, 401, "UNAUTHENTICATED"
	}),
	// Claude on Vertex AI: the Messages API's answers, 400s and overload;
	// the front end's 401 and 429 in Google's envelope.
	"vertex-anthropic": anthropicEntry.with(func(e *serverConformance) {
		e.path = func(stream bool) string {
			if stream {
				return vertexAnthropicPath + ":streamRawPredict"
			}
			return vertexAnthropicPath + ":rawPredict"
		}
		e.body = func(n int, stream bool) string {
			return vertexClaudeStart + `"max_tokens":` + strconv.Itoa(n) + `,"stream":` + strconv.FormatBool(stream) + `,"messages":[{"role":"user","content":"hi"}]}`
		}
		e.badBody = vertexClaudeStart + `"max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`
		e.remaining, e.retryAfter = "", false
		e.retryDelayBody = googleRetryDelay
		e.limitType = "RESOURCE_EXHAUSTED"
		e.authType = "UNAUTHENTICATED"
	}),
	"azure-openai": azureEntry(openaiEntry, "/openai/v1/chat/completions").with(func(e *serverConformance) {
		e.frames = append([]string{`"prompt_filter_results":[`}, openaiEntry.frames...)
	}),
	"azure-openai-responses": azureEntry(responsesEntry, "/openai/v1/responses"),
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

// azurePath is an Azure v1 path, streamed or not (the body says).
func azurePath(p string) func(bool) string { return func(bool) string { return p } }

// azureErrorCode is the code of the error in an envelope of a code and a
// message only (Azure's 401 and 429).
func azureErrorCode(t *testing.T, r reply) string {
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

// sseFrames cuts a server-sent event stream into its frames, each ended
// by a blank line; crlfSSEFrames one whose lines end in CRLF (Google's).
func sseFrames(stream []byte) ([]string, error)     { return framesEndedBy(stream, "\n\n") }
func crlfSSEFrames(stream []byte) ([]string, error) { return framesEndedBy(stream, "\r\n\r\n") }

func framesEndedBy(stream []byte, end string) ([]string, error) {
	s := string(stream)
	if !strings.HasSuffix(s, end) {
		return nil, fmt.Errorf("the stream does not end with %q", end)
	}
	return strings.Split(strings.TrimSuffix(s, end), end), nil
}

// eventstreamFrames decodes an application/vnd.amazon.eventstream stream
// with aws-sdk-go-v2's decoder, which checks each message's lengths and
// CRCs; each frame is its headers as NAME=VALUE lines, then its payload.
func eventstreamFrames(stream []byte) ([]string, error) {
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(stream)
	var frames []string
	for r.Len() > 0 {
		m, err := dec.Decode(r, nil)
		if err != nil {
			return frames, fmt.Errorf("message %d: %w", len(frames), err)
		}
		var b strings.Builder
		for _, h := range m.Headers {
			fmt.Fprintf(&b, "%s=%s\n", h.Name, h.Value.String())
		}
		b.Write(m.Payload)
		frames = append(frames, b.String())
	}
	return frames, nil
}

// amznErrorType is Bedrock's error type: x-amzn-ErrorType up to its
// colon, with a JSON body carrying the message.
func amznErrorType(t *testing.T, r reply) string {
	t.Helper()
	typ, _, _ := strings.Cut(r.header.Get("X-Amzn-Errortype"), ":")
	var body struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || typ == "" || body.Message == "" {
		t.Fatalf("status %d x-amzn-ErrorType %q body %q: want a type and a {\"message\"} body (%v)", r.status, typ, r.body, err)
	}
	return typ
}

// envelopeErrorType is the type of the error in an error envelope: Anthropic's
// error.type, OpenAI's, or Google's error.status (google.rpc.Code), whose
// error.code must then be the response's status.
func envelopeErrorType(t *testing.T, r reply) string {
	t.Helper()
	var env struct {
		Error struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Code   any    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || env.Error.Type == "" && env.Error.Status == "" {
		t.Fatalf("status %d body %q: want an error envelope (%v)", r.status, r.body, err)
	}
	if env.Error.Type != "" {
		return env.Error.Type
	}
	if code, ok := env.Error.Code.(float64); !ok || int(code) != r.status {
		t.Errorf("status %d body %s: Google's envelope's error.code is not the status", r.status, r.body)
	}
	return env.Error.Status
}

func TestServerConformance(t *testing.T) {
	const key = "sk-conformance"
	auth := []string{"Authorization", "Bearer " + key}
	checks := []struct {
		name  string
		cfg   func(cfg *Config)
		check func(t *testing.T, ts *testServer, path func(stream bool) string, f serverConformance)
	}{
		{"plain 200", nil, func(t *testing.T, ts *testServer, path func(bool) string, f serverConformance) {
			r := ts.do(t, "POST", path(false), f.body(16, false), auth...)
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
		{"stream frames in order", nil, func(t *testing.T, ts *testServer, path func(bool) string, f serverConformance) {
			r := ts.do(t, "POST", path(true), f.body(16, true), auth...)
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), f.streamType) {
				t.Fatalf("status %d Content-Type %q, want a 200 %s stream", r.status, r.header.Get("Content-Type"), f.streamType)
			}
			frames, err := f.split(r.body)
			if err != nil {
				t.Fatalf("stream %q: %v", r.body, err)
			}
			// Each marker is found after the one before it, in the same
			// frame or a later one.
			next, last := 0, -1
			for i, fr := range frames {
				for next < len(f.frames) {
					j := strings.Index(fr, f.frames[next])
					if j < 0 {
						break
					}
					fr, last, next = fr[j+len(f.frames[next]):], i, next+1
				}
			}
			if next < len(f.frames) {
				t.Fatalf("frames %q: no %q after the frames before it (%q)", frames, f.frames[next], f.frames)
			}
			if last != len(frames)-1 {
				t.Errorf("frames %q: frames after the last expected one %q", frames[last+1:], f.frames[len(f.frames)-1])
			}
		}},
		{"429 envelope and headers", func(cfg *Config) { cfg.Limits.RPM = 1 }, func(t *testing.T, ts *testServer, path func(bool) string, f serverConformance) {
			if r := ts.do(t, "POST", path(false), f.body(16, false), auth...); r.status != 200 {
				t.Fatalf("first request: status %d body %s, want 200", r.status, r.body)
			}
			r := ts.do(t, "POST", path(false), f.body(16, false), auth...)
			if r.status != 429 {
				t.Fatalf("second request at rpm 1: status %d body %s, want 429", r.status, r.body)
			}
			switch wait := r.header.Get("Retry-After"); {
			case f.retryDelayBody != nil:
				if wait != "" {
					t.Errorf("retry-after %q sent, want the wait in the body only", wait)
				}
				m := f.retryDelayBody.FindSubmatch(r.body)
				if m == nil {
					t.Errorf("body %s: no wait found by %s", r.body, f.retryDelayBody)
				} else if ra, err := strconv.Atoi(string(m[1])); err != nil || ra < 1 || ra > 60 {
					t.Errorf("wait %q in the body, want whole seconds in [1, 60]", m[1])
				}
			case f.retryAfter:
				if ra, err := strconv.Atoi(wait); err != nil || ra < 1 || ra > 60 {
					t.Errorf("retry-after %q, want whole seconds in [1, 60]", wait)
				}
			default:
				for _, h := range []string{"Retry-After", "Retry-After-Ms", "X-Should-Retry"} {
					if v, ok := r.header[h]; ok {
						t.Errorf("%s %q, want none: the format sends no retry hints", h, v)
					}
				}
			}
			if f.remaining != "" {
				if rem := r.header.Get(f.remaining); rem != "0" {
					t.Errorf("%s %q, want 0", f.remaining, rem)
				}
			} else {
				for h, v := range r.header {
					if strings.Contains(strings.ToLower(h), "ratelimit") {
						t.Errorf("%s %q, want no rate-limit headers", h, v)
					}
				}
			}
			if typ := f.errType(t, r); typ != f.limitType {
				t.Errorf("error type %q, want %q", typ, f.limitType)
			}
			if text := cmp.Or(f.rpmText, LimitRPM); !strings.Contains(string(r.body), text) {
				t.Errorf("body %s, want the limit named (%s)", r.body, text)
			}
		}},
		{"overload status", func(cfg *Config) { cfg.Faults.Overloaded = 1 }, func(t *testing.T, ts *testServer, path func(bool) string, f serverConformance) {
			r := ts.do(t, "POST", path(false), f.body(16, false), auth...)
			if r.status != f.overloaded {
				t.Fatalf("status %d body %s, want %d", r.status, r.body, f.overloaded)
			}
			f.errType(t, r)
		}},
		{"400 names the field", nil, func(t *testing.T, ts *testServer, path func(bool) string, f serverConformance) {
			r := ts.do(t, "POST", path(false), f.badBody, auth...)
			if r.status != 400 {
				t.Fatalf("status %d body %s, want 400", r.status, r.body)
			}
			if !strings.Contains(string(r.body), f.badField) {
				t.Errorf("body %s, want the field %s named", r.body, f.badField)
			}
			f.errType(t, r)
		}},
		{"request id", nil, func(t *testing.T, ts *testServer, path func(bool) string, f serverConformance) {
			ok := ts.do(t, "POST", path(false), f.body(16, false), auth...)
			bad := ts.do(t, "POST", path(false), f.badBody, auth...)
			for _, r := range []reply{ok, bad} {
				if id := r.header.Get(f.requestID); !strings.HasPrefix(id, "req_") {
					t.Errorf("status %d: %s %q, want a req_ id", r.status, f.requestID, id)
				}
			}
			if ok.header.Get(f.requestID) == bad.header.Get(f.requestID) {
				t.Errorf("two requests share the request id %q", ok.header.Get(f.requestID))
			}
		}},
		{"auth failure", nil, func(t *testing.T, ts *testServer, path func(bool) string, f serverConformance) {
			r := ts.do(t, "POST", path(false), f.body(16, false))
			if r.status != f.noKey {
				t.Fatalf("no key: status %d body %s, want %d", r.status, r.body, f.noKey)
			}
			if typ := f.errType(t, r); typ != f.authType {
				t.Errorf("error type %q, want %q", typ, f.authType)
			}
			r = ts.do(t, "POST", path(false), f.body(16, false), "Authorization", "Bearer sk-wrong")
			if r.status != f.wrongKey {
				t.Errorf("wrong key: status %d body %s, want %d", r.status, r.body, f.wrongKey)
			}
			f.errType(t, r)
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
					path := f.path
					if path == nil {
						path = func(bool) string { return wr.Spec().Path }
					}
					c.check(t, ts, path, f)
				})
			})
		}
	}
}
