package engine

import (
	"strings"
	"testing"

	"github.com/ratelab/ratelab/strategies"
)

// TestResultLineKeepsFormat: the kind is not written to a result line, and
// ReadJSONL gives a line with an error the kind Failed.
func TestResultLineKeepsFormat(t *testing.T) {
	r := Result{Index: 1, ID: "a", Err: &ResultError{Status: 429, Type: "rate_limit_error", Message: "no"}, Attempts: 3, Kind: strategies.Throttled}
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
	if len(got) != 2 || got[0].Kind != strategies.Failed || got[1].Kind != strategies.Success {
		t.Errorf("read back %+v, want kinds failed, success", got)
	}
}
