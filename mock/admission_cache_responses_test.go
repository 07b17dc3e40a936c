package mock

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestResponsesPromptCache replays one key's Responses API requests in
// virtual time: OpenAI's automatic cache, as for chat completions, reports
// a repeated prefix of 1,024 tokens or more in
// usage.input_tokens_details.cached_tokens (in steps of 128), streamed or
// not; the instructions are a prefix of their own, so a request sending
// them with another input reads them; cached input adds no
// ttft_per_input_token (1 ms here), and still counts toward tpm.
func TestResponsesPromptCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Latency.TTFTPerInputToken = time.Millisecond
		cfg.Limits.TPM = 100000
		ts := startServer(t, cfg)
		defer ts.stop()
		body := func(instr int, input string, stream bool) string {
			m := map[string]any{"model": "gpt-5-mini", "max_output_tokens": 16, "input": json.RawMessage(input), "stream": stream}
			if instr > 0 {
				m["instructions"] = Filler(instr)
			}
			b, _ := json.Marshal(m)
			return string(b)
		}
		type usage struct{ input, cached int }
		read := func(r reply) usage {
			t.Helper()
			var m struct {
				Usage struct {
					InputTokens        int `json:"input_tokens"`
					InputTokensDetails struct {
						CachedTokens int `json:"cached_tokens"`
					} `json:"input_tokens_details"`
				} `json:"usage"`
			}
			b := r.body
			if r.status == 200 && strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				// The terminal event's response carries the usage.
				var last string
				for _, line := range strings.Split(string(b), "\n") {
					if d, ok := strings.CutPrefix(line, "data: "); ok {
						last = d
					}
				}
				var ev struct{ Response json.RawMessage }
				if err := json.Unmarshal([]byte(last), &ev); err != nil {
					t.Fatalf("last event %s: %v", last, err)
				}
				b = ev.Response
			}
			if err := json.Unmarshal(b, &m); err != nil || r.status != 200 {
				t.Fatalf("status %d body %s: %v", r.status, r.body, err)
			}
			return usage{m.Usage.InputTokens, m.Usage.InputTokensDetails.CachedTokens}
		}
		steps := []struct {
			instr  int
			input  string
			stream bool
			want   usage
			took   time.Duration
		}{
			{1500, `"first?"`, false, usage{1502, 0}, 1502 * time.Millisecond},
			{1500, `"second?"`, false, usage{1502, 1408}, 94 * time.Millisecond}, // 1,500 rounded down to 1,024 + 3×128
			{1500, `"second?"`, true, usage{1502, 1408}, 94 * time.Millisecond},
			{1500, `[{"role":"user","content":"an item?"}]`, false, usage{1502, 1408}, 94 * time.Millisecond},
			{1000, `"first?"`, false, usage{1002, 0}, 1002 * time.Millisecond},
			{1000, `"second?"`, false, usage{1002, 0}, 1002 * time.Millisecond}, // below 1,024: never cached
		}
		for i, s := range steps {
			start := time.Now()
			r := ts.do(t, "POST", "/v1/responses", body(s.instr, s.input, s.stream))
			if got := read(r); got != s.want {
				t.Errorf("step %d: usage %+v, want %+v", i, got, s.want)
			}
			if took := time.Since(start); took != s.took {
				t.Errorf("step %d: took %v, want %v", i, took, s.took)
			}
		}
	})
}

// TestResponsesPromptCacheTPM: cached input still counts toward tpm, as
// OpenAI documents. At tpm 4,000 with no latency, a write and a read of a
// 1,502-token prompt use 3,004, so a third is refused although 1,408 of
// each later prompt is a cache read.
func TestResponsesPromptCacheTPM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits.TPM = 4000
		ts := startServer(t, cfg)
		defer ts.stop()
		b, _ := json.Marshal(map[string]any{"model": "gpt-5-mini", "instructions": Filler(1500), "input": "again?"})
		var got []string
		for range 3 {
			r := ts.do(t, "POST", "/v1/responses", string(b))
			var m struct {
				Usage *struct {
					InputTokensDetails struct {
						CachedTokens int `json:"cached_tokens"`
					} `json:"input_tokens_details"`
				} `json:"usage"`
			}
			_ = json.Unmarshal(r.body, &m)
			cached := "none"
			if m.Usage != nil {
				cached = fmt.Sprint(m.Usage.InputTokensDetails.CachedTokens)
			}
			got = append(got, fmt.Sprintf("%d cached %s", r.status, cached))
		}
		if want := "[200 cached 0 200 cached 1408 429 cached none]"; fmt.Sprint(got) != want {
			t.Errorf("replies %v, want %s", got, want)
		}
	})
}
