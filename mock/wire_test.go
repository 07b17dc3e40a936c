package mock

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/internal/memnet"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// dump renders a reply as status, sorted headers (without Date) and body.
func dump(r reply) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d\n", r.status)
	keys := make([]string, 0, len(r.header))
	for k := range r.header {
		if k != "Date" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(r.header[k], ", "))
	}
	b.WriteString("\n")
	b.Write(r.body)
	if len(r.body) > 0 && r.body[len(r.body)-1] != '\n' {
		b.WriteString("\n")
	}
	return b.String()
}

func TestWireGolden(t *testing.T) {
	tests := []struct {
		name, path, body string
		headers          []string
		limits           Limits
	}{
		{"anthropic.json.txt", "/v1/messages", anthropicBody(5, false, "Hello, world"), nil, Limits{RPM: 50, ITPM: 40000, OTPM: 8000}},
		{"anthropic.sse.txt", "/v1/messages", anthropicBody(5, true, "Hello, world"), nil, Limits{RPM: 50, ITPM: 40000, OTPM: 8000}},
		{"openai.json.txt", "/v1/chat/completions", openaiBody(5, false, false, "Hello, world"), nil, Limits{RPM: 50, TPM: 90000}},
		{"openai.sse.txt", "/v1/chat/completions", openaiBody(5, true, false, "Hello, world"), nil, Limits{RPM: 50, TPM: 90000}},
		{"openai.sse-usage.txt", "/v1/chat/completions", openaiBody(5, true, true, "Hello, world"), nil, Limits{RPM: 50, TPM: 90000}},
		{"anthropic.429.txt", "/v1/messages", anthropicBody(5, false, "hi"), nil, Limits{RPM: 1}},
		{"openai.429.txt", "/v1/chat/completions", openaiBody(5, false, false, "hi"), nil, Limits{RPM: 1}},
		{"anthropic.400.txt", "/v1/messages", `{"model":"m","messages":[]}`, nil, Limits{}},
		{"openai.400.txt", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user"}]}`, nil, Limits{}},
		{"count_tokens.txt", "/v1/messages/count_tokens", `{"model":"claude-sonnet-4-5","system":"Be terse.","messages":[{"role":"user","content":"Hello, world"}]}`, nil, Limits{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Seed = 7
				cfg.Latency.TTFT = 100 * time.Millisecond
				cfg.Limits = tt.limits
				ts := startServer(t, cfg)
				defer ts.stop()
				if strings.Contains(tt.name, "429") {
					ts.do(t, "POST", tt.path, tt.body) // uses the only request of the minute
				}
				golden(t, tt.name, dump(ts.do(t, "POST", tt.path, tt.body, tt.headers...)))
			})
		})
	}
}

// TestStreamPacing checks that events arrive at their absolute deadlines:
// token i at start + ttft + i×per_token, with the closing frames at once.
func TestStreamPacing(t *testing.T) {
	for _, api := range []string{"anthropic", "openai"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Latency.TTFT = 100 * time.Millisecond
				cfg.Latency.PerToken = 20 * time.Millisecond
				ts := startServer(t, cfg)
				defer ts.stop()
				path, body := "/v1/messages", anthropicBody(4, true, "hi")
				if api == "openai" {
					path, body = "/v1/chat/completions", openaiBody(4, true, true, "hi")
				}
				req, _ := http.NewRequest("POST", "http://mock"+path, strings.NewReader(body))
				setHeaders(req, nil)
				start := time.Now()
				resp, err := ts.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var deltas []time.Duration
				var last time.Duration
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					line := sc.Text()
					if strings.Contains(line, "text_delta") || strings.Contains(line, `"delta":{"content":"`) && !strings.Contains(line, `"content":""`) {
						deltas = append(deltas, time.Since(start))
					}
					last = time.Since(start)
				}
				want := []time.Duration{120 * time.Millisecond, 140 * time.Millisecond, 160 * time.Millisecond, 180 * time.Millisecond}
				if !slices.Equal(deltas, want) {
					t.Errorf("deltas at %v, want %v", deltas, want)
				}
				if last != 180*time.Millisecond {
					t.Errorf("stream ended at %v, want 180ms", last)
				}
			})
		})
	}
}

