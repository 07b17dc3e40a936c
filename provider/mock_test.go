package provider_test

// Round-trips against ratelab's real mock over HTTP on loopback. The test
// package is external: the provider package itself shares no code with the
// mock, so the client and the server stay honest about the wire.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

const mockKey = "sk-mock-roundtrip-key"

func mockClient(t *testing.T, p provider.Provider, base string) *provider.Client {
	if p.Name() == "openai" {
		base += "/v1"
	}
	hc := &http.Client{Transport: provider.NewTransport(4)}
	t.Cleanup(hc.CloseIdleConnections)
	return &provider.Client{Provider: p, BaseURL: base, APIKey: mockKey, HTTP: hc}
}

func fastConfig() mock.Config {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = 0
	cfg.APIKeys = []string{mockKey}
	cfg.Models = mock.Models{Any: true} // testRequest names model "m" for both providers
	return cfg
}

func request(stream bool) provider.Request {
	return provider.Request{Model: "m", MaxTokens: 20, Stream: stream, System: "Be terse.",
		Messages: []provider.Message{{Role: "user", Content: "Say hello to the round trip"}}}
}

func eachProvider(t *testing.T, f func(t *testing.T, p provider.Provider, stream bool)) {
	for _, p := range []provider.Provider{provider.Anthropic{}, provider.OpenAI{}} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", p.Name(), stream), func(t *testing.T) { f(t, p, stream) })
		}
	}
}

func TestMockSuccess(t *testing.T) {
	base := mocktest.Start(t, fastConfig()).URL
	eachProvider(t, func(t *testing.T, p provider.Provider, stream bool) {
		c := mockClient(t, p, base)
		r := request(stream)
		resp, o := c.Do(context.Background(), r, 0)
		if o.Kind != strategies.Success || o.Status != 200 || o.Err != nil {
			t.Fatalf("Outcome = %v %d %v, want Success 200", o.Kind, o.Status, o.Err)
		}
		if resp.Text != mock.Filler(20) || resp.Usage.OutputTokens != 20 || resp.Usage.InputTokens != provider.EstimateTokens(r) {
			t.Errorf("Response = %+v; want the filler of 20 tokens and input %d", resp, provider.EstimateTokens(r))
		}
		if resp.ID == "" || resp.RequestID == "" || resp.StopReason == "" {
			t.Errorf("Response = %+v; want an id, a request id and a stop reason", resp)
		}
		if stream != (resp.TTFT > 0) {
			t.Errorf("TTFT = %v, want > 0 exactly when streaming", resp.TTFT)
		}
		if o.Usage != resp.Usage {
			t.Errorf("Outcome.Usage = %+v, want %+v", o.Usage, resp.Usage)
		}
	})
}

func TestMockThrottled(t *testing.T) {
	cfg := fastConfig()
	cfg.Limits.RPM = 1
	cfg.Limits.RetryAfter = 2 * time.Second
	base := mocktest.Start(t, cfg).URL
	for _, p := range []provider.Provider{provider.Anthropic{}, provider.OpenAI{}} {
		t.Run(p.Name(), func(t *testing.T) {
			c := mockClient(t, p, base)
			c.APIKey = mockKey // the same key: the second call is over 1 RPM
			if apiErr := secondThrottled(t, c); apiErr != nil && apiErr.Status != 429 {
				t.Errorf("Err = %#v, want an APIError of status 429", apiErr)
			}
		})
	}
}

