package mock

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOutputText checks Output.Text: every response says the configured text
// (JSON-escaped on the wire, whole or cut at max_tokens), its usage counts
// EstimateTokens of what was said, and the stop reason tells a finished
// answer from a cut one — for both APIs, JSON and streaming.
func TestOutputText(t *testing.T) {
	const text = `{"label": "billing", "note": "naïve \"quote\"\nline"}`
	full := EstimateTokens(text)
	tests := []struct {
		name      string
		maxTokens int
		malformed bool
		wantText  string
		wantStop  [2]string // anthropic, openai
	}{
		{"whole", 1000, false, text, [2]string{"end_turn", "stop"}},
		{"exactly fits", full, false, text, [2]string{"end_turn", "stop"}},
		{"cut at max_tokens", 3, false, string([]rune(text)[:12]), [2]string{"max_tokens", "length"}},
		{"malformed", 1000, true, string([]rune(text)[:4*(full/2)]), [2]string{"end_turn", "stop"}},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Output.Text = text
		if tt.malformed {
			cfg.Faults.Malformed = 1
		}
		srv, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, stream := range []bool{false, true} {
			got, stop, tokens := anthropicSays(t, srv, tt.maxTokens, stream)
			if got != tt.wantText || stop != tt.wantStop[0] || tokens != EstimateTokens(tt.wantText) {
				t.Errorf("%s, anthropic, stream %v: text %q, stop %q, output_tokens %d; want %q, %q, %d",
					tt.name, stream, got, stop, tokens, tt.wantText, tt.wantStop[0], EstimateTokens(tt.wantText))
			}
			got, stop, tokens = openaiSays(t, srv, tt.maxTokens, stream)
			if got != tt.wantText || stop != tt.wantStop[1] || tokens != EstimateTokens(tt.wantText) {
				t.Errorf("%s, openai, stream %v: text %q, finish %q, completion_tokens %d; want %q, %q, %d",
					tt.name, stream, got, stop, tokens, tt.wantText, tt.wantStop[1], EstimateTokens(tt.wantText))
			}
		}
	}
}

func serve(t *testing.T, srv *Server, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	setHeaders(req, nil)
	req.Header.Set("x-api-key", "k")
	req.Header.Set("Authorization", "Bearer k")
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec
}

// sseData returns the data of each SSE frame in body.
func sseData(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func anthropicSays(t *testing.T, srv *Server, maxTokens int, stream bool) (text, stop string, tokens int) {
	t.Helper()
	body := `{"model":"claude-sonnet-4-5","max_tokens":` + itoa(maxTokens) + `,"messages":[{"role":"user","content":"hi"}],"stream":` + btoa(stream) + `}`
	rec := serve(t, srv, "/v1/messages", body)
	if !stream {
		var m struct {
			Content    []struct{ Text string }
			StopReason string `json:"stop_reason"`
			Usage      struct {
				OutputTokens int `json:"output_tokens"`
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || len(m.Content) != 1 {
			t.Fatalf("anthropic JSON %s: %v", rec.Body, err)
		}
		return m.Content[0].Text, m.StopReason, m.Usage.OutputTokens
	}
	var b strings.Builder
	for _, d := range sseData(rec.Body.String()) {
		var ev struct {
			Type  string
			Delta struct {
				Text       string
				StopReason string `json:"stop_reason"`
			}
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("anthropic SSE frame %q: %v", d, err)
		}
		switch ev.Type {
		case "content_block_delta":
			b.WriteString(ev.Delta.Text)
		case "message_delta":
			stop, tokens = ev.Delta.StopReason, ev.Usage.OutputTokens
		}
	}
	return b.String(), stop, tokens
}

func openaiSays(t *testing.T, srv *Server, maxTokens int, stream bool) (text, stop string, tokens int) {
	t.Helper()
	body := `{"model":"gpt-4o-mini","max_completion_tokens":` + itoa(maxTokens) + `,"messages":[{"role":"user","content":"hi"}],"stream":` + btoa(stream) + `,"stream_options":{"include_usage":true}}`
	if !stream {
		body = `{"model":"gpt-4o-mini","max_completion_tokens":` + itoa(maxTokens) + `,"messages":[{"role":"user","content":"hi"}]}`
	}
	rec := serve(t, srv, "/v1/chat/completions", body)
	type choice struct {
		Message      struct{ Content string }
		Delta        struct{ Content string }
		FinishReason *string `json:"finish_reason"`
	}
	type completion struct {
		Choices []choice
		Usage   *struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if !stream {
		var c completion
		if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil || len(c.Choices) != 1 || c.Choices[0].FinishReason == nil || c.Usage == nil {
			t.Fatalf("openai JSON %s: %v", rec.Body, err)
		}
		return c.Choices[0].Message.Content, *c.Choices[0].FinishReason, c.Usage.CompletionTokens
	}
	var b strings.Builder
	for _, d := range sseData(rec.Body.String()) {
		if d == "[DONE]" {
			break
		}
		var c completion
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("openai SSE frame %q: %v", d, err)
		}
		for _, ch := range c.Choices {
			b.WriteString(ch.Delta.Content)
			if ch.FinishReason != nil {
				stop = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			tokens = c.Usage.CompletionTokens
		}
	}
	return b.String(), stop, tokens
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func btoa(v bool) string {
	if v {
		return "true"
	}
	return "false"
}
