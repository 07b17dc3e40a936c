package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// responsesClient is a client of the mock's Responses API.
func responsesClient(t *testing.T, base string) *provider.Client {
	hc := &http.Client{Transport: provider.NewTransport(4)}
	t.Cleanup(hc.CloseIdleConnections)
	return &provider.Client{Provider: provider.OpenAIResponses{}, BaseURL: base + "/v1", APIKey: mockKey, HTTP: hc}
}

// TestMockResponses: provider.OpenAIResponses against the real mock over
// loopback: success (JSON and stream, complete and cut at
// max_output_tokens), a 429 with its retry-after and limits, and the
// injected faults, classified as the Chat Completions client classifies
// them.
func TestMockResponses(t *testing.T) {
	t.Run("success", func(t *testing.T) {
		cfg := fastConfig()
		cfg.Output.Tokens = mock.Distribution{Kind: mock.Fixed, Min: 17}
		base := mocktest.Start(t, cfg).URL
		for _, tc := range []struct {
			maxTokens int
			n         int
			stop      string
		}{{40, 17, "completed"}, {16, 16, "max_output_tokens"}} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("max=%d/stream=%v", tc.maxTokens, stream), func(t *testing.T) {
					r := request(stream)
					r.MaxTokens = tc.maxTokens
					resp, o := responsesClient(t, base).Do(context.Background(), r, 0)
					if o.Kind != strategies.Success || o.Status != 200 || o.Err != nil {
						t.Fatalf("Outcome = %v %d %v, want Success 200", o.Kind, o.Status, o.Err)
					}
					if resp.Text != mock.Filler(tc.n) || resp.Usage.OutputTokens != tc.n || resp.Usage.InputTokens != provider.EstimateTokens(r) {
						t.Errorf("Response = %+v; want the filler of %d tokens and input %d", resp, tc.n, provider.EstimateTokens(r))
					}
					if resp.StopReason != tc.stop || resp.ID == "" || resp.RequestID == "" {
						t.Errorf("Response = %+v; want stop reason %s, an id and a request id", resp, tc.stop)
					}
					if stream != (resp.TTFT > 0) {
						t.Errorf("TTFT = %v, want > 0 exactly when streaming", resp.TTFT)
					}
				})
			}
		}
	})
	t.Run("throttled", func(t *testing.T) {
		cfg := fastConfig()
		cfg.Limits.RPM = 1
		cfg.Limits.RetryAfter = 2 * time.Second
		base := mocktest.Start(t, cfg).URL
		if apiErr := secondThrottled(t, responsesClient(t, base)); apiErr != nil && apiErr.Type != "requests" {
			t.Errorf("Err = %#v, want an APIError of type requests", apiErr)
		}
	})
	for _, tt := range []struct {
		name     string
		faults   mock.Faults
		stream   bool
		kind     strategies.Kind
		status   int
		wantErr  error
		wantType string
	}{
		{"overloaded", mock.Faults{Overloaded: 1}, false, strategies.Overloaded, 503, nil, "server_error"},
		{"500", mock.Faults{Error500: 1}, false, strategies.Failed, 500, nil, "server_error"},
		{"cut stream", mock.Faults{CutStream: 1}, true, strategies.Failed, 200, provider.ErrIncompleteStream, ""},
		{"stream error", mock.Faults{StreamError: 1}, true, strategies.Failed, 200, nil, "server_error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.Faults = tt.faults
			_, o := responsesClient(t, mocktest.Start(t, cfg).URL).Do(context.Background(), request(tt.stream), 0)
			if o.Kind != tt.kind || o.Status != tt.status {
				t.Errorf("Outcome = %v %d (%v), want %v %d", o.Kind, o.Status, o.Err, tt.kind, tt.status)
			}
			if tt.wantErr != nil && !errors.Is(o.Err, tt.wantErr) {
				t.Errorf("Err = %v, want %v", o.Err, tt.wantErr)
			}
			if _, typ, _ := provider.Describe(o); tt.wantType != "" && typ != tt.wantType {
				t.Errorf("Describe type = %q (%v), want %q", typ, o.Err, tt.wantType)
			}
		})
	}
}
