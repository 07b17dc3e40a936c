package recordproxy_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/internal/recordproxy"
	"github.com/ratelab/ratelab/mock"
)

// TestProxyStreamSDK: the official Go SDK streams through the proxy to the
// mock; every delta arrives, and the attempt is recorded with its frames.
func TestProxyStreamSDK(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = 5 * time.Millisecond // one frame per token, unless the mock falls behind
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(srv.Handler())
	defer up.Close()
	u, _ := url.Parse(up.URL)
	var buf bytes.Buffer
	w, _ := record.NewWriter(&buf, record.Header{Source: "mockllm proxy"})
	px := httptest.NewServer(recordproxy.New(u, w, nil))
	defer px.Close()
	c := anthropic.NewClient(option.WithBaseURL(px.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	st := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "claude-haiku-4-5", MaxTokens: 12,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	deltas := 0
	for st.Next() {
		if st.Current().Type == "content_block_delta" {
			deltas++
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	f, err := record.Parse(&buf, "proxy.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Attempts) != 1 {
		t.Fatalf("%d lines, want 1", len(f.Attempts))
	}
	a := f.Attempts[0]
	// The recorder counts the frames as they leave the upstream; the SDK
	// counts them as they reach it through the proxy: equal counts mean
	// none was merged. (A mock that falls behind, under -race, sends
	// overdue tokens in one frame: both sides then see fewer than 12.)
	if deltas != a.Frames || deltas == 0 || a.Status != 200 || !a.Stream || a.Usage == nil || a.Usage.OutputTokens != 12 || a.Provider != "anthropic" {
		t.Fatalf("SDK saw %d deltas; recorded %+v", deltas, a)
	}
}
