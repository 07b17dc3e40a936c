package engine

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

func TestKindOf(t *testing.T) {
	apiErr := func(status int, typ string) error { return &provider.APIError{Status: status, Type: typ} }
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		o    strategies.Outcome
		want strategies.Kind
	}{
		{"429", strategies.Outcome{Kind: strategies.Throttled, Status: 429, Err: apiErr(429, "rate_limit_error")}, strategies.Throttled},
		{"429 without a body", strategies.Outcome{Kind: strategies.Throttled, Status: 429, Err: apiErr(429, "")}, strategies.Throttled},
		{"429 insufficient_quota", strategies.Outcome{Kind: strategies.Throttled, Status: 429, Err: apiErr(429, "insufficient_quota")}, strategies.Quota},
		{"spend cap", strategies.Outcome{Kind: strategies.Quota, Status: 429, Err: apiErr(429, "rate_limit_error")}, strategies.Quota},
		{"529", strategies.Outcome{Kind: strategies.Overloaded, Status: 529, Err: apiErr(529, "overloaded_error")}, strategies.Overloaded},
		{"503", strategies.Outcome{Kind: strategies.Overloaded, Status: 503, Err: apiErr(503, "")}, strategies.Overloaded},
		{"stream rate_limit_error event", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: apiErr(200, "rate_limit_error")}, strategies.Throttled},
		{"stream overloaded_error event", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: apiErr(200, "overloaded_error")}, strategies.Overloaded},
		{"500", strategies.Outcome{Kind: strategies.Failed, Status: 500, Err: apiErr(500, "api_error")}, strategies.Failed},
		{"400", strategies.Outcome{Kind: strategies.Failed, Status: 400, Err: apiErr(400, "invalid_request_error")}, strategies.Failed},
		{"refused", strategies.Outcome{Kind: strategies.Failed, Err: refused}, strategies.Unreachable},
		{"tls", strategies.Outcome{Kind: strategies.Failed, Err: errors.New("tls: failed to verify certificate")}, strategies.Failed},
		{"incomplete stream", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: provider.ErrIncompleteStream}, strategies.Failed},
	}
	for _, tt := range tests {
		if got := kindOf(tt.o); got != tt.want {
			t.Errorf("%s: kindOf = %v, want %v", tt.name, got, tt.want)
		}
	}
}
