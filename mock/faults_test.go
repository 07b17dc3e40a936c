package mock

import (
	"bufio"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestInjectedStatuses(t *testing.T) {
	tests := []struct {
		name       string
		faults     Faults
		path, body string
		wantStatus int
		wantBody   string
	}{
		{"500 anthropic", Faults{Error500: 1}, "/v1/messages", anthropicBody(5, false, "hi"), 500, `"type":"api_error"`},
		{"500 openai", Faults{Error500: 1}, "/v1/chat/completions", openaiBody(5, false, false, "hi"), 500, `"type":"server_error"`},
		{"overloaded anthropic", Faults{Overloaded: 1}, "/v1/messages", anthropicBody(5, false, "hi"), 529, `"type":"overloaded_error"`},
		{"overloaded openai", Faults{Overloaded: 1}, "/v1/chat/completions", openaiBody(5, false, false, "hi"), 503, `"code":"overloaded"`},
		{"stream_error without stream", Faults{StreamError: 1}, "/v1/messages", anthropicBody(5, false, "hi"), 529, `"overloaded_error"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Faults = tt.faults
				ts := startServer(t, cfg)
				defer ts.stop()
				r := ts.do(t, "POST", tt.path, tt.body)
				if r.status != tt.wantStatus || !strings.Contains(string(r.body), tt.wantBody) {
					t.Errorf("%d %s, want %d containing %s", r.status, r.body, tt.wantStatus, tt.wantBody)
				}
			})
		})
	}
}

func TestFaultReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Faults.Reset = 1
		ts := startServer(t, cfg)
		defer ts.stop()
		if _, err := ts.send("POST", "/v1/messages", anthropicBody(5, false, "hi")); err == nil {
			t.Error("request succeeded, want a connection error")
		}
		if got := ts.Stats().Faults["reset"]; got != 1 {
			t.Errorf("reset faults = %d, want 1", got)
		}
	})
}

func TestFaultCutStream(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Faults.CutStream = 1
				ts := startServer(t, cfg)
				defer ts.stop()
				r, err := ts.send("POST", "/v1/messages", anthropicBody(10, stream, "hi"))
				if err == nil {
					t.Errorf("read the whole body (%d, %q), want an error", r.status, r.body)
				}
				if stream && strings.Count(string(r.body), "text_delta") != 5 {
					t.Errorf("body before the cut %q, want 5 deltas", r.body)
				}
				// A stream is cut after half its tokens; a JSON response is
				// generated whole and cut in transit.
				want := int64(10)
				if stream {
					want = 5
				}
				if st := ts.Stats(); st.InFlight != 0 || st.OutputTokens != want {
					t.Errorf("after the cut: in flight %d output tokens %d, want 0 and %d", st.InFlight, st.OutputTokens, want)
				}
			})
		})
	}
}

func TestFaultStreamError(t *testing.T) {
	for _, api := range []string{"anthropic", "openai"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Faults.StreamError = 1
				ts := startServer(t, cfg)
				defer ts.stop()
				path, body, wantEnd := "/v1/messages", anthropicBody(10, true, "hi"),
					"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
				if api == "openai" {
					path, body, wantEnd = "/v1/chat/completions", openaiBody(10, true, true, "hi"),
						`data: {"error":{"message":"The server is overloaded. Please try again later.","type":"server_error","param":null,"code":"overloaded"}}`+"\n\n"
				}
				r := ts.do(t, "POST", path, body)
				if r.status != 200 || !strings.HasSuffix(string(r.body), wantEnd) {
					t.Errorf("status %d, body %q; want 200 ending with %q", r.status, r.body, wantEnd)
				}
				deltas := strings.Count(string(r.body), "text_delta") + strings.Count(string(r.body), `"delta":{"content":"`)
				if deltas != 5 {
					t.Errorf("%d deltas before the error, want 5", deltas)
				}
			})
		})
	}
}

func TestFaultSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Faults.Slow = Slow{Rate: 1, Extra: 2 * time.Second}
		ts := startServer(t, cfg)
		defer ts.stop()
		start := time.Now()
		ts.do(t, "POST", "/v1/messages", anthropicBody(10, false, "hi"))
		if got, want := time.Since(start), 2050*time.Millisecond; got != want {
			t.Errorf("slow response took %v, want %v", got, want)
		}
	})
}

func TestScript(t *testing.T) {
	script := []ScriptStep{{Attempts: 2, Status: 529}, {Attempts: 1, Status: 429, RetryAfter: time.Second}}
	tests := []struct {
		name    string
		headers [][]string // per attempt
		want    []int
	}{
		{"X-Stainless-Retry-Count", [][]string{
			{"X-Stainless-Retry-Count", "0"}, {"X-Stainless-Retry-Count", "1"}, {"X-Stainless-Retry-Count", "2"}, {"X-Stainless-Retry-Count", "3"},
		}, []int{529, 529, 429, 200}},
		{"Idempotency-Key", [][]string{
			{"Idempotency-Key", "a"}, {"Idempotency-Key", "a"}, {"Idempotency-Key", "b"}, {"Idempotency-Key", "a"}, {"Idempotency-Key", "a"},
		}, []int{529, 529, 529, 429, 200}},
		{"no header is not scripted", [][]string{nil, nil}, []int{200, 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Faults.Script = script
				ts := startServer(t, cfg)
				defer ts.stop()
				var got []int
				for _, h := range tt.headers {
					r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"), h...)
					got = append(got, r.status)
					if r.status == 429 && r.header.Get("Retry-After") != "1" {
						t.Errorf("scripted 429: retry-after %q, want 1", r.header.Get("Retry-After"))
					}
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("statuses %v, want %v", got, tt.want)
				}
			})
		})
	}
}

