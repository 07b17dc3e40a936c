package provider

import (
	"net/http"
	"testing"
	"time"

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
