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

// TestAllowFromRoutes checks that a 405's Allow header lists the methods the
// router has for the path, on every kind of route.
func TestAllowFromRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, DefaultConfig())
		defer ts.stop()
		for _, c := range []struct{ method, path, allow string }{
			{"GET", "/v1/messages", "POST"},
			{"GET", "/v1/messages/count_tokens", "POST"},
			{"GET", "/v1/chat/completions", "POST"},
			{"GET", "/v1/responses", "POST"},
			{"POST", "/v1/models", "GET"},
			{"DELETE", "/v1/models/claude-sonnet-4-5", "GET"},
			{"POST", "/_admin/stats", "GET"},
			{"GET", "/_admin/reset", "POST"},
			{"POST", "/_admin/limits", "GET, PUT"},
			{"DELETE", "/_admin/latency", "GET, PUT"},
			{"PATCH", "/_admin/faults", "GET, PUT"},
			{"POST", "/metrics", "GET"},
			{"POST", "/healthz", "GET, HEAD"},
			{"PUT", "/readyz", "GET, HEAD"},
		} {
			r := ts.do(t, c.method, c.path, "")
			if r.status != 405 || r.header.Get("Allow") != c.allow {
				t.Errorf("%s %s = %d, Allow %q; want 405, Allow %q", c.method, c.path, r.status, r.header.Get("Allow"), c.allow)
			}
		}
	})
}
