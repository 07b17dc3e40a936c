package record_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/provider/bedrock"
	"github.com/ratelab/ratelab/provider/wire"
)

// A client case: a provider of package provider, the model it asks for,
// the key it sends and the key the line is labelled by.
type clientCase struct {
	provider, model string
	key, label      string
	// path is the start of the recorded path.
	path string
}

var clientCases = []clientCase{
	{"anthropic", "claude-haiku-4-5", "sk-a", "sk-a", "/v1/messages"},
	{"openai", "gpt-4o-mini", "sk-o", "sk-o", "/v1/chat/completions"},
	{"openai-responses", "gpt-4o-mini", "sk-r", "sk-r", "/v1/responses"},
	{"azure-openai", "gpt-4o-mini", "az-key", "az-key", "/openai/deployments/gpt-4o-mini/chat/completions"},
	{"gemini", "gemini-2.5-flash", "g-key", "g-key", "/v1beta/models/gemini-2.5-flash:"},
	{"vertex", "gemini-2.5-flash", "ya29.token", "ya29.token", "/v1/projects/ratelab/locations/global/publishers/google/models/gemini-2.5-flash:"},
	{"vertex-anthropic", "claude-haiku-4-5@20251001", "ya29.token", "ya29.token", "/v1/projects/ratelab/locations/global/publishers/anthropic/models/claude-haiku-4-5@20251001:"},
	{"bedrock", "anthropic.claude-haiku-4-5-20251001-v1:0", "AKIDEXAMPLE:secret", "AKIDEXAMPLE", "/model/anthropic.claude-haiku-4-5-20251001-v1:0/converse"},
}

// do sends one call of c through a recording transport in front of srv
// and returns the line.
func do(t *testing.T, srv *mock.Server, c clientCase, stream bool) (record.Attempt, provider.Response) {
	t.Helper()
	var buf bytes.Buffer
	w, _ := record.NewWriter(&buf, record.Header{Source: "test"})
	p, err := provider.ByName(c.provider)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://mock.test"
	if strings.HasPrefix(c.path, "/v1/chat") || strings.HasPrefix(c.path, "/v1/responses") {
		base += "/v1" // the OpenAI clients' base URL holds the version
	}
	cl := &provider.Client{Provider: p, BaseURL: base, APIKey: c.key,
		HTTP: &http.Client{Transport: &record.Transport{Base: srv.InProcess(), W: w}}}
	out, o := cl.Do(context.Background(), provider.Request{Model: c.model, MaxTokens: 20, Stream: stream,
		Messages: []provider.Message{{Role: "user", Content: "hi"}}}, 0)
	if o.Err != nil && o.Status == 200 {
		t.Fatalf("%s: %v", c.provider, o.Err)
	}
	f, err := record.Parse(&buf, "rec.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Attempts) != 1 {
		t.Fatalf("%s: %d lines, want 1", c.provider, len(f.Attempts))
	}
	return f.Attempts[0], out
}

// TestEveryFormat: each client of package provider, plain and streamed,
// against the mock through the recorder, in virtual time: the line names
// the format, the model, the key's label and max_tokens, has the usage the
// client decoded, and a stream's token timings are the mock's exactly
// (token i at ttft + i × per_token: first at 110 ms, one every 10 ms).
func TestEveryFormat(t *testing.T) {
	for _, c := range clientCases {
		for _, stream := range []bool{false, true} {
			name := c.provider
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := mock.DefaultConfig()
					cfg.Latency.TTFT, cfg.Latency.PerToken = 100*time.Millisecond, 10*time.Millisecond
					cfg.Output.Tokens = mock.Distribution{Kind: mock.MaxTokens}
					srv, err := mock.New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					a, out := do(t, srv, c, stream)
					if a.Provider != c.provider || a.Model != c.model || a.Key != record.KeyLabel(c.label) || a.MaxTokens != 20 ||
						a.Stream != stream || a.Status != 200 || a.ErrorType != "" || !strings.HasPrefix(a.Path, c.path) {
						t.Errorf("line %+v", a)
					}
					if a.Usage == nil || a.Usage.OutputTokens != 20 || a.Usage.OutputTokens != out.Usage.OutputTokens ||
						a.Usage.InputTokens != out.Usage.InputTokens || a.Usage.InputTokens == 0 {
						t.Errorf("usage %+v, the client decoded %+v", a.Usage, out.Usage)
					}
					if a.StopReason == "" {
						t.Errorf("no stop reason: %+v", a)
					}
					if !stream {
						if a.Frames != 0 || a.LatencyMS != 300 {
							t.Errorf("plain call: %d frames, latency %v ms; want 0 and 300 (100 + 20 × 10)", a.Frames, a.LatencyMS)
						}
						return
					}
					if a.Frames != 20 || a.TTFTMS != 110 || a.LastTokenMS != 300 || a.GapMeanMS != 10 || a.GapStdMS != 0 {
						t.Errorf("stream timings: %d frames, ttft %v, last %v, gap %v ± %v; want 20, 110, 300, 10 ± 0",
							a.Frames, a.TTFTMS, a.LastTokenMS, a.GapMeanMS, a.GapStdMS)
					}
				})
			})
		}
	}
}

