package mock

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/memnet"
)

// testServer is a Server serving on an in-memory listener, with a client
// that dials it. It works inside a synctest bubble.
type testServer struct {
	*Server
	client *http.Client
	tr     *http.Transport
	ln     *memnet.Listener
	done   chan struct{}
}

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return serveServer(s)
}

// serveServer serves an existing Server on a new in-memory listener.
func serveServer(s *Server) *testServer {
	ln := memnet.New()
	tr := &http.Transport{DialContext: ln.Dial, MaxIdleConnsPerHost: 10000, DisableCompression: true}
	ts := &testServer{Server: s, client: &http.Client{Transport: tr}, tr: tr, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(ts.done)
		s.Serve(ln)
	}()
	return ts
}

// stop closes idle connections, the server and the listener, and waits for
// Serve to return and for connection goroutines to wind down (net/http
// lingers up to 500ms after an error response before closing), as a
// synctest bubble requires. Use it only inside a bubble.
func (ts *testServer) stop() {
	ts.tr.CloseIdleConnections()
	ts.Server.Close()
	ts.ln.Close()
	<-ts.done
	time.Sleep(time.Second)
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request and reads the whole response.
func (ts *testServer) do(t testing.TB, method, path, body string, headers ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, "http://mock"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	setHeaders(req, headers)
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

// anthropicBody is a Messages request body.
func anthropicBody(maxTokens int, stream bool, text string) string {
	b, _ := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": maxTokens, "stream": stream,
		"messages": []map[string]any{{"role": "user", "content": text}},
	})
	return string(b)
}

// openaiBody is a Chat Completions request body.
func openaiBody(maxTokens int, stream, includeUsage bool, text string) string {
	m := map[string]any{
		"model": "gpt-4o-mini", "max_completion_tokens": maxTokens,
		"messages": []map[string]any{{"role": "user", "content": text}},
	}
	if stream {
		m["stream"] = true
		if includeUsage {
			m["stream_options"] = map[string]any{"include_usage": true}
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func compactJSON(t testing.TB, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("compact %q: %v", b, err)
	}
	return out.String()
}

// send is do for goroutines: it reports failures as errors.
func (ts *testServer) send(method, path, body string, headers ...string) (reply, error) {
	req, err := http.NewRequest(method, "http://mock"+path, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	setHeaders(req, headers)
	resp, err := ts.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}, err
}

// setHeaders sets the name-value pairs of headers on req, after an
// anthropic-version as the Anthropic SDKs send on every request (strict
// mode requires it); a pair with an empty value removes that header.
func setHeaders(req *http.Request, headers []string) {
	if strings.HasPrefix(req.URL.Path, "/v1/messages") {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
}
