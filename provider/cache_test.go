package provider

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ratelab/ratelab/strategies"
)

// TestDecodeCacheUsage reads the prompt-cache fields of each provider's
// usage, JSON and streamed, into strategies.Usage.
func TestDecodeCacheUsage(t *testing.T) {
	tests := []struct {
		name string
		p    Provider
		resp *http.Response
		want strategies.Usage
	}{
		{
			name: "anthropic json", p: Anthropic{},
			resp: jsonResponse(200, `{"id":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn",`+
				`"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":4800,"output_tokens":7}}`),
			want: strategies.Usage{InputTokens: 12, CacheReadInputTokens: 4800, OutputTokens: 7},
		},
		{
			name: "anthropic stream", p: Anthropic{},
			resp: sseResponse("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":4800,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
			want: strategies.Usage{InputTokens: 12, CacheCreationInputTokens: 4800, OutputTokens: 7},
		},
		{
			name: "openai chat json", p: OpenAI{},
			resp: jsonResponse(200, `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
				`"usage":{"prompt_tokens":2006,"completion_tokens":7,"total_tokens":2013,"prompt_tokens_details":{"cached_tokens":1920}}}`),
			want: strategies.Usage{InputTokens: 2006, CacheReadInputTokens: 1920, OutputTokens: 7},
		},
		{
			name: "openai responses json", p: OpenAIResponses{},
			resp: jsonResponse(200, `{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"ok"}]}],`+
				`"usage":{"input_tokens":2006,"input_tokens_details":{"cached_tokens":1920},"output_tokens":7,"total_tokens":2013}}`),
			want: strategies.Usage{InputTokens: 2006, CacheReadInputTokens: 1920, OutputTokens: 7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, o := tt.p.Decode(tt.resp, time.Now())
			if o.Kind != strategies.Success || o.Usage != tt.want {
				t.Errorf("Outcome %v (%v), usage %+v; want success, %+v", o.Kind, o.Err, o.Usage, tt.want)
			}
		})
	}
}

// TestAnthropicSystemCache checks the system field an Anthropic request
// sends for each SystemCache: a string without one, one text block with
// cache_control with one, and an error for what Anthropic does not accept.
func TestAnthropicSystemCache(t *testing.T) {
	tests := []struct {
		system, cache string
		want          string // the system field's JSON; "" for absent
		err           string
	}{
		{"Be terse.", "", `"Be terse."`, ""},
		{"Be terse.", "5m", `[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral"}}]`, ""},
		{"Be terse.", "1h", `[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral","ttl":"1h"}}]`, ""},
		{"", "", "", ""},
		{"Be terse.", "10m", "", `SystemCache "10m" (want 5m or 1h)`},
		{"", "5m", "", "without a system prompt"},
	}
	for _, tt := range tests {
		r := testRequest(false)
		r.System, r.SystemCache = tt.system, tt.cache
		req, err := Anthropic{}.NewRequest(context.Background(), "http://x", "k", r, 0)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("system %q cache %q: error %v, want one containing %q", tt.system, tt.cache, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(req.Body)
		got := gjson.GetBytes(body, "system").Raw
		if got != tt.want {
			t.Errorf("system %q cache %q: system = %s, want %s", tt.system, tt.cache, got, tt.want)
		}
	}
}

// TestClientLearnsCache is a step table of what a Client expects read from
// the prompt cache (Cost.CachedInputTokens) as responses report the cache
// at named instants: nothing before a response, the prefix once a write is
// reported, for the TTL after the last use, forgotten when a response
// reports no cache, and never for OpenAI, whose limits count cached input.
func TestClientLearnsCache(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	req := Request{Model: "m", System: strings.Repeat("policy ", 600), SystemCache: "5m", MaxTokens: 50,
		Messages: []Message{{Role: "user", Content: "Classify ticket 7."}}}
	other := req
	other.System += "v2"
	hour := req
	hour.SystemCache = "1h"
	noCache := req
	noCache.SystemCache = ""
	success := func(read, write int) *strategies.Outcome {
		return &strategies.Outcome{Kind: strategies.Success, Usage: strategies.Usage{InputTokens: 5, CacheReadInputTokens: read, CacheCreationInputTokens: write, OutputTokens: 50}}
	}
	type step struct {
		at      time.Duration
		r       Request
		learn   *strategies.Outcome // a response to r at this instant; nil: none
		want    int                 // Cost(r).CachedInputTokens before it
		comment string
	}
	run := func(t *testing.T, p Provider, steps []step) {
		c := &Client{Provider: p}
		for i, s := range steps {
			now := t0.Add(s.at)
			cost := c.Cost(s.r)
			if got := min(c.cachedTokens(now, s.r), cost.InputTokens); got != s.want {
				t.Errorf("step %d (%s, %s): cached = %d, want %d", i, s.at, s.comment, got, s.want)
			}
			if s.learn != nil {
				c.learnCache(now, &s.r, s.learn)
			}
		}
	}
	t.Run("anthropic", func(t *testing.T) {
		run(t, Anthropic{}, []step{
			{0, req, success(0, 1050), 0, "first call: nothing known; it writes 1,050"},
			{time.Second, req, success(1050, 0), 1050, "the write is known"},
			{time.Second, other, nil, 0, "another system prompt"},
			{time.Second, hour, nil, 0, "the same prompt with another TTL is another entry"},
			{time.Second, noCache, nil, 0, "no cache_control: nothing is read"},
			{5*time.Minute + time.Second - 1, req, nil, 1050, "just within 5 minutes of the last read"},
			{5*time.Minute + time.Second, req, success(0, 1050), 0, "expired: written again"},
			{6 * time.Minute, req, &strategies.Outcome{Kind: strategies.Throttled}, 1050, "a 429 teaches nothing"},
			{7 * time.Minute, req, success(0, 0), 1050, "the provider reports no cache"},
			{8 * time.Minute, req, nil, 0, "so none is expected"},
			{8 * time.Minute, hour, success(0, 1050), 0, "a 1h entry"},
			{68*time.Minute - 1, hour, nil, 1050, "lives an hour"},
			{68 * time.Minute, hour, nil, 0, "and no longer"},
		})
	})
	t.Run("openai", func(t *testing.T) {
		run(t, OpenAI{}, []step{
			{0, req, success(1024, 0), 0, "OpenAI reports cached_tokens"},
			{time.Second, req, nil, 0, "but its limits count them: none taken out"},
		})
	})
}