// TestStreamWrites checks what reaches the connection: a stream of n tokens
// is n+1 writes, the first with the headers and the opening frames, one a
// token, and the last token's with the closing frames and the end of the
// chunked body, so that neither side spends a system call on the end alone.
func TestStreamWrites(t *testing.T) {
	for _, tc := range []struct {
		path, body, end string
		n               int
	}{
		{"/v1/messages", anthropicBody(4, true, "hi"), "event: message_stop", 4},
		{"/v1/chat/completions", openaiBody(4, true, true, "hi"), "data: [DONE]", 4},
		{"/v1/responses", `{"model":"gpt-5-mini","input":"hi","max_output_tokens":16,"stream":true}`, "event: response.incomplete", 16},
	} {
		t.Run(tc.path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Output.Length = LengthMaxTokens
				cfg.Latency.TTFT = 100 * time.Millisecond
				cfg.Latency.PerToken = 20 * time.Millisecond
				s, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ln := memnet.New()
				var mu sync.Mutex
				var writes []string
				done := make(chan struct{})
				go func() {
					defer close(done)
					s.Serve(writeListener{ln, func(b []byte) {
						mu.Lock()
						writes = append(writes, string(b))
						mu.Unlock()
					}})
				}()
				tr := &http.Transport{DialContext: ln.Dial}
				req, _ := http.NewRequest("POST", "http://mock"+tc.path, strings.NewReader(tc.body))
				setHeaders(req, nil)
				resp, err := (&http.Client{Transport: tr}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				tr.CloseIdleConnections()
				s.Close()
				ln.Close()
				<-done

				mu.Lock()
				defer mu.Unlock()
				if len(writes) != tc.n+1 {
					t.Fatalf("%d writes, want %d (the opening, one a token, the last token's with the end): %q", len(writes), tc.n+1, writes)
				}
				if !strings.HasPrefix(writes[0], "HTTP/1.1 200 OK\r\n") {
					t.Errorf("first write %q, want the headers", writes[0])
				}
				for i, w := range writes[1:tc.n] {
					if strings.Contains(w, tc.end) || strings.Contains(w, "\r\n0\r\n\r\n") {
						t.Errorf("write %d (token %d) %q ends the stream", i+1, i+1, w)
					}
				}
				last := writes[tc.n]
				if !strings.Contains(last, tc.end) || !strings.HasSuffix(last, "\r\n0\r\n\r\n") {
					t.Errorf("last write %q, want the closing frames (%s) and the chunked body's end", last, tc.end)
				}
			})
		})
	}
}

// writeListener calls write with every write to its connections.
type writeListener struct {
	net.Listener
	write func([]byte)
}

func (l writeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return writeConn{c, l.write}, nil
}

type writeConn struct {
	net.Conn
	write func([]byte)
}

func (c writeConn) Write(b []byte) (int, error) {
	c.write(b)
	return c.Conn.Write(b)
}

// TestJSONTakesStreamTime checks that a non-streaming response takes as long
// as the same response streamed, jitter included.
func TestJSONTakesStreamTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency = Latency{TTFT: 200 * time.Millisecond, TTFTPerInputToken: time.Millisecond, PerToken: 10 * time.Millisecond}
		ts := startServer(t, cfg)
		defer ts.stop()
		text := strings.Repeat("abcd", 50) // 50 input tokens
		for _, stream := range []bool{false, true} {
			start := time.Now()
			r := ts.do(t, "POST", "/v1/messages", anthropicBody(30, stream, text))
			if r.status != 200 {
				t.Fatalf("status %d", r.status)
			}
			if got, want := time.Since(start), 200*time.Millisecond+50*time.Millisecond+300*time.Millisecond; got != want {
				t.Errorf("stream=%v: took %v, want %v", stream, got, want)
			}
		}
	})
}

func TestCountTokensAgreesWithUsage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		ts := startServer(t, cfg)
		defer ts.stop()
		msgs := `"system":[{"type":"text","text":"You are a classifier."}],"messages":[{"role":"user","content":"Classify: the printer is on fire"},{"role":"assistant","content":[{"type":"text","text":"ok"}]},{"role":"user","content":"é"}],"tools":[{"name":"t","input_schema":{"type":"object"}}]`
		ct := ts.do(t, "POST", "/v1/messages/count_tokens", `{"model":"claude-sonnet-4-5",`+msgs+`}`).json(t)
		m := ts.do(t, "POST", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":3,`+msgs+`}`).json(t)
		got, want := ct["input_tokens"], m["usage"].(map[string]any)["input_tokens"]
		if got != want {
			t.Errorf("count_tokens = %v, usage.input_tokens = %v; want them equal", got, want)
		}
		// system 6 + 8 + 1 + 1 (é is one character) + tools 12 (47 characters of JSON)
		if got != 28.0 {
			t.Errorf("count_tokens = %v, want 28", got)
		}
	})
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"Hello, world", 3}, {"日本語です", 2}}
	for _, tt := range tests {
		if got := EstimateTokens(tt.in); got != tt.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
	for _, n := range []int{0, 1, 2, 7, 100, 4096} {
		if got := EstimateTokens(Filler(n)); got != n {
			t.Errorf("EstimateTokens(Filler(%d)) = %d, want %d", n, got, n)
		}
	}
	if a, b := Filler(10), Filler(10); a != b || !strings.HasPrefix(Filler(10), Filler(3)) {
		t.Error("Filler is not deterministic and prefix-stable")
	}
}
