package mock_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
)

// The 429's own words and headers, seen by a client.

// TestConcurrencyMessage: the 429 for a concurrency cap says how many
// requests the key may have, in the singular when it is one.
func TestConcurrencyMessage(t *testing.T) {
	for _, tc := range []struct {
		limit int
		want  string
	}{
		{1, "this API key may have 1 request at a time"},
		{2, "this API key may have 2 concurrent requests"},
	} {
		synctest.Test(t, func(t *testing.T) {
			h := startMock(t, fmt.Sprintf("latency: {per_token: 10ms}\nlimits: {max_concurrent: %d}\n", tc.limit))
			var held []<-chan int
			for range tc.limit {
				held = append(held, h.block(t, 100))
			}
			status, _, b := h.post(t, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"Hi"}]}`,
				"anthropic-version", "2023-06-01", "x-api-key", sdkKey)
			if status != http.StatusTooManyRequests || !strings.Contains(string(b), tc.want) {
				t.Errorf("limit %d: %d %s, want 429 saying %q", tc.limit, status, b, tc.want)
			}
			for _, c := range held {
				<-c
			}
		})
	}
}

// TestRetryAfterRoundsUp: a configured retry_after below a second goes out
// as retry-after: 1, not 0 (which tells a client to retry at once).
func TestRetryAfterRoundsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, "limits: {max_concurrent: 1, retry_after: 200ms}\nlatency: {per_token: 10ms}\n")
		held := h.block(t, 100)
		status, hdr, b := h.post(t, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"Hi"}]}`,
			"anthropic-version", "2023-06-01", "x-api-key", sdkKey)
		if status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" {
			t.Errorf("%d, retry-after %q (%s); want 429 with retry-after 1", status, hdr.Get("Retry-After"), b)
		}
		<-held
	})
}
