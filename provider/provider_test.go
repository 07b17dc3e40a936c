package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

func TestByName(t *testing.T) {
	for _, name := range []string{"anthropic", "openai", "OpenAI", "gemini", "vertex", "vertex-anthropic"} {
		p, err := ByName(name)
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		if p.Name() != strings.ToLower(name) {
			t.Errorf("ByName(%q).Name() = %q", name, p.Name())
		}
	}
	if _, err := ByName("no-such-provider"); err == nil || !strings.Contains(err.Error(), strings.Join(Names(), ", ")) || !strings.Contains(err.Error(), "anthropic, azure-openai, bedrock, gemini, openai") {
		t.Errorf("ByName(no-such-provider) error = %v, want one listing the known providers", err)
	}
}

func testRequest(stream bool) Request {
	return Request{
		Model:          "m",
		System:         "Be terse.",
		Messages:       []Message{{Role: "user", Content: "Hello"}},
		MaxTokens:      100,
		Stream:         stream,
		IdempotencyKey: "item-7",
	}
}

func TestNewRequest(t *testing.T) {
	tests := []struct {
		name     string
		p        Provider
		base     string
		stream   bool
		wantURL  string
		wantHdr  map[string]string
		wantBody string
	}{
		{
			name: "anthropic", p: Anthropic{}, base: "http://h:1/",
			wantURL:  "http://h:1/v1/messages",
			wantHdr:  map[string]string{"X-Api-Key": "sk-secret", "Anthropic-Version": "2023-06-01", "X-Stainless-Retry-Count": "2", "Content-Type": "application/json", "Idempotency-Key": "item-7"},
			wantBody: `{"model":"m","max_tokens":100,"system":"Be terse.","messages":[{"role":"user","content":"Hello"}]}`,
		},
		{
			name: "anthropic stream default base", p: Anthropic{}, stream: true,
			wantURL:  "https://api.anthropic.com/v1/messages",
			wantHdr:  map[string]string{"Accept": "text/event-stream"},
			wantBody: `{"model":"m","max_tokens":100,"system":"Be terse.","messages":[{"role":"user","content":"Hello"}],"stream":true}`,
		},
		{
			name: "openai", p: OpenAI{}, base: "http://h:1/v1",
			wantURL:  "http://h:1/v1/chat/completions",
			wantHdr:  map[string]string{"Authorization": "Bearer sk-secret", "X-Stainless-Retry-Count": "2", "Content-Type": "application/json"},
			wantBody: `{"model":"m","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hello"}],"max_completion_tokens":100}`,
		},
		{
			name: "openai legacy stream", p: OpenAI{LegacyMaxTokens: true}, stream: true,
			wantURL:  "https://api.openai.com/v1/chat/completions",
			wantBody: `{"model":"m","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hello"}],"max_tokens":100,"stream":true,"stream_options":{"include_usage":true}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := tt.p.NewRequest(context.Background(), tt.base, "sk-secret", testRequest(tt.stream), 2)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost || req.URL.String() != tt.wantURL {
				t.Errorf("request = %s %s, want POST %s", req.Method, req.URL, tt.wantURL)
			}
			for k, v := range tt.wantHdr {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			body, _ := io.ReadAll(req.Body)
			if string(body) != tt.wantBody {
				t.Errorf("body = %s\nwant %s", body, tt.wantBody)
			}
			if req.GetBody == nil {
				t.Error("GetBody is nil: the request cannot be re-sent on a redirect")
			}
		})
	}
}

// jsonResponse and sseResponse build responses as a server would send them.
func jsonResponse(status int, body string, hdr ...string) *http.Response {
	r := &http.Response{
		StatusCode:    status,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: -1,
		Request:       (&http.Request{}).WithContext(context.Background()),
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return r
}

func sseResponse(body string) *http.Response {
	r := jsonResponse(200, body)
	r.Header.Set("Content-Type", "text/event-stream; charset=utf-8")
	return r
}

// fmtBool prints an optional boolean.
func fmtBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecode(t *testing.T) {
	cut := func(s string, marker string) string { return s[:strings.Index(s, marker)] }
	tests := []struct {
		name       string
		p          Provider
		resp       func(t *testing.T) *http.Response
		want       Response
		wantKind   strategies.Kind
		wantStatus int
		wantErr    error  // errors.Is
		wantType   string // APIError.Type
	}{
		{
			name: "anthropic json", p: Anthropic{},
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(200, fixture(t, "anthropic_message.json"), "Request-Id", "req_1")
			},
			want:     Response{ID: "msg_01XFDUDYJgAACzvnptvVoYEL", Text: "Hi!", StopReason: "tool_use", Usage: strategies.Usage{InputTokens: 377, OutputTokens: 65}, RequestID: "req_1"},
			wantKind: strategies.Success, wantStatus: 200,
		},
		{
			name: "anthropic stream", p: Anthropic{},
			resp: func(t *testing.T) *http.Response { return sseResponse(fixture(t, "anthropic_basic_stream.txt")) },
			want: Response{ID: "msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK", Text: "Hello", StopReason: "end_turn", Usage: strategies.Usage{InputTokens: 11, OutputTokens: 6}},
			// Usage: message_delta's output_tokens (6) is cumulative: it replaces message_start's 1.
			wantKind: strategies.Success, wantStatus: 200,
		},
		{
			name: "anthropic stream error event", p: Anthropic{},
			resp:     func(t *testing.T) *http.Response { return sseResponse(fixture(t, "anthropic_error_stream.txt")) },
			want:     Response{ID: "msg_err", Text: "Hel", Usage: strategies.Usage{InputTokens: 11, OutputTokens: 1}},
			wantKind: strategies.Failed, wantStatus: 200, wantType: "overloaded_error",
		},
		{
			name: "anthropic stream cut", p: Anthropic{},
			resp: func(t *testing.T) *http.Response {
				return sseResponse(cut(fixture(t, "anthropic_basic_stream.txt"), "event: message_delta"))
			},
			want:     Response{ID: "msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK", Text: "Hello", Usage: strategies.Usage{InputTokens: 11, OutputTokens: 1}},
			wantKind: strategies.Failed, wantStatus: 200, wantErr: ErrIncompleteStream,
		},
		{
			name: "anthropic 429", p: Anthropic{},
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(429, `{"type":"error","error":{"type":"rate_limit_error","message":"Your account has hit a rate limit."},"request_id":"req_x"}`, "Retry-After", "1", "Request-Id", "req_x")
			},
			want:     Response{RequestID: "req_x"},
			wantKind: strategies.Throttled, wantStatus: 429, wantType: "rate_limit_error",
		},
		{
			name: "anthropic 529", p: Anthropic{},
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			},
			wantKind: strategies.Overloaded, wantStatus: 529, wantType: "overloaded_error",
		},
		{
			name: "anthropic invalid json", p: Anthropic{},
			resp:     func(t *testing.T) *http.Response { return jsonResponse(200, `{"id":`) },
			wantKind: strategies.Failed, wantStatus: 200, wantErr: ErrInvalidResponse,
		},
		{
			name: "anthropic html error", p: Anthropic{},
			resp:     func(t *testing.T) *http.Response { return jsonResponse(502, `<html>bad gateway</html>`) },
			wantKind: strategies.Failed, wantStatus: 502,
		},
		{
			name: "openai json", p: OpenAI{},
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(200, fixture(t, "openai_completion.json"), "X-Request-Id", "req_deaa")
			},
			want:     Response{ID: "chatcmpl-A652Fhuqsr1kskKe5B63M0eiw3842", Text: "This is a test!", StopReason: "stop", Usage: strategies.Usage{InputTokens: 13, OutputTokens: 5}, RequestID: "req_deaa"},
			wantKind: strategies.Success, wantStatus: 200,
		},
		{
			name: "openai stream", p: OpenAI{},
			resp:     func(t *testing.T) *http.Response { return sseResponse(fixture(t, "openai_stream.txt")) },
			want:     Response{ID: "chatcmpl-123", Text: "Hello", StopReason: "stop", Usage: strategies.Usage{InputTokens: 9, OutputTokens: 2}},
			wantKind: strategies.Success, wantStatus: 200,
		},
		{
			name: "openai stream without done", p: OpenAI{},
			resp: func(t *testing.T) *http.Response {
				return sseResponse(cut(fixture(t, "openai_stream.txt"), "data: [DONE]"))
			},
			want:     Response{ID: "chatcmpl-123", Text: "Hello", StopReason: "stop", Usage: strategies.Usage{InputTokens: 9, OutputTokens: 2}},
			wantKind: strategies.Failed, wantStatus: 200, wantErr: ErrIncompleteStream,
		},
		{
			name: "openai stream error frame", p: OpenAI{},
			resp: func(t *testing.T) *http.Response {
				return sseResponse(cut(fixture(t, "openai_stream.txt"), "data: {\"id\":\"chatcmpl-123\",\"object\":\"chat.completion.chunk\",\"created\":1694268190,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{}") +
					"data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n")
			},
			want:     Response{ID: "chatcmpl-123", Text: "Hello"},
			wantKind: strategies.Failed, wantStatus: 200, wantType: "server_error",
		},
		{
			name: "openai 429 rate", p: OpenAI{},
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(429, `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29937, Requested 385. Please try again in 644ms.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, "X-Request-Id", "r")
			},
			want:     Response{RequestID: "r"},
			wantKind: strategies.Throttled, wantStatus: 429, wantType: "tokens",
		},
		{
			name: "openai 429 code only", p: OpenAI{},
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(429, `{"error":{"message":"quota","type":null,"code":"insufficient_quota"}}`)
			},
			wantKind: strategies.Quota, wantStatus: 429, wantType: "insufficient_quota",
		},
		{
			name: "openai 503", p: OpenAI{},
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(503, `{"error":{"message":"slow down","type":"server_error","code":null}}`)
			},
			wantKind: strategies.Overloaded, wantStatus: 503, wantType: "server_error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := tt.resp(t)
			got, o := tt.p.Decode(resp, time.Now())
			got.TTFT = 0
			if got != tt.want {
				t.Errorf("Response = %+v\nwant %+v", got, tt.want)
			}
			if o.Kind != tt.wantKind || o.Status != tt.wantStatus {
				t.Errorf("Outcome = %v %d (%v), want %v %d", o.Kind, o.Status, o.Err, tt.wantKind, tt.wantStatus)
			}
			if o.Kind == strategies.Success && o.Err != nil {
				t.Errorf("Outcome.Err = %v on success", o.Err)
			}
			if o.Kind == strategies.Success && o.Usage != tt.want.Usage {
				t.Errorf("Outcome.Usage = %+v, want %+v", o.Usage, tt.want.Usage)
			}
			if tt.wantErr != nil && !errors.Is(o.Err, tt.wantErr) {
				t.Errorf("Outcome.Err = %v, want %v", o.Err, tt.wantErr)
			}
			if tt.wantType != "" {
				var apiErr *APIError
				if !errors.As(o.Err, &apiErr) || apiErr.Type != tt.wantType || apiErr.Status != tt.wantStatus {
					t.Errorf("Outcome.Err = %#v, want an APIError of type %q", o.Err, tt.wantType)
				}
			}
		})
	}
}

