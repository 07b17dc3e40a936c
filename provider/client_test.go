package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

const testKey = "sk-ant-test-0123456789abcdef"

func TestClientDoStatusClasses(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		headers   map[string]string
		body      string
		wantKind  strategies.Kind
		wantRetry time.Duration
		wantHasRA bool
		wantType  string
		wantText  string
	}{
		{"200", 200, nil, `{"id":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`, strategies.Success, 0, false, "", "ok"},
		{"429", 429, map[string]string{"Retry-After": "1"}, `{"type":"error","error":{"type":"rate_limit_error","message":"limit"}}`, strategies.Throttled, time.Second, true, "rate_limit_error", ""},
		{"429 ms", 429, map[string]string{"Retry-After-Ms": "20", "Retry-After": "1"}, `{}`, strategies.Throttled, 20 * time.Millisecond, true, "", ""},
		{"529", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, strategies.Overloaded, 0, false, "overloaded_error", ""},
		{"503", 503, nil, `{"type":"error","error":{"type":"api_error","message":"unavailable"}}`, strategies.Overloaded, 0, false, "api_error", ""},
		{"500", 500, nil, `{"type":"error","error":{"type":"api_error","message":"boom"}}`, strategies.Failed, 0, false, "api_error", ""},
		{"400", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`, strategies.Failed, 0, false, "invalid_request_error", ""},
		{"401", 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, strategies.Failed, 0, false, "authentication_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotCount, gotKey string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotCount, gotKey = r.Header.Get("X-Stainless-Retry-Count"), r.Header.Get("X-Api-Key")
				for k, v := range tt.headers {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := &Client{Provider: Anthropic{}, BaseURL: srv.URL, APIKey: testKey, HTTP: srv.Client()}
			resp, o := c.Do(context.Background(), testRequest(false), 1)
			if o.Kind != tt.wantKind || o.Status != tt.status {
				t.Errorf("Outcome = %v %d (%v), want %v %d", o.Kind, o.Status, o.Err, tt.wantKind, tt.status)
			}
			if o.RetryAfter != tt.wantRetry || o.HasRetryAfter != tt.wantHasRA {
				t.Errorf("RetryAfter = %v, %v; want %v, %v", o.RetryAfter, o.HasRetryAfter, tt.wantRetry, tt.wantHasRA)
			}
			if _, typ, _ := Describe(o); tt.wantType != "" && typ != tt.wantType {
				t.Errorf("Describe type = %q, want %q", typ, tt.wantType)
			}
			if resp.Text != tt.wantText {
				t.Errorf("Text = %q, want %q", resp.Text, tt.wantText)
			}
			if gotCount != "1" || gotKey != testKey {
				t.Errorf("server saw retry count %q, key %q; want 1, the key", gotCount, gotKey)
			}
			if o.Latency <= 0 {
				t.Errorf("Latency = %v, want > 0", o.Latency)
			}
		})
	}
}

func TestClientDoConnectionError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := &Client{Provider: OpenAI{}, BaseURL: url + "/v1", APIKey: testKey}
	_, o := c.Do(context.Background(), testRequest(false), 0)
	if o.Kind != strategies.Failed || o.Status != 0 || o.Err == nil {
		t.Errorf("Outcome = %v %d %v, want Failed 0 with an error", o.Kind, o.Status, o.Err)
	}
	if _, typ, _ := Describe(o); typ != "connection_error" {
		t.Errorf("Describe type = %q, want connection_error", typ)
	}
}

func TestClientDoCanceled(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			started := make(chan struct{})
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "event: ping\ndata: {\"type\":\"ping\"}\n\n")
					w.(http.Flusher).Flush()
				}
				close(started)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			defer srv.Close()
			defer close(release)
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-started; cancel() }()
			c := &Client{Provider: Anthropic{}, BaseURL: srv.URL, HTTP: srv.Client()}
			_, o := c.Do(ctx, testRequest(stream), 0)
			if o.Kind != strategies.Canceled || !errors.Is(o.Err, context.Canceled) {
				t.Errorf("Outcome = %v %v, want Canceled with context.Canceled", o.Kind, o.Err)
			}
		})
	}
}

func TestClientDoStreamCut(t *testing.T) {
	full := fixture(t, "anthropic_basic_stream.txt")
	part := full[:strings.Index(full, "event: message_delta")]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(full)))
		io.WriteString(w, part)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	c := &Client{Provider: Anthropic{}, BaseURL: srv.URL, HTTP: srv.Client()}
	resp, o := c.Do(context.Background(), testRequest(true), 0)
	if o.Kind != strategies.Failed || o.Status != 200 || !errors.Is(o.Err, ErrIncompleteStream) {
		t.Errorf("Outcome = %v %d %v, want Failed 200 incomplete stream", o.Kind, o.Status, o.Err)
	}
	if resp.Text != "Hello" {
		t.Errorf("Text = %q, want the part that arrived", resp.Text)
	}
}

func TestClientRedactsKey(t *testing.T) {
	// A server that echoes the key back in its error message.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	defer srv.Close()
	c := &Client{Provider: OpenAI{}, BaseURL: srv.URL, APIKey: testKey, HTTP: srv.Client()}
	_, o := c.Do(context.Background(), testRequest(false), 0)
	_, _, msg := Describe(o)
	if strings.Contains(o.Err.Error(), testKey) || strings.Contains(msg, testKey) {
		t.Errorf("error holds the key: %v / %q", o.Err, msg)
	}
	if !strings.Contains(msg, "[REDACTED]") {
		t.Errorf("message = %q, want the key redacted", msg)
	}

	// A key that ended up in the URL (a query-string key) of a failed dial.
	c = &Client{Provider: OpenAI{}, BaseURL: "http://127.0.0.1:1/v1?key=" + testKey, APIKey: testKey}
	_, o = c.Do(context.Background(), testRequest(false), 0)
	if o.Err == nil || strings.Contains(o.Err.Error(), testKey) {
		t.Errorf("connection error = %v, want one without the key", o.Err)
	}
	var target interface{ Timeout() bool }
	if errors.As(o.Err, &target) {
		t.Errorf("redacted error unwraps to %T, whose message holds the key", target)
	}
	if s := c.String(); strings.Contains(s, testKey) {
		t.Errorf("Client.String() = %q holds the key", s)
	}
}

func TestRedactKeepsIs(t *testing.T) {
	err := Redact(fmt.Errorf("get http://x?k=%s: %w", testKey, context.Canceled), testKey)
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), testKey) {
		t.Errorf("Redact = %v; want context.Canceled kept, key gone", err)
	}
	if got := Redact(nil, testKey); got != nil {
		t.Errorf("Redact(nil) = %v", got)
	}
}

func TestNewTransport(t *testing.T) {
	tr := NewTransport(250)
	if tr.MaxIdleConnsPerHost != 250 || tr.MaxIdleConns < 250 || tr.MaxConnsPerHost != 0 {
		t.Errorf("NewTransport(250): idle/host %d, idle %d, conns/host %d", tr.MaxIdleConnsPerHost, tr.MaxIdleConns, tr.MaxConnsPerHost)
	}
	if tr := NewTransport(0); tr.MaxIdleConnsPerHost != 1 {
		t.Errorf("NewTransport(0).MaxIdleConnsPerHost = %d, want 1", tr.MaxIdleConnsPerHost)
	}
}

func TestClientCost(t *testing.T) {
	c := &Client{Provider: Anthropic{}, APIKey: testKey}
	got := c.Cost(testRequest(false))
	if got.Provider != "anthropic" || got.MaxTokens != 100 || got.InputTokens != EstimateTokens(testRequest(false)) || strings.Contains(got.Key, testKey) {
		t.Errorf("Cost = %+v", got)
	}
	// Cost.Key is the fingerprint state files and strategies.StateKey use,
	// so a state saved under strategies.Fingerprint(key) applies to these
	// calls; with no key too.
	for _, key := range []string{testKey, "sk-other", ""} {
		c := &Client{Provider: Anthropic{}, APIKey: key}
		if got, want := c.Cost(testRequest(false)).Key, strategies.Fingerprint(key); got != want {
			t.Errorf("Cost(APIKey %q).Key = %q, want strategies.Fingerprint = %q", key, got, want)
		}
	}
}

// decodeOverride is a Provider that embeds a built-in one to change its
// Decode.
type decodeOverride struct{ Anthropic }

func (decodeOverride) Decode(resp *http.Response, sent time.Time) (Response, strategies.Outcome) {
	out, o := Anthropic{}.Decode(resp, sent)
	out.Text = "overridden: " + out.Text
	return out, o
}

// TestClientDoDecodeOverride: Client.Do decodes a built-in provider in
// place, but a type embedding one keeps its own Decode.
func TestClientDoDecodeOverride(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		p    Provider
		want string
	}{
		{Anthropic{}, "ok"},
		{decodeOverride{}, "overridden: ok"},
	} {
		c := &Client{Provider: tt.p, BaseURL: srv.URL, APIKey: testKey, HTTP: srv.Client()}
		resp, o := c.Do(context.Background(), testRequest(false), 0)
		if o.Kind != strategies.Success || resp.Text != tt.want || o.Usage.OutputTokens != 1 {
			t.Errorf("%T: Do = %q, %v, %d output tokens; want %q, Success, 1", tt.p, resp.Text, o.Kind, o.Usage.OutputTokens, tt.want)
		}
	}
}

// TestClientDoCanceledAtTimeZero: an attempt that ctx ended while it was
// sent is Canceled, with its latency, whatever the time on the Client's
// Clock (even the zero time); one whose request could not be built is
// Failed.
func TestClientDoCanceledAtTimeZero(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &Client{Provider: Anthropic{}, BaseURL: srv.URL, APIKey: testKey, HTTP: srv.Client(), Clock: clock.NewSim(time.Time{})}
	if _, o := c.Do(ctx, testRequest(false), 0); o.Kind != strategies.Canceled || !errors.Is(o.Err, context.Canceled) {
		t.Errorf("sent under a canceled ctx: Outcome = %v (%v), want Canceled", o.Kind, o.Err)
	}
	c.BaseURL = "http://[::1"
	if _, o := c.Do(ctx, testRequest(false), 0); o.Kind != strategies.Failed || o.Err == nil || o.Latency != 0 {
		t.Errorf("not built: Outcome = %v (%v) after %v, want Failed with an error after 0", o.Kind, o.Err, o.Latency)
	}
}

// TestWireOfEveryProvider: Client.Do decodes every provider ByName knows
// in place (formatOf), through the provider's own wire.Format: wire.Decode
// over formatOf(p) reads its recorded answer exactly as p.Decode does. A
// provider missing from formatOf would still decode, through Decode, but
// with its results copied through a worker's frames (see wire.Decode).
func TestWireOfEveryProvider(t *testing.T) {
	fixtures := map[string]string{
		"anthropic":        "anthropic_message.json",
		"openai":           "openai_completion.json",
		"openai-responses": "openai_responses.json",
		"azure-openai":     "azure_completion.json",
		"bedrock":          "bedrock_converse.json",
		"gemini":           "gemini_response.json",
		"vertex":           "gemini_response.json",
		"vertex-anthropic": "anthropic_message.json",
	}
	for _, name := range Names() {
		p, err := ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		f := formatOf(p)
		if f == nil {
			t.Errorf("%s: formatOf = nil, want its wire.Format (Client.Do would not decode it in place)", name)
			continue
		}
		fixture, ok := fixtures[name]
		if !ok {
			t.Errorf("%s: no recorded answer in this test's fixtures", name)
			continue
		}
		body, err := os.ReadFile(filepath.Join("testdata", fixture))
		if err != nil {
			t.Fatal(err)
		}
		answer := func() *http.Response {
			h := http.Header{"Content-Type": {"application/json"}}
			h.Set(f.Spec().RequestID, "req_1")
			return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
		}
		sent := time.Now()
		want, wantO := p.Decode(answer(), sent)
		var got Response
		var o strategies.Outcome
		wire.Decode(answer(), sent, f.Spec(), &got, &o)
		o.Latency, wantO.Latency = 0, 0
		if want.Text == "" || want.RequestID != "req_1" || wantO.Kind != strategies.Success {
			t.Fatalf("%s: Decode(%s) = %+v, %v: want a success with text and request id", name, fixture, want, wantO.Kind)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(o, wantO) {
			t.Errorf("%s: wire.Decode over formatOf = %+v, %+v; Decode = %+v, %+v", name, got, o, want, wantO)
		}
	}
}
