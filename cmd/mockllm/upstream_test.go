package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/record"
)

// mockllm --upstream URL --record FILE forwards to URL and records each
// call; stopping it leaves the recording whole.
func TestUpstreamRecords(t *testing.T) {
	upstream := start(t, "--per-token-latency", "1ms")
	file := filepath.Join(t.TempDir(), "rec.jsonl")
	var answer struct {
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		}
	}
	t.Run("proxy", func(t *testing.T) {
		url := start(t, "--upstream", upstream, "--record", file)
		req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(`{"model":"claude-haiku-4-5","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || json.Unmarshal(body, &answer) != nil || answer.Usage.OutputTokens == 0 {
			t.Fatalf("through the proxy: %d %s", resp.StatusCode, body)
		}
	}) // the proxy has stopped: its cleanup ran
	rec, err := record.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Header.Source != "mockllm proxy" || len(rec.Attempts) != 1 || rec.Attempts[0].Status != 200 || rec.Attempts[0].Usage == nil || rec.Attempts[0].Usage.OutputTokens != answer.Usage.OutputTokens {
		t.Fatalf("recording %+v", rec)
	}
}

func TestUpstreamFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "http://127.0.0.1:1"}, "--upstream needs --record FILE"},
		{[]string{"--record", "x.jsonl"}, "give --upstream URL too"},
		{[]string{"--upstream", "127.0.0.1:1", "--record", filepath.Join(t.TempDir(), "r.jsonl")}, "--upstream: want an http:// or https:// URL"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