func TestDecodeStreamTTFT(t *testing.T) {
	for _, tt := range []struct {
		p    Provider
		file string
	}{{Anthropic{}, "anthropic_basic_stream.txt"}, {OpenAI{}, "openai_stream.txt"}} {
		got, o := tt.p.Decode(sseResponse(fixture(t, tt.file)), time.Now().Add(-time.Second))
		if got.TTFT < time.Second || o.Latency < got.TTFT {
			t.Errorf("%s: TTFT = %v, Latency = %v; want 1s <= TTFT <= Latency", tt.p.Name(), got.TTFT, o.Latency)
		}
	}
}

func TestDecodeRetryAfterAndLimits(t *testing.T) {
	resp := jsonResponse(429, `{}`, "Retry-After", "1", "X-Should-Retry", "false", "Anthropic-Ratelimit-Requests-Limit", "50")
	_, o := Anthropic{}.Decode(resp, time.Now())
	if !o.HasRetryAfter || o.RetryAfter != time.Second {
		t.Errorf("RetryAfter = %v, %v; want 1s, true", o.RetryAfter, o.HasRetryAfter)
	}
	if o.ShouldRetry == nil || *o.ShouldRetry {
		t.Errorf("ShouldRetry = %v, want false", fmtBool(o.ShouldRetry))
	}
	if o.Limits.Requests.Limit != 50 {
		t.Errorf("Limits.Requests.Limit = %d, want 50", o.Limits.Requests.Limit)
	}
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		r    Request
		want int
	}{
		{Request{}, 0},
		{Request{Messages: []Message{{Role: "user", Content: ""}}}, 1},
		{Request{Messages: []Message{{Role: "user", Content: "abcd"}}}, 1},
		{Request{Messages: []Message{{Role: "user", Content: "Hello"}}}, 2},
		{Request{System: "abc", Messages: []Message{{Role: "user", Content: strings.Repeat("x", 400)}}}, 1 + 100},
		{Request{Messages: []Message{{Role: "user", Content: "héllo"}, {Role: "assistant", Content: "ok"}}}, 2 + 1}, // runes, not bytes
	}
	for _, tt := range tests {
		if got := EstimateTokens(tt.r); got != tt.want {
			b, _ := json.Marshal(tt.r)
			t.Errorf("EstimateTokens(%s) = %d, want %d", b, got, tt.want)
		}
	}
}

