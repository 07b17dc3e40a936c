package mock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/vertex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// Anthropic on Vertex AI through anthropic-sdk-go's vertex package,
// unchanged: its middleware moves the model into the path
// (…/publishers/anthropic/models/{model}:rawPredict or :streamRawPredict)
// and puts anthropic_version vertex-2023-10-16 in the body; its
// credentials are a static OAuth token. WithBaseURL after
// vertex.WithCredentials points it at the mock.

const vertexClaude = "claude-sonnet-4-5@20250929"

func (h *harness) vertexAnthropic(t *testing.T, token string, opts ...aoption.RequestOption) anthropic.Client {
	creds := &google.Credentials{ProjectID: "my-project", TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token})}
	return anthropic.NewClient(append([]aoption.RequestOption{
		aoption.WithHTTPClient(h.hc),
		vertex.WithCredentials(t.Context(), "us-east5", "my-project", creds),
		aoption.WithBaseURL(sdkBaseURL),
	}, opts...)...)
}

func TestVertexAnthropicGoSDK(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, geminiConfig)
		c := h.vertexAnthropic(t, sdkKey)
		params := anthropic.MessageNewParams{Model: vertexClaude, MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
		start := time.Now()
		msg, err := c.Messages.New(t.Context(), params)
		if err != nil {
			t.Fatalf("Messages.New: %v", err)
		}
		if took, want := time.Since(start), 100*time.Millisecond+20*5*time.Millisecond; took != want {
			t.Errorf("took %v, want %v", took, want)
		}
		if msg.Model != vertexClaude || msg.Usage.OutputTokens != 20 || msg.Usage.InputTokens != promptTokens("Hello") {
			t.Errorf("model %q, usage %+v; want the path's model, 20 output tokens", msg.Model, msg.Usage)
		}
		as := h.tape.log()
		if want := "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/" + vertexClaude + ":rawPredict"; len(as) != 1 || as[0].path != want {
			t.Errorf("attempts %+v, want one to %s", as, want)
		}
		acc := accumulateMessage(t, c.Messages.NewStreaming(t.Context(), params))
		if acc.Content[0].Text != msg.Content[0].Text || acc.Usage.OutputTokens != 20 {
			t.Errorf("streamed %q (%d tokens), want %q", acc.Content[0].Text, acc.Usage.OutputTokens, msg.Content[0].Text)
		}
		if as := h.tape.log(); !strings.HasSuffix(as[0].path, ":streamRawPredict") {
			t.Errorf("stream path %s, want :streamRawPredict", as[0].path)
		}

		// A tool call and structured output, as on the Messages API.
		tp := anthropicToolParams(t, anthropic.ToolChoiceParamOfTool("get_weather"))
		tp.Model = vertexClaude
		tm, err := c.Messages.New(t.Context(), tp)
		if err != nil || tm.StopReason != anthropic.StopReasonToolUse {
			t.Fatalf("tool call: %v, %+v", err, tm)
		}
		checkValid(t, "tool_use input", weatherSchema, tm.Content[0].AsToolUse().Input)
		sm, err := c.Messages.New(t.Context(), anthropic.MessageNewParams{Model: vertexClaude, MaxTokens: 1024,
			Messages:     []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Extract the invoice."))},
			OutputConfig: anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: mustMap(t, extractSchema)}}})
		if err != nil {
			t.Fatalf("output_config: %v", err)
		}
		checkValid(t, "output_config text", extractSchema, []byte(sm.Content[0].Text))

		// count_tokens: …/models/count-tokens:rawPredict.
		ct, err := c.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{Model: vertexClaude,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
		if err != nil || ct.InputTokens != promptTokens("Hello") {
			t.Errorf("CountTokens = %+v, %v", ct, err)
		}

		// A wrong token: Vertex AI's 401 in Google's envelope, not retried.
		h.tape.log()
		bad := h.vertexAnthropic(t, "wrong")
		_, err = bad.Messages.New(t.Context(), params)
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(ae.RawJSON(), "UNAUTHENTICATED") {
			t.Errorf("wrong token: %v", err)
		}
		if n := len(h.tape.log()); n != 1 {
			t.Errorf("wrong token: %d attempts, want 1", n)
		}
	})
}

// TestVertexAnthropicGoSDK429: Vertex AI's quota 429 (Google's envelope,
// no retry-after, no x-should-retry) is retried by anthropic-sdk-go on its
// own backoff, twice by default; the model's overload, 529 in Anthropic's
// envelope, likewise.
func TestVertexAnthropicGoSDK429(t *testing.T) {
	for _, tc := range []struct{ name, cfg, want string }{
		{"rpm", "limits: {rpm: 1}\n", "[200 429 429 429]"},
		{"overloaded", "faults: {overloaded: 1}\n", "[529 529 529]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, "api_keys: ["+sdkKey+"]\nlatency: {ttft: 0s, per_token: 1ms}\n"+tc.cfg)
				c := h.vertexAnthropic(t, sdkKey)
				params := anthropic.MessageNewParams{Model: vertexClaude, MaxTokens: 4,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
				if tc.name == "rpm" {
					if _, err := c.Messages.New(t.Context(), params); err != nil {
						t.Fatalf("first call: %v", err)
					}
				}
				_, err := c.Messages.New(t.Context(), params)
				var ae *anthropic.Error
				if !errors.As(err, &ae) {
					t.Fatalf("second call: %v, want an API error", err)
				}
				as := h.tape.log()
				if got := fmt.Sprint(statuses(as)); got != tc.want {
					t.Errorf("statuses %s, want %s", got, tc.want)
				}
				for _, a := range as {
					if a.retryAfter != "" {
						t.Errorf("retry-after %q sent; Vertex AI sends none", a.retryAfter)
					}
				}
				if tc.name == "rpm" && !strings.Contains(ae.RawJSON(), "RESOURCE_EXHAUSTED") {
					t.Errorf("429 body %s, want Google's RESOURCE_EXHAUSTED", ae.RawJSON())
				}
				if tc.name == "overloaded" && !strings.Contains(ae.RawJSON(), "overloaded_error") {
					t.Errorf("529 body %s, want Anthropic's overloaded_error", ae.RawJSON())
				}
			})
		})
	}
}
