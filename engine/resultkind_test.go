package engine

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
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
		want ResultKind
	}{
		{"429", strategies.Outcome{Kind: strategies.Throttled, Status: 429, Err: apiErr(429, "rate_limit_error")}, Throttled},
		{"429 without a body", strategies.Outcome{Kind: strategies.Throttled, Status: 429, Err: apiErr(429, "")}, Throttled},
		{"429 insufficient_quota", strategies.Outcome{Kind: strategies.Throttled, Status: 429, Err: apiErr(429, "insufficient_quota")}, QuotaSpent},
		{"spend cap", strategies.Outcome{Kind: strategies.Quota, Status: 429, Err: apiErr(429, "rate_limit_error")}, QuotaSpent},
		{"529", strategies.Outcome{Kind: strategies.Overloaded, Status: 529, Err: apiErr(529, "overloaded_error")}, Overloaded},
		{"503", strategies.Outcome{Kind: strategies.Overloaded, Status: 503, Err: apiErr(503, "")}, Overloaded},
		{"stream rate_limit_error event", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: apiErr(200, "rate_limit_error")}, Throttled},
		{"stream overloaded_error event", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: apiErr(200, "overloaded_error")}, Overloaded},
		{"500", strategies.Outcome{Kind: strategies.Failed, Status: 500, Err: apiErr(500, "api_error")}, Failed},
		{"400", strategies.Outcome{Kind: strategies.Failed, Status: 400, Err: apiErr(400, "invalid_request_error")}, Failed},
		{"refused", strategies.Outcome{Kind: strategies.Failed, Err: refused}, Unreachable},
		{"tls", strategies.Outcome{Kind: strategies.Failed, Err: errors.New("tls: failed to verify certificate")}, Failed},
		{"incomplete stream", strategies.Outcome{Kind: strategies.Failed, Status: 200, Err: provider.ErrIncompleteStream}, Failed},
	}
	for _, tt := range tests {
		if got := kindOf(tt.o); got != tt.want {
			t.Errorf("%s: kindOf = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestResultKindText(t *testing.T) {
	for k := Succeeded; k <= QuotaSpent; k++ {
		b, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"` + k.String() + `"`; string(b) != want {
			t.Errorf("json.Marshal(%d) = %s, want %s", k, b, want)
		}
		var back ResultKind
		if err := json.Unmarshal(b, &back); err != nil || back != k {
			t.Errorf("json.Unmarshal(%s) = %v, %v; want %v", b, back, err, k)
		}
		if want := k == Throttled || k == Overloaded || k == Unreachable; k.Temporary() != want {
			t.Errorf("%v.Temporary() = %v, want %v", k, k.Temporary(), want)
		}
	}
	var k ResultKind
	if err := json.Unmarshal([]byte(`"throttle"`), &k); err == nil || !strings.Contains(err.Error(), `unknown result kind "throttle"`) {
		t.Errorf("json.Unmarshal(\"throttle\"): %v, want an error naming it", err)
	}
	if _, err := json.Marshal(ResultKind(9)); err == nil {
		t.Error("json.Marshal(ResultKind(9)): no error")
	}
}

// TestResultLineKeepsFormat: the kind is not written to a result line, and
// ReadJSONL gives a line with an error the kind Failed.
func TestResultLineKeepsFormat(t *testing.T) {
	r := Result{Index: 1, ID: "a", Err: &ResultError{Status: 429, Type: "rate_limit_error", Message: "no"}, Attempts: 3, Kind: Throttled}
	var b strings.Builder
	if err := NewJSONL(&b).Put(r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "kind") || strings.Contains(b.String(), "throttled") {
		t.Errorf("result line %s holds the kind", b.String())
	}
	var got []Result
	if _, err := ReadJSONL(strings.NewReader(b.String()+`{"index":2,"id":"b","usage":{"input_tokens":0,"output_tokens":0},"attempts":1,"timings":{}}`+"\n"), func(r Result) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != Failed || got[1].Kind != Succeeded {
		t.Errorf("read back %+v, want kinds failed, succeeded", got)
	}
}
