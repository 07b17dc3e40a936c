package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// mockllm --upstream URL --record FILE --max-concurrent 2 --rpm 3 answers
// the requests over its own limits with the mock's 429s and forwards the
// rest: exact counts in real time (each call holds its slot for a second).
func TestUpstreamLimited(t *testing.T) {
	upstream := start(t, "--per-token-latency", "20ms")
	file := filepath.Join(t.TempDir(), "rec.jsonl")
	var statuses []int
	var rpm429 http.Header
	t.Run("proxy", func(t *testing.T) {
		url := start(t, "--upstream", upstream, "--record", file, "--max-concurrent", "2", "--rpm", "3")
		post := func() (int, http.Header) {
			req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(`{"model":"claude-haiku-4-5","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("anthropic-version", "2023-06-01")
			req.Header.Set("x-api-key", "sk-user") // the upstream's to judge
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return 0, nil
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, resp.Header
		}
		got := make([]int, 6)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() { got[i], _ = post() })
		}
		wg.Wait()
		statuses = got
		s, _ := post() // the third of rpm 3
		statuses = append(statuses, s)
		s, rpm429 = post() // the fourth: refused by rpm
		statuses = append(statuses, s)
	})
	ok := 0
	for _, s := range statuses {
		if s == 200 {
			ok++
		} else if s != 429 {
			t.Errorf("status %d, want 200 or 429", s)
		}
	}
	if ok != 3 || statuses[6] != 200 || statuses[7] != 429 {
		t.Fatalf("statuses %v: want 2 of the 6 concurrent admitted (max_concurrent 2), the next admitted, the last refused by rpm 3", statuses)
	}
	if ra := rpm429.Get("Retry-After"); ra == "" || rpm429.Get("Anthropic-Ratelimit-Requests-Remaining") != "0" || rpm429.Get("Anthropic-Ratelimit-Requests-Limit") != "3" {
		t.Errorf("the rpm 429's headers %v: want retry-after and the requests limit 3, 0 remaining", rpm429)
	}
	rec, err := record.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Attempts) != 3 {
		t.Fatalf("%d recorded, want the 3 forwarded", len(rec.Attempts))
	}
	for _, a := range rec.Attempts {
		if a.Status != 200 || a.Usage == nil || a.Usage.OutputTokens == 0 {
			t.Errorf("recorded %+v", a)
		}
	}
}

func TestUpstreamFlagErrors(t *testing.T) {
	cut := filepath.Join(t.TempDir(), "cut.yaml")
	os.WriteFile(cut, []byte("faults: {cut_stream: 0.1}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "http://127.0.0.1:1"}, "--upstream needs --record FILE"},
		{[]string{"--record", "x.jsonl"}, "give --upstream URL too"},
		{[]string{"--upstream", "127.0.0.1:1", "--record", filepath.Join(t.TempDir(), "r.jsonl")}, "--upstream: want an http:// or https:// URL"},
		{[]string{"--upstream", "http://127.0.0.1:1", "--record", filepath.Join(t.TempDir(), "r.jsonl"), "--config", cut}, "--upstream: faults.cut_stream acts on the mock's own responses"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