func FuzzSSEReader(f *testing.F) {
	for _, name := range []string{"anthropic_basic_stream.txt", "anthropic_error_stream.txt", "openai_stream.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("data: a\r\ndata: b\r\r:c\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewSSEReader(strings.NewReader(string(in)))
		for n := 0; ; n++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if n > len(in) {
				t.Fatalf("more events (%d) than input bytes (%d)", n, len(in))
			}
			if strings.ContainsAny(ev.Event, "\r\n") {
				t.Fatalf("event name %q holds a line break", ev.Event)
			}
		}
		// The decoders built on the reader must not panic on any stream.
		for _, p := range []Provider{Anthropic{}, OpenAI{}} {
			resp := sseResponse(string(in))
			p.Decode(resp, t0)
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	for _, name := range []string{"anthropic_message.json", "openai_completion.json"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(200, b)
	}
	f.Add(429, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`))
	f.Add(400, []byte(`{"error":{"message":"m","type":null,"code":42}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 999 {
			return
		}
		for _, p := range []Provider{Anthropic{}, OpenAI{}} {
			_, o := p.Decode(jsonResponse(status, string(body)), t0)
			if o.Status != status || (o.Kind == strategies.Success) != (o.Err == nil) {
				t.Fatalf("%s: Decode(%d, %q) = %v %d %v", p.Name(), status, body, o.Kind, o.Status, o.Err)
			}
		}
	})
}
