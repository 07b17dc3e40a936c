package provider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// TestBedrockAgainstMock: the bedrock provider against the mock, with
// SigV4 credentials (AKID:SECRET, the access key id being the mock's key,
// its secret configured so that the mock verifies the signature)
// as well as the bearer API key of the conformance table, and Bedrock's
// classification: a ModelNotReadyException (429) is Overloaded, not
// Throttled; an exception inside a stream that began with 200 is Failed
// with its type; a ValidationException names the field.
func TestBedrockAgainstMock(t *testing.T) {
	const akid = "AKIDPROVIDERTEST"
	cases := []struct {
		name   string
		setup  func(*mock.Config)
		model  string
		stream bool
		kind   strategies.Kind
		status int
		typ    string // the APIError's type
	}{
		{"sigv4 plain", nil, "anthropic.claude-sonnet-4-5-20250929-v1:0", false, strategies.Success, 200, ""},
		{"sigv4 stream", nil, "us.anthropic.claude-haiku-4-5-20251001-v1:0", true, strategies.Success, 200, ""},
		{"model not ready", func(c *mock.Config) { c.Faults.Script = []mock.ScriptStep{{Attempts: 1, Status: 529}} },
			"anthropic.claude-sonnet-4-5-20250929-v1:0", false, strategies.Overloaded, 429, "ModelNotReadyException"},
		{"throttled", func(c *mock.Config) { c.Faults.Script = []mock.ScriptStep{{Attempts: 1, Status: 429}} },
			"anthropic.claude-sonnet-4-5-20250929-v1:0", true, strategies.Throttled, 429, "ThrottlingException"},
		{"stream exception", func(c *mock.Config) { c.Faults.StreamError = 1 },
			"anthropic.claude-sonnet-4-5-20250929-v1:0", true, strategies.Failed, 200, "serviceUnavailableException"},
		{"unknown model", func(c *mock.Config) { c.Models = mock.Models{} },
			"anthropic.claude-nonesuch-v1:0", false, strategies.Failed, 400, "ValidationException"},
		{"wrong secret", func(c *mock.Config) { c.AWSSecretKeys = map[string]string{akid: "another-secret"} },
			"anthropic.claude-sonnet-4-5-20250929-v1:0", false, strategies.Failed, 403, "InvalidSignatureException"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.APIKeys = []string{akid}
			cfg.AWSSecretKeys = map[string]string{akid: "secret"} // signatures verified for real
			if tc.setup != nil {
				tc.setup(&cfg)
			}
			srv := mocktest.Start(t, cfg)
			c := &provider.Client{Provider: provider.Bedrock{Region: "eu-west-1"}, BaseURL: srv.URL, APIKey: akid + ":secret", HTTP: srv.Client}
			r := request(tc.stream)
			r.Model = tc.model
			resp, o := c.Do(context.Background(), r, 0)
			if o.Kind != tc.kind || o.Status != tc.status {
				t.Fatalf("outcome %v %d (%v), want %v %d", o.Kind, o.Status, o.Err, tc.kind, tc.status)
			}
			if tc.kind == strategies.Success {
				if resp.Text != mock.Filler(20) || resp.StopReason != "max_tokens" || resp.Usage.OutputTokens != 20 || resp.Usage.InputTokens <= 0 || resp.RequestID == "" {
					t.Errorf("response %+v, want the filler of 20 tokens, max_tokens, usage and a request id", resp)
				}
				return
			}
			var ae *provider.APIError
			if !errors.As(o.Err, &ae) || ae.Type != tc.typ || ae.Message == "" {
				t.Errorf("error %v, want an APIError of type %s with a message", o.Err, tc.typ)
			}
			if tc.name == "unknown model" && ae != nil && !strings.HasPrefix(ae.Message, "The provided model identifier is invalid") {
				t.Errorf("message %q", ae.Message)
			}
		})
	}
}

// TestBedrockRequestErrors: an API key with an empty part, or a
// SystemCache Bedrock has no TTL for, is refused when the request is
// built, naming the problem.
func TestBedrockRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		key, cache, want string
	}{
		{"AKID:", "", "AKID:SECRET"},
		{"k", "1h", "SystemCache"},
	} {
		r := request(false)
		r.SystemCache = tc.cache
		_, err := provider.Bedrock{}.NewRequest(context.Background(), "", tc.key, r, 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("key %q cache %q: err = %v, want one naming %s", tc.key, tc.cache, err, tc.want)
		}
	}
	req, err := provider.Bedrock{}.NewRequest(context.Background(), "", "k", request(true), 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(req.URL, " ", req.Header.Get("Authorization"), " ", req.Header.Get("Amz-Sdk-Request")); got != "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream Bearer k attempt=3" {
		t.Errorf("request = %s", got)
	}
}
