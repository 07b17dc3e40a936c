package recordproxy_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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

// TestProxyForwarding: what New's doc says of a request and its answer.
// The path goes under the upstream's prefix and the query after its own;
// the Host is the upstream's; the client's X-Forwarded-For does not go on
// and none is added; a path that is no model call is forwarded and
// recorded (no provider); an upstream that cannot be reached is a 502
// with no body and a line with status 0 and error type transport.
func TestProxyForwarding(t *testing.T) {
	var seen *http.Request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		w.Write([]byte(`{"data":[]}`))
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/prefix?tenant=a")
	var buf bytes.Buffer
	w, _ := record.NewWriter(&buf, record.Header{Source: "mockllm proxy"})
	px := httptest.NewServer(recordproxy.New(u, w, nil))
	defer px.Close()
	req, _ := http.NewRequest("GET", px.URL+"/v1/models?limit=5", nil)
	req.Header.Set("X-Forwarded-For", "10.1.2.3")
	req.Header.Set("X-Api-Key", "sk-fwd")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"data":[]}` {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if seen.URL.Path != "/prefix/v1/models" || seen.URL.RawQuery != "tenant=a&limit=5" || seen.Host != u.Host ||
		seen.Header.Get("X-Api-Key") != "sk-fwd" || seen.Header.Values("X-Forwarded-For") != nil {
		t.Errorf("the upstream saw %s %s?%s, Host %s, headers %v", seen.Method, seen.URL.Path, seen.URL.RawQuery, seen.Host, seen.Header)
	}

	down := httptest.NewServer(http.NotFoundHandler())
	d, _ := url.Parse(down.URL)
	down.Close() // nothing listens there now
	dpx := httptest.NewServer(recordproxy.New(d, w, nil))
	defer dpx.Close()
	resp, err = http.Post(dpx.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"claude-haiku-4-5","max_tokens":5}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || len(body) != 0 {
		t.Errorf("an unreachable upstream: %d %q, want 502 and no body", resp.StatusCode, body)
	}

	f, err := record.Parse(&buf, "proxy.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Attempts) != 2 {
		t.Fatalf("%d lines, want 2: %+v", len(f.Attempts), f.Attempts)
	}
	if a := f.Attempts[0]; a.Provider != "" || a.Path != "/prefix/v1/models" || a.Status != 200 || a.Key != record.KeyLabel("sk-fwd") || a.Run != "proxy" {
		t.Errorf("the models call's line %+v", a)
	}
	if a := f.Attempts[1]; a.Provider != "anthropic" || a.Status != 0 || a.ErrorType != "transport" || a.MaxTokens != 5 {
		t.Errorf("the unreachable upstream's line %+v", a)
	}
}
