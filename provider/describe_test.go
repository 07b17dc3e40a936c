package provider

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ratelab/ratelab/strategies"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		name       string
		o          strategies.Outcome
		wantStatus int
		wantType   string
		wantMsg    string
	}{
		{"success", strategies.Outcome{Kind: strategies.Success, Status: 200}, 0, "", ""},
		{"api error", strategies.Outcome{Kind: strategies.Throttled, Status: 429, Err: &APIError{Status: 429, Type: "rate_limit_error", Message: "slow down"}}, 429, "rate_limit_error", "slow down"},
		{"api error bare", strategies.Outcome{Kind: strategies.Failed, Status: 502, Err: &APIError{Status: 502}}, 502, "http_502", "Bad Gateway"},
		{"mid-stream", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: &APIError{Status: 200, Type: "overloaded_error", Message: "Overloaded"}}, 200, "overloaded_error", "Overloaded"},
		{"connection", strategies.Outcome{Kind: strategies.Failed, Err: errors.New("dial tcp: refused")}, 0, "connection_error", "dial tcp: refused"},
		{"cut", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: ErrIncompleteStream}, 200, "incomplete_stream", ErrIncompleteStream.Error()},
		{"invalid", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: fmt.Errorf("%w: x", ErrInvalidResponse)}, 200, "invalid_response", "provider: invalid response body: x"},
		{"canceled", strategies.Outcome{Kind: strategies.Canceled, Err: context.Canceled}, 0, "canceled", "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, typ, msg := Describe(tt.o)
			if s != tt.wantStatus || typ != tt.wantType || msg != tt.wantMsg {
				t.Errorf("Describe = %d, %q, %q; want %d, %q, %q", s, typ, msg, tt.wantStatus, tt.wantType, tt.wantMsg)
			}
		})
	}
}
