package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunLengthDefault: mockllm answers end naturally unless the config
// pins output.length: max_tokens.
func TestRunLengthDefault(t *testing.T) {
	pinned := filepath.Join(t.TempDir(), "exact.yaml")
	if err := os.WriteFile(pinned, []byte("output:\n  length: max_tokens\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "end_turn"},
		{[]string{"--config", pinned}, "max_tokens"},
	} {
		url := start(t, append([]string{"--per-token-latency", "0s"}, tc.args...)...)
		body := `{"model":"claude-sonnet-4-5","max_tokens":40,"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("content-type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var msg struct {
			StopReason string `json:"stop_reason"`
			Usage      struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		err = json.NewDecoder(resp.Body).Decode(&msg)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != tc.want {
			t.Errorf("%v: stop_reason = %q after %d tokens, want %s", tc.args, msg.StopReason, msg.Usage.OutputTokens, tc.want)
		}
	}
}
