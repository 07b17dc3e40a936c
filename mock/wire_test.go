package mock

import (
	"bufio"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
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