// TestSeededDeterminism checks that jitter, output lengths and fault draws
// are the same for the same seed, and stay within their bounds.
func TestSeededDeterminism(t *testing.T) {
	run := func(seed int64) (durations []time.Duration, lengths []int, statuses []int) {
		synctest.Test(t, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Seed = seed
			cfg.Latency.Jitter = 0.2
			cfg.Output.Tokens = Distribution{Kind: Uniform, Min: 20, Max: 80}
			cfg.Faults.Error500 = 0.3
			ts := startServer(t, cfg)
			defer ts.stop()
			for range 20 {
				start := time.Now()
				r := ts.do(t, "POST", "/v1/messages", anthropicBody(70, false, "hi"))
				statuses = append(statuses, r.status)
				if r.status != 200 {
					continue
				}
				d := time.Since(start)
				n := int(r.json(t)["usage"].(map[string]any)["output_tokens"].(float64))
				durations, lengths = append(durations, d), append(lengths, n)
				nominal := time.Duration(n) * 5 * time.Millisecond
				if d < nominal*8/10 || d > nominal*12/10 {
					t.Errorf("%d tokens took %v, want within ±20%% of %v", n, d, nominal)
				}
				if n < 20 || n > 70 {
					t.Errorf("output tokens %d, want in [20, 70]", n)
				}
				if sr := r.json(t)["stop_reason"]; (n == 70) != (sr == "max_tokens") {
					t.Errorf("%d tokens: stop_reason %v", n, sr)
				}
			}
		})
		return
	}
	d1, l1, s1 := run(1)
	d2, l2, s2 := run(1)
	_, l3, _ := run(2)
	if !slices.Equal(l1, l2) || !slices.Equal(s1, s2) || len(d1) != len(d2) {
		t.Errorf("same seed, different runs: lengths %v vs %v, statuses %v vs %v", l1, l2, s1, s2)
	}
	for i := range d1 {
		if d1[i] != d2[i] {
			t.Errorf("same seed: duration %d is %v then %v", i, d1[i], d2[i])
		}
	}
	if slices.Equal(l1, l3) {
		t.Errorf("seeds 1 and 2 drew the same lengths %v", l1)
	}
	n500 := 0
	for _, s := range s1 {
		if s == 500 {
			n500++
		}
	}
	if n500 == 0 || n500 == 20 {
		t.Errorf("%d of 20 attempts got 500 at rate 0.3", n500)
	}
}

// TestOutputEndTurn checks the stop reasons of an output shorter than
// max_tokens, in both formats and both modes.
func TestOutputEndTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Output.Tokens = Distribution{Kind: Fixed, Min: 3}
		ts := startServer(t, cfg)
		defer ts.stop()
		checks := []struct {
			path, body, want string
		}{
			{"/v1/messages", anthropicBody(10, false, "hi"), `"stop_reason":"end_turn"`},
			{"/v1/messages", anthropicBody(10, true, "hi"), `"stop_reason":"end_turn"`},
			{"/v1/messages", anthropicBody(2, false, "hi"), `"stop_reason":"max_tokens"`},
			{"/v1/chat/completions", openaiBody(10, false, false, "hi"), `"finish_reason":"stop"`},
			{"/v1/chat/completions", openaiBody(10, true, false, "hi"), `"finish_reason":"stop"`},
			{"/v1/chat/completions", openaiBody(2, false, false, "hi"), `"finish_reason":"length"`},
		}
		for _, c := range checks {
			if r := ts.do(t, "POST", c.path, c.body); !strings.Contains(string(r.body), c.want) {
				t.Errorf("%s %s: body %s, want %s", c.path, c.body, r.body, c.want)
			}
		}
	})
}

// TestClientGoneReleases checks that a client that hangs up mid-stream
// frees its slot and settles the tokens produced so far.
func TestClientGoneReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Limits.MaxConcurrent = 1
		cfg.Limits.OTPM = 1000
		ts := startServer(t, cfg)
		defer ts.stop()
		req, _ := http.NewRequest("POST", "http://mock/v1/messages", strings.NewReader(anthropicBody(100, true, "hi")))
		setHeaders(req, nil)
		resp, err := ts.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		for range 3 * 4 { // message_start, content_block_start, ping, then deltas
			br.ReadString('\n')
		}
		time.Sleep(52 * time.Millisecond)
		resp.Body.Close()
		synctest.Wait()
		st := ts.Stats()
		if st.InFlight != 0 || st.OutputTokens < 1 || st.OutputTokens > 15 {
			t.Errorf("after hang-up: in flight %d, output tokens %d; want 0 and a handful", st.InFlight, st.OutputTokens)
		}
		if r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi")); r.status != 200 {
			t.Errorf("next request: %d, want 200 (the slot is free)", r.status)
		}
	})
}