// secondThrottled makes two calls with c against a mock of rpm 1 and a
// retry-after of 2 s, and checks that the second is Throttled: a 429 with
// that retry-after, the requests limit with its reset, and an APIError with
// a message, which it returns (nil when there is none).
func secondThrottled(t *testing.T, c *provider.Client) *provider.APIError {
	t.Helper()
	var o strategies.Outcome
	for range 2 {
		_, o = c.Do(context.Background(), request(false), 0)
	}
	if o.Kind != strategies.Throttled || o.Status != 429 || !o.HasRetryAfter || o.RetryAfter != 2*time.Second {
		t.Errorf("second call: %v %d retry-after %v/%v (%v); want Throttled 429 with 2s", o.Kind, o.Status, o.RetryAfter, o.HasRetryAfter, o.Err)
	}
	if o.Limits.Requests.Limit != 1 || o.Limits.Requests.Reset.IsZero() {
		t.Errorf("Limits.Requests = %+v, want limit 1 with a reset", o.Limits.Requests)
	}
	var apiErr *provider.APIError
	if !errors.As(o.Err, &apiErr) || apiErr.Message == "" {
		t.Errorf("Err = %#v, want an APIError with a message", o.Err)
		return nil
	}
	return apiErr
}

func TestMockFaults(t *testing.T) {
	tests := []struct {
		name      string
		faults    mock.Faults
		stream    bool
		anthropic strategies.Kind
		status    func(p provider.Provider) int
		wantErr   error
		wantType  string
	}{
		{name: "overloaded", faults: mock.Faults{Overloaded: 1}, anthropic: strategies.Overloaded,
			status: func(p provider.Provider) int { return map[string]int{"anthropic": 529, "openai": 503}[p.Name()] }},
		{name: "500", faults: mock.Faults{Error500: 1}, anthropic: strategies.Failed,
			status: func(provider.Provider) int { return 500 }},
		{name: "reset", faults: mock.Faults{Reset: 1}, anthropic: strategies.Failed,
			status: func(provider.Provider) int { return 0 }, wantType: "connection_error"},
		{name: "cut stream", faults: mock.Faults{CutStream: 1}, stream: true, anthropic: strategies.Failed,
			status: func(provider.Provider) int { return 200 }, wantErr: provider.ErrIncompleteStream},
		{name: "stream error", faults: mock.Faults{StreamError: 1}, stream: true, anthropic: strategies.Failed,
			status: func(provider.Provider) int { return 200 }, wantType: "overloaded_error"},
	}
	for _, tt := range tests {
		cfg := fastConfig()
		cfg.Faults = tt.faults
		base := mocktest.Start(t, cfg).URL
		for _, p := range []provider.Provider{provider.Anthropic{}, provider.OpenAI{}} {
			t.Run(tt.name+"/"+p.Name(), func(t *testing.T) {
				_, o := mockClient(t, p, base).Do(context.Background(), request(tt.stream), 0)
				if o.Kind != tt.anthropic || o.Status != tt.status(p) {
					t.Errorf("Outcome = %v %d (%v), want %v %d", o.Kind, o.Status, o.Err, tt.anthropic, tt.status(p))
				}
				if tt.wantErr != nil && !errors.Is(o.Err, tt.wantErr) {
					t.Errorf("Err = %v, want %v", o.Err, tt.wantErr)
				}
				wantType := tt.wantType
				if wantType == "overloaded_error" && p.Name() == "openai" {
					wantType = "server_error" // OpenAI has no overloaded type
				}
				if _, typ, _ := provider.Describe(o); wantType != "" && typ != wantType {
					t.Errorf("Describe type = %q (%v), want %q", typ, o.Err, wantType)
				}
			})
		}
	}
}

func TestMockAuthRedacted(t *testing.T) {
	base := mocktest.Start(t, fastConfig()).URL
	for _, p := range []provider.Provider{provider.Anthropic{}, provider.OpenAI{}} {
		c := mockClient(t, p, base)
		c.APIKey = "sk-wrong-key-that-must-not-leak"
		_, o := c.Do(context.Background(), request(false), 0)
		status, typ, msg := provider.Describe(o)
		if o.Kind != strategies.Failed || status != 401 || typ == "" {
			t.Errorf("%s: %v %d %q, want a 401 with a type", p.Name(), o.Kind, status, typ)
		}
		if strings.Contains(msg, c.APIKey) || strings.Contains(o.Err.Error(), c.APIKey) {
			t.Errorf("%s: error %q holds the key", p.Name(), msg)
		}
	}
}
