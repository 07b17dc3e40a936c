package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ratelab/ratelab/strategies"
)

func TestResponsesNewRequest(t *testing.T) {
	r := testRequest(true)
	r.Messages = append(r.Messages, Message{Role: "assistant", Content: "Hi."}, Message{Role: "user", Content: "And?"})
	req, err := OpenAIResponses{}.NewRequest(context.Background(), "http://h:1/v1/", "sk-secret", r, 1)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != http.MethodPost || req.URL.String() != "http://h:1/v1/responses" {
		t.Errorf("request = %s %s, want POST http://h:1/v1/responses", req.Method, req.URL)
	}
	for k, v := range map[string]string{"Authorization": "Bearer sk-secret", "X-Stainless-Retry-Count": "1",
		"Content-Type": "application/json", "Accept": "text/event-stream", "Idempotency-Key": "item-7"} {
		if got := req.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	body, _ := io.ReadAll(req.Body)
	const want = `{"model":"m","instructions":"Be terse.","input":[{"type":"message","role":"user","content":"Hello"},` +
		`{"type":"message","role":"assistant","content":"Hi."},{"type":"message","role":"user","content":"And?"}],"max_output_tokens":100,"stream":true}`
	if string(body) != want {
		t.Errorf("body = %s\nwant %s", body, want)
	}
	validateCreateResponse(t, body)

	req, _ = OpenAIResponses{}.NewRequest(context.Background(), "", "", testRequest(false), 0)
	if req.URL.String() != "https://api.openai.com/v1/responses" || req.Header.Get("Authorization") != "" {
		t.Errorf("default base, no key: %s with Authorization %q", req.URL, req.Header.Get("Authorization"))
	}
	body, _ = io.ReadAll(req.Body)
	validateCreateResponse(t, body)
}

// validateCreateResponse checks a request body against the CreateResponse
// schema of OpenAI's OpenAPI document, as extracted for the mock's tests.
func validateCreateResponse(t *testing.T, body []byte) {
	t.Helper()
	const file = "../mock/testdata/openai.schema.json"
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://ratelab.test/s.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("https://ratelab.test/s.json#/$defs/CreateResponse")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("request body does not match CreateResponse: %v\n%s", err, body)
	}
}