// TestEveryFormat429: a refusal of each format is recorded with its
// status, its error type and finer code, and its retry delay wherever the
// format gives one: a header (Anthropic, OpenAI, Azure), Google's RetryInfo
// (the Gemini API and Vertex AI's front end), none (Bedrock).
func TestEveryFormat429(t *testing.T) {
	want := map[string]struct {
		typ, code string
		from      string // "header", "body" or "" (none)
		headers   bool
	}{
		"anthropic":        {"rate_limit_error", "", "header", true},
		"openai":           {"requests", "rate_limit_exceeded", "header", true},
		"openai-responses": {"requests", "rate_limit_exceeded", "header", true},
		"azure-openai":     {"429", "", "header", true},
		"gemini":           {"RESOURCE_EXHAUSTED", "GenerateRequestsPerMinutePerProjectPerModel", "body", false},
		"vertex":           {"RESOURCE_EXHAUSTED", "GenerateContentRequestsPerMinutePerProjectPerBaseModel", "body", false},
		"vertex-anthropic": {"RESOURCE_EXHAUSTED", "GenerateContentRequestsPerMinutePerProjectPerBaseModel", "body", false},
		"bedrock":          {"ThrottlingException", "", "", false},
	}
	for _, c := range clientCases {
		t.Run(c.provider, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := mock.DefaultConfig()
				cfg.Limits.RPM = 1
				srv, err := mock.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				do(t, srv, c, false)
				a, _ := do(t, srv, c, false)
				w := want[c.provider]
				if a.Status != 429 || a.ErrorType != w.typ || a.ErrorCode != w.code || a.ErrorMessage == "" {
					t.Errorf("429 recorded as status %d, type %q, code %q, message %q; want %q, %q",
						a.Status, a.ErrorType, a.ErrorCode, a.ErrorMessage, w.typ, w.code)
				}
				switch {
				case w.from == "" && a.RetryAfterMS != nil:
					t.Errorf("retry-after %v ms recorded; the format sends none", *a.RetryAfterMS)
				case w.from != "" && (a.RetryAfterMS == nil || *a.RetryAfterMS <= 0):
					t.Errorf("no retry delay recorded; the %s gives one", w.from)
				case w.from == "body" && a.RetryAfterFrom != "body", w.from == "header" && a.RetryAfterFrom != "":
					t.Errorf("retry delay from %q, want %s", a.RetryAfterFrom, w.from)
				}
				if (len(a.Headers) > 0) != w.headers {
					t.Errorf("headers %v: the format sends rate-limit headers: %v", a.Headers, w.headers)
				}
			})
		})
	}
}

// TestAzureHeaders: Azure's x-ratelimit-limit/-remaining requests and
// tokens are recorded, and it sends no reset headers.
func TestAzureHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := mock.DefaultConfig()
		cfg.Limits.RPM, cfg.Limits.TPM = 60, 100000
		srv, err := mock.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := do(t, srv, clientCases[3], false)
		for _, h := range []string{"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens"} {
			if a.Headers[h] == "" {
				t.Errorf("no %s in %v", h, a.Headers)
			}
		}
		if a.Headers["x-ratelimit-limit-requests"] != "60" || a.Headers["x-ratelimit-reset-requests"] != "" {
			t.Errorf("headers %v: want limit-requests 60 and no reset", a.Headers)
		}
	})
}

type rt func(*http.Request) (*http.Response, error)

