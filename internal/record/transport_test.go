package record_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/keyid"
	"github.com/ratelab/ratelab/internal/record"
)

// TestRetryCount: the retry count a line gets from the SDKs' headers:
// X-Stainless-Retry-Count (Anthropic's and OpenAI's SDKs), else the AWS
// SDKs' amz-sdk-request attempt less one, wherever the attempt stands
// (botocore's retries put a ttl first).
func TestRetryCount(t *testing.T) {
	for _, c := range []struct {
		header, value string
		want          int
	}{
		{"X-Stainless-Retry-Count", "2", 2},
		{"X-Stainless-Retry-Count", "0", 0},
		{"Amz-Sdk-Request", "attempt=1; max=3", 0},
		{"Amz-Sdk-Request", "attempt=2; max=3", 1},
		{"Amz-Sdk-Request", "ttl=20261208T011111Z; attempt=3; max=6", 2}, // botocore 1.44's retry
		{"Amz-Sdk-Request", "attempt=3", 2},
		{"Amz-Sdk-Request", "ttl=20261208T011111Z; max=6", 0},
		{"Amz-Sdk-Request", "attempt=x; max=3", 0},
	} {
		req, _ := http.NewRequest("POST", "http://up.test/model/m/converse", strings.NewReader(`{}`))
		req.Header.Set(c.header, c.value)
		if got := recordOne(t, req).RetryCount; got != c.want {
			t.Errorf("%s: %s recorded retry count %d, want %d", c.header, c.value, got, c.want)
		}
	}
}

// TestKeyLabel: a line's key label is the key's fingerprint
// (keyid.Fingerprint), the name the mock and adaptive's state give it,
// a request without a key included.
func TestKeyLabel(t *testing.T) {
	for _, key := range []string{"sk-test", ""} {
		req, _ := http.NewRequest("POST", "http://up.test/v1/messages", strings.NewReader(`{}`))
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		if got := recordOne(t, req).Key; got != keyid.Fingerprint(key) || got != record.KeyLabel(key) {
			t.Errorf("key %q recorded as %q, want its fingerprint %q", key, got, keyid.Fingerprint(key))
		}
	}
}

// recordOne sends req through a record.Transport whose upstream answers
// 200 {} and returns the one line it recorded.
func recordOne(t *testing.T, req *http.Request) record.Attempt {
	t.Helper()
	var buf bytes.Buffer
	w, _ := record.NewWriter(&buf, record.Header{Source: "test"})
	tr := &record.Transport{W: w, Base: rt(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
	})}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	f, err := record.Parse(&buf, "rec.jsonl")
	if err != nil || len(f.Attempts) != 1 {
		t.Fatalf("%v %+v", err, f)
	}
	return f.Attempts[0]
}