// The fixtures are the "Text input" and "Streaming" examples of POST
// /responses in openapi.json of github.com/openai/openai-openapi@f85dbe2.
func TestResponsesDecode(t *testing.T) {
	const streamID = "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654"
	cut := func(s, marker string) string { return s[:strings.Index(s, marker)] }
	tests := []struct {
		name       string
		resp       func(t *testing.T) *http.Response
		want       Response
		wantKind   strategies.Kind
		wantStatus int
		wantErr    error
		wantType   string
	}{
		{
			name: "json",
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(200, fixture(t, "openai_responses.json"), "X-Request-Id", "req_1")
			},
			want: Response{ID: "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
				Text:       "In a peaceful grove beneath a silver moon, a unicorn named Lumina discovered a hidden pool that reflected the stars. As she dipped her horn into the water, the pool began to shimmer, revealing a pathway to a magical realm of endless night skies. Filled with wonder, Lumina whispered a wish for all who dream to find their own hidden magic, and as she glanced back, her hoofprints sparkled like stardust.",
				StopReason: "completed", Usage: strategies.Usage{InputTokens: 36, OutputTokens: 87}, RequestID: "req_1"},
			wantKind: strategies.Success, wantStatus: 200,
		},
		{
			name: "json incomplete",
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(200, `{"id":"resp_1","object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},
					"output":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"message","id":"msg_1","role":"assistant","status":"incomplete","content":[{"type":"output_text","text":"Hel","annotations":[]},{"type":"output_text","text":"lo","annotations":[]}]}],
					"usage":{"input_tokens":3,"output_tokens":16,"total_tokens":19}}`)
			},
			want:     Response{ID: "resp_1", Text: "Hello", StopReason: "max_output_tokens", Usage: strategies.Usage{InputTokens: 3, OutputTokens: 16}},
			wantKind: strategies.Success, wantStatus: 200,
		},
		{
			name: "stream",
			resp: func(t *testing.T) *http.Response { return sseResponse(fixture(t, "openai_responses_stream.txt")) },
			want: Response{ID: streamID, Text: "Hi there! How can I assist you today?", StopReason: "completed",
				Usage: strategies.Usage{InputTokens: 37, OutputTokens: 11}},
			wantKind: strategies.Success, wantStatus: 200,
		},
		{
			name: "stream cut",
			resp: func(t *testing.T) *http.Response {
				return sseResponse(cut(fixture(t, "openai_responses_stream.txt"), "event: response.completed"))
			},
			want:     Response{ID: streamID, Text: "Hi there! How can I assist you today?"},
			wantKind: strategies.Failed, wantStatus: 200, wantErr: ErrIncompleteStream,
		},
		{
			name: "stream failed",
			resp: func(t *testing.T) *http.Response {
				return sseResponse(cut(fixture(t, "openai_responses_stream.txt"), "event: response.output_text.done") +
					"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":9,\"response\":{\"id\":\"" + streamID +
					"\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed to generate a response.\"}}}\n\n")
			},
			want:     Response{ID: streamID, Text: "Hi there! How can I assist you today?"},
			wantKind: strategies.Failed, wantStatus: 200, wantType: "server_error",
		},
		{
			name: "stream error event",
			resp: func(t *testing.T) *http.Response {
				return sseResponse(cut(fixture(t, "openai_responses_stream.txt"), "event: response.output_text.done") +
					"event: error\ndata: {\"type\":\"error\",\"code\":\"ERR_SOMETHING\",\"message\":\"Something went wrong\",\"param\":null,\"sequence_number\":1}\n\n")
			},
			want:     Response{ID: streamID, Text: "Hi there! How can I assist you today?"},
			wantKind: strategies.Failed, wantStatus: 200, wantType: "ERR_SOMETHING",
		},
		{
			name: "stream nested error",
			resp: func(t *testing.T) *http.Response {
				return sseResponse("event: error\ndata: {\"type\":\"error\",\"sequence_number\":0,\"error\":{\"type\":\"server_error\",\"message\":\"boom\"}}\n\n")
			},
			wantKind: strategies.Failed, wantStatus: 200, wantType: "server_error",
		},
		{
			name: "stream invalid json",
			resp: func(t *testing.T) *http.Response {
				return sseResponse("event: response.created\ndata: {\"type\":\n\n")
			},
			wantKind: strategies.Failed, wantStatus: 200, wantErr: ErrInvalidResponse,
		},
		{
			name: "429",
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
					"X-Request-Id", "r", "Retry-After", "2", "X-Ratelimit-Limit-Requests", "60", "X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "1s")
			},
			want:     Response{RequestID: "r"},
			wantKind: strategies.Throttled, wantStatus: 429, wantType: "requests",
		},
		{
			name: "503",
			resp: func(t *testing.T) *http.Response {
				return jsonResponse(503, `{"error":{"message":"overloaded","type":"server_error","param":null,"code":"overloaded"}}`)
			},
			wantKind: strategies.Overloaded, wantStatus: 503, wantType: "server_error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, o := OpenAIResponses{}.Decode(tt.resp(t), time.Now())
			got.TTFT = 0
			if got != tt.want {
				t.Errorf("Response = %+v\nwant %+v", got, tt.want)
			}
			if o.Kind != tt.wantKind || o.Status != tt.wantStatus {
				t.Errorf("Outcome = %v %d (%v), want %v %d", o.Kind, o.Status, o.Err, tt.wantKind, tt.wantStatus)
			}
			if o.Kind == strategies.Success && (o.Err != nil || o.Usage != tt.want.Usage) {
				t.Errorf("Outcome.Err/Usage = %v/%+v, want nil/%+v", o.Err, o.Usage, tt.want.Usage)
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
			if tt.name == "429" {
				if !o.HasRetryAfter || o.RetryAfter != 2*time.Second || o.Limits.Requests.Limit != 60 || o.Limits.Requests.Reset.IsZero() {
					t.Errorf("429: retry-after %v/%v, limits %+v; want 2s and requests limit 60 with a reset", o.RetryAfter, o.HasRetryAfter, o.Limits.Requests)
				}
			}
		})
	}
}

func TestResponsesDecodeTTFT(t *testing.T) {
	got, o := OpenAIResponses{}.Decode(sseResponse(fixture(t, "openai_responses_stream.txt")), time.Now().Add(-time.Second))
	if got.TTFT < time.Second || o.Latency < got.TTFT {
		t.Errorf("TTFT = %v, Latency = %v; want 1s <= TTFT <= Latency", got.TTFT, o.Latency)
	}
}