func (f rt) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// bedrockStream is a ConverseStream answer of the mock, whole.
func bedrockStream(t *testing.T) []byte {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = 10 * time.Millisecond // one message a token, in virtual time
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := bedrock.Format{}.NewRequest(context.Background(), "http://mock.test", "AKID:secret",
		wire.Request{Model: "anthropic.claude-haiku-4-5-20251001-v1:0", MaxTokens: 5, Stream: true,
			Messages: []wire.Message{{Role: "user", Content: "hi"}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.InProcess().RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return b
}

// replay records one ConverseStream attempt whose body is b.
func replay(t *testing.T, b []byte) record.Attempt {
	var buf bytes.Buffer
	w, _ := record.NewWriter(&buf, record.Header{Source: "test"})
	tr := &record.Transport{W: w, Base: rt(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}},
			Body: io.NopCloser(bytes.NewReader(b)), Request: r}, nil
	})}
	req, _ := http.NewRequest("POST", "http://up.test/model/m/converse-stream", strings.NewReader(`{}`))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read in 7-byte pieces: messages straddle reads.
	p := make([]byte, 7)
	for {
		if _, err := resp.Body.Read(p); err != nil {
			break
		}
	}
	resp.Body.Close()
	f, err := record.Parse(&buf, "rec.jsonl")
	if err != nil || len(f.Attempts) != 1 {
		t.Fatalf("%v %+v", err, f)
	}
	return f.Attempts[0]
}

// TestEventStreamBroken: a whole eventstream read in small pieces is
// every frame; one cut inside a message, or with a corrupted CRC, is a
// stream_cut line saying where it broke, its usage left unknown.
func TestEventStreamBroken(t *testing.T) {
	synctest.Test(t, testEventStreamBroken)
}

func testEventStreamBroken(t *testing.T) {
	b := bedrockStream(t)
	whole := replay(t, b)
	if whole.Frames != 5 || whole.Usage == nil || whole.Usage.OutputTokens != 5 || whole.ErrorType != "" || whole.StopReason != "max_tokens" {
		t.Fatalf("the whole stream: %+v", whole)
	}
	cut := replay(t, b[:len(b)-10])
	if cut.ErrorType != "stream_cut" || !strings.HasPrefix(cut.ErrorMessage, "the event stream ended inside a message: ") || cut.Usage != nil {
		t.Errorf("cut inside the last message: %+v", cut)
	}
	bad := bytes.Clone(b)
	bad[len(bad)-1] ^= 0xff // the last message's CRC
	corrupt := replay(t, bad)
	if corrupt.ErrorType != "stream_cut" || !strings.Contains(corrupt.ErrorMessage, "event stream message: ") {
		t.Errorf("a corrupted CRC: %+v", corrupt)
	}
	junk := replay(t, []byte("data: {\"not\": \"an event stream\"}\n\n"))
	if junk.ErrorType != "stream_cut" || !strings.HasPrefix(junk.ErrorMessage, "not an event stream: a message of ") {
		t.Errorf("SSE sent as an event stream: %+v", junk)
	}
}

// TestProviderOf: each format's paths, the model the path names, and the
// paths that are no model call.
func TestProviderOf(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/messages":                                          "anthropic",
		"/v1/messages/count_tokens":                             "",
		"/v1/chat/completions":                                  "openai",
		"/v1/responses":                                         "openai-responses",
		"/openai/deployments/prod/chat/completions":             "azure-openai",
		"/openai/v1/chat/completions":                           "azure-openai",
		"/openai/responses":                                     "azure-openai-responses",
		"/openai/v1/responses":                                  "azure-openai-responses",
		"/v1beta/models/gemini-2.5-flash:streamGenerateContent": "gemini",
		"/v1beta/models/gemini-2.5-flash:countTokens":           "",
		"/v1beta1/projects/p/locations/l/publishers/google/models/g:generateContent":     "vertex",
		"/v1/projects/p/locations/l/publishers/anthropic/models/c@1:streamRawPredict":    "vertex-anthropic",
		"/v1/projects/p/locations/l/publishers/anthropic/models/count-tokens:rawPredict": "",
		"/model/us.anthropic.claude-x-v1:0/invoke-with-response-stream":                  "bedrock",
		"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/converse":    "bedrock",
		"/v1/embeddings": "",
	} {
		if got := record.ProviderOf(path); got != want {
			t.Errorf("ProviderOf(%q) = %q, want %q", path, got, want)
		}
	}
}
