package mock

import (
	"encoding/json"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// cachedBody is a Messages request whose system prompt is sys tokens of
// filler in one text block marked with cache_control (ttl "" is the
// default 5 minutes), followed by the user's question.
func cachedBody(sys int, ttl, question string) string {
	cc := map[string]any{"type": "ephemeral"}
	if ttl != "" {
		cc["ttl"] = ttl
	}
	b, _ := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 10,
		"system":   []map[string]any{{"type": "text", "text": Filler(sys), "cache_control": cc}},
		"messages": []map[string]any{{"role": "user", "content": question}},
	})
	return string(b)
}

type usage struct {
	input, creation, read, cached int
}

func usageOf(t *testing.T, r reply) usage {
	t.Helper()
	var m struct {
		Usage struct {
			InputTokens         int `json:"input_tokens"`
			CacheCreation       int `json:"cache_creation_input_tokens"`
			CacheRead           int `json:"cache_read_input_tokens"`
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil || r.status != 200 {
		t.Fatalf("status %d body %s: %v", r.status, r.body, err)
	}
	u := m.Usage
	return usage{input: u.InputTokens + u.PromptTokens, creation: u.CacheCreation, read: u.CacheRead, cached: u.PromptTokensDetails.CachedTokens}
}

// TestAnthropicPromptCacheTTL replays one key's requests at named virtual
// instants: the first writes the 2,000-token system prompt, reads within
// the TTL hit it and refresh it (the TTL runs from each use's first token,
// 3 ms after a read is sent), and a read after the TTL writes it again;
// "ttl": "1h" keeps it an hour. A read adds nothing to the time to first
// token (ttft_per_input_token 1ms: the 1-token question alone, 1 ms).
func TestAnthropicPromptCacheTTL(t *testing.T) {
	const sys = 2000
	write := usage{input: 1, creation: sys}
	read := usage{input: 1, read: sys}
	for _, tc := range []struct {
		ttl   string
		steps []struct {
			at   time.Duration
			want usage
		}
	}{
		{"", []struct {
			at   time.Duration
			want usage
		}{
			{0, write},
			{time.Minute, read},
			{5*time.Minute + 59*time.Second, read}, // 4m59s after the read that refreshed it
			{10*time.Minute + 59*time.Second + 3*time.Millisecond, write}, // 5m0s after the last read's first token: expired
			{11 * time.Minute, read},
		}},
		{"1h", []struct {
			at   time.Duration
			want usage
		}{
			{0, write},
			{59 * time.Minute, read},
			{2*time.Hour - time.Minute + 3*time.Millisecond, write}, // an hour after the last read's first token
			{2 * time.Hour, read},
		}},
	} {
		t.Run("ttl="+tc.ttl, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Latency = Latency{TTFTPerInputToken: time.Millisecond}
				ts := startServer(t, cfg)
				defer ts.stop()
				start := time.Now()
				for i, s := range tc.steps {
					time.Sleep(s.at - time.Since(start))
					sent := time.Now()
					r := ts.do(t, "POST", "/v1/messages", cachedBody(sys, tc.ttl, fmt.Sprintf("question %d?", i)))
					took := time.Since(sent)
					got := usageOf(t, r)
					got.input-- // "question N?" is 3 tokens: 2 more than the 1 of the tables
					got.input--
					if got != s.want {
						t.Errorf("step %d at %v: usage %+v, want %+v", i, s.at, got, s.want)
					}
					wantTook := time.Duration(sys+3) * time.Millisecond
					if s.want.read > 0 {
						wantTook = 3 * time.Millisecond
					}
					if took != wantTook {
						t.Errorf("step %d at %v: took %v, want %v (cached input adds no ttft_per_input_token)", i, s.at, took, wantTook)
					}
				}
			})
		})
	}
}

// TestAnthropicPromptCacheITPM: cache reads do not count toward itpm (the
// current models' rule), so at itpm 3,000 a 2,000-token cached system
// prompt admits a second request at once; with reads_count_itpm (the older
// models') the second is throttled. A prompt below min_tokens is never
// cached.
func TestAnthropicPromptCacheITPM(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cache  Cache
		sys    int
		want   string
		second usage
	}{
		{"reads free", Cache{}, 2000, "[200 200]", usage{input: 3, read: 2000}},
		{"reads count", Cache{ReadsCountITPM: true}, 2000, "[200 429]", usage{}},
		{"below min_tokens", Cache{}, 1000, "[200 200]", usage{input: 1003}},
		{"off", Cache{Off: true}, 2000, "[200 429]", usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Latency.PerToken = 0
				cfg.Limits.ITPM = 3000
				cfg.Cache = tc.cache
				ts := startServer(t, cfg)
				defer ts.stop()
				var got []int
				var last reply
				for i := range 2 {
					last = ts.do(t, "POST", "/v1/messages", cachedBody(tc.sys, "", fmt.Sprintf("question %d?", i)))
					got = append(got, last.status)
				}
				if fmt.Sprint(got) != tc.want {
					t.Fatalf("statuses = %v, want %s", got, tc.want)
				}
				if last.status == 200 {
					if u := usageOf(t, last); u != tc.second {
						t.Errorf("second request's usage = %+v, want %+v", u, tc.second)
					}
				}
			})
		})
	}
}

// TestOpenAIPromptCache: a repeated prefix of at least 1,024 tokens is
// reported as cached_tokens, in steps of 128 from 1,024; a shorter prompt
// never is; tpm still charges the whole prompt.
func TestOpenAIPromptCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		ts := startServer(t, cfg)
		defer ts.stop()
		body := func(sys int, q string) string {
			b, _ := json.Marshal(map[string]any{
				"model": "gpt-4o-mini", "max_completion_tokens": 10,
				"messages": []map[string]any{{"role": "system", "content": Filler(sys)}, {"role": "user", "content": q}},
			})
			return string(b)
		}
		steps := []struct {
			sys  int
			q    string
			want usage
		}{
			{1500, "first?", usage{input: 1502}},
			{1500, "second?", usage{input: 1502, cached: 1408}}, // 1,500 rounded down to 1,024 + 3×128
			{1500, "second?", usage{input: 1502, cached: 1408}}, // the whole prompt is cached, but steps of 128
			{1000, "first?", usage{input: 1002}},
			{1000, "second?", usage{input: 1002}}, // below 1,024: never cached
		}
		for i, s := range steps {
			if got := usageOf(t, ts.do(t, "POST", "/v1/chat/completions", body(s.sys, s.q))); got != s.want {
				t.Errorf("step %d: usage %+v, want %+v", i, got, s.want)
			}
		}
	})
}

// A prefix written by a request can be read once that response's first
// token is due, not before: requests sent together all write it.
func TestPromptCacheReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency = Latency{TTFTPerInputToken: time.Millisecond}
		ts := startServer(t, cfg)
		defer ts.stop()
		rs := fanOut(t, 3, 0, func(i int) (reply, error) {
			return ts.send("POST", "/v1/messages", cachedBody(2000, "", "question?"), "Anthropic-Version", "2023-06-01")
		})
		for i, r := range rs {
			if u := usageOf(t, r); u.creation != 2000 || u.read != 0 {
				t.Errorf("concurrent request %d: usage %+v, want all three writing 2000", i, u)
			}
		}
		time.Sleep(time.Second)
		if u := usageOf(t, ts.do(t, "POST", "/v1/messages", cachedBody(2000, "", "question?"))); u.read != 2000 {
			t.Errorf("after the writes: usage %+v, want 2000 read", u)
		}
	})
}
