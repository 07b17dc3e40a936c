package mock

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestAnthropicJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, DefaultConfig())
		defer ts.stop()
		start := time.Now()
		r := ts.do(t, "POST", "/v1/messages", anthropicBody(100, false, "Hello, world"))
		if got, want := time.Since(start), 500*time.Millisecond; got != want {
			t.Errorf("elapsed = %v, want %v", got, want)
		}
		if r.status != 200 {
			t.Fatalf("status = %d, want 200; body %s", r.status, r.body)
		}
		m := r.json(t)
		usage := m["usage"].(map[string]any)
		if got := usage["output_tokens"]; got != float64(100) {
			t.Errorf("output_tokens = %v, want 100", got)
		}
		if got := usage["input_tokens"]; got != float64(3) {
			t.Errorf("input_tokens = %v, want 3", got)
		}
		text := m["content"].([]any)[0].(map[string]any)["text"].(string)
		if got := EstimateTokens(text); got != 100 {
			t.Errorf("EstimateTokens(text) = %d, want 100", got)
		}
		if got := m["stop_reason"]; got != "max_tokens" {
			t.Errorf("stop_reason = %v, want max_tokens", got)
		}
		if r.header.Get("request-id") == "" {
			t.Error("no request-id header")
		}
	})
}
