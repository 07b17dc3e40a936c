package mock_test

import (
	"testing"
	"testing/synctest"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/ratelab/ratelab/mock"
)

// TestSDKAnthropicCacheCreationTTL: usage.cache_creation splits a cache
// write by TTL as the prompt-caching docs bill a request that mixes TTLs
// (A the tokens read, B the highest one-hour breakpoint after A, C the
// last breakpoint: B−A one-hour tokens, C−B five-minute tokens), and the
// streamed answer, accumulated by the SDK, reports the same usage as the
// JSON one.
func TestSDKAnthropicCacheCreationTTL(t *testing.T) {
	hour := anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}
	params := func(doc int) anthropic.MessageNewParams {
		return anthropic.MessageNewParams{
			Model: sdkModel, MaxTokens: 8,
			System: []anthropic.TextBlockParam{{Text: mock.Filler(1500), CacheControl: hour}},
			Messages: []anthropic.MessageParam{
				anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: mock.Filler(doc), CacheControl: anthropic.NewCacheControlEphemeralParam()}}),
				anthropic.NewAssistantMessage(anthropic.NewTextBlock("Ok")),
				anthropic.NewUserMessage(anthropic.NewTextBlock("Hi")),
			},
		}
	}
	type usage struct{ input, read, write, write5m, write1h int64 }
	steps := []struct {
		name string
		doc  int
		want usage
	}{
		// Nothing cached: the system prompt (1,500) is written for an
		// hour, the document message (1,200) for five minutes.
		{"cold", 1200, usage{input: 2, write: 2700, write5m: 1200, write1h: 1500}},
		// The same prompt again: all of it read.
		{"warm", 1200, usage{input: 2, read: 2700}},
		// Another document: the system prompt is read (A = B = 1,500),
		// the new document written for five minutes.
		{"new document", 1300, usage{input: 2, read: 1500, write: 1300, write5m: 1300}},
	}
	got := func(u anthropic.Usage) usage {
		return usage{u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens,
			u.CacheCreation.Ephemeral5mInputTokens, u.CacheCreation.Ephemeral1hInputTokens}
	}
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[streamed], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startMock(t, "api_keys: ["+sdkKey+"]\nlatency: {per_token: 1ms}\n").anthropic()
				for _, st := range steps {
					var u anthropic.Usage
					if streamed {
						u = accumulateMessage(t, c.Messages.NewStreaming(t.Context(), params(st.doc))).Usage
					} else {
						m, err := c.Messages.New(t.Context(), params(st.doc))
						if err != nil {
							t.Fatal(err)
						}
						u = m.Usage
					}
					if g := got(u); g != st.want {
						t.Errorf("%s: usage %+v, want %+v", st.name, g, st.want)
					}
				}
			})
		})
	}
}

// TestSDKAnthropicUnusedFeatures: the fields of features the mock does not
// serve read, through the SDK, as the API sends them when they are unused.
func TestSDKAnthropicUnusedFeatures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startMock(t, "api_keys: ["+sdkKey+"]\nlatency: {per_token: 1ms}\n").anthropic()
		tool := anthropic.ToolParam{Name: "forecast", InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}
		for _, tc := range []struct {
			name   string
			params anthropic.MessageNewParams
		}{
			{"text", anthropic.MessageNewParams{Model: sdkModel, MaxTokens: 20,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}},
			{"tool", anthropic.MessageNewParams{Model: sdkModel, MaxTokens: 200, InferenceGeo: anthropic.String("us"),
				Messages:   []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather?"))},
				Tools:      []anthropic.ToolUnionParam{{OfTool: &tool}},
				ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}}},
		} {
			// usage.inference_geo is the request's, not_available when
			// it names none.
			geo := "not_available"
			if tc.params.InferenceGeo.Valid() {
				geo = tc.params.InferenceGeo.Value
			}
			m, err := c.Messages.New(t.Context(), tc.params)
			if err != nil {
				t.Fatal(err)
			}
			acc := accumulateMessage(t, c.Messages.NewStreaming(t.Context(), tc.params))
			for _, got := range []struct {
				how string
				m   anthropic.Message
			}{{"JSON", *m}, {"streamed", acc}} {
				m := got.m
				nulls := map[string]string{"container": m.JSON.Container.Raw(), "stop_details": m.JSON.StopDetails.Raw(),
					"diagnostics": m.JSON.Diagnostics.Raw(), "usage.server_tool_use": m.Usage.JSON.ServerToolUse.Raw()}
				if got.how == "streamed" {
					delete(nulls, "diagnostics") // message_start's, which Accumulate does not keep
				}
				for field, raw := range nulls {
					if raw != "null" {
						t.Errorf("%s %s: %s = %q, want null", tc.name, got.how, field, raw)
					}
				}
				u := m.Usage
				if u.Speed != anthropic.UsageSpeedStandard || u.InferenceGeo != geo || u.ServiceTier != anthropic.UsageServiceTierStandard ||
					!u.OutputTokensDetails.JSON.ThinkingTokens.Valid() || u.OutputTokensDetails.ThinkingTokens != 0 {
					t.Errorf("%s %s: usage %s, want speed and service tier standard, inference_geo %s, 0 thinking tokens", tc.name, got.how, u.RawJSON(), geo)
				}
				if len(m.Content) != 1 {
					t.Fatalf("%s %s: content %+v, want one block", tc.name, got.how, m.Content)
				}
				switch b := m.Content[0].AsAny().(type) {
				case anthropic.TextBlock:
					// Absent, as the API sends it (mock/internal/anthropic/anthropic.go).
					if tc.name != "text" || b.JSON.Citations.Raw() != "" || b.Citations != nil {
						t.Errorf("%s %s: text block %s, want no citations", tc.name, got.how, b.RawJSON())
					}
				case anthropic.ToolUseBlock:
					if tc.name != "tool" || b.Caller.Type != "direct" {
						t.Errorf("%s %s: tool_use block %s, want caller direct", tc.name, got.how, b.RawJSON())
					}
				default:
					t.Errorf("%s %s: block %T", tc.name, got.how, b)
				}
			}
		}
	})
}
