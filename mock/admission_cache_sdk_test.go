package mock_test

import (
	"testing"
	"testing/synctest"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/ratelab/ratelab/mock"
)

// TestSDKPromptCache: the official SDKs read the mock's cache usage. A
// 2,000-token system prompt with cache_control is written by the first
// Anthropic call and read by the second, JSON and streamed alike; OpenAI's
// automatic cache reports a repeated 1,500-token prefix as cached_tokens,
// on chat completions and on the Responses API (its instructions).
func TestSDKPromptCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, "api_keys: ["+sdkKey+"]\nlatency: {per_token: 1ms}\n")
		c := h.anthropic()
		params := anthropic.MessageNewParams{
			Model: sdkModel, MaxTokens: 8,
			System:   []anthropic.TextBlockParam{{Text: mock.Filler(2000), CacheControl: anthropic.NewCacheControlEphemeralParam()}},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))},
		}
		m, err := c.Messages.New(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		if u := m.Usage; u.CacheCreationInputTokens != 2000 || u.CacheReadInputTokens != 0 || u.InputTokens != 1 {
			t.Errorf("first call: usage %+v, want 2000 written, 1 input", u)
		}
		acc := accumulateMessage(t, c.Messages.NewStreaming(t.Context(), params))
		if u := acc.Usage; u.CacheReadInputTokens != 2000 || u.CacheCreationInputTokens != 0 || u.InputTokens != 1 {
			t.Errorf("second call, streamed: usage %+v, want 2000 read, 1 input", u)
		}

		oc := h.openai()
		op := openai.ChatCompletionNewParams{
			Model: sdkOpenAIModel, MaxCompletionTokens: openai.Int(8),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(mock.Filler(1500)), openai.UserMessage("Hi")},
		}
		for i, want := range []int64{0, 1408} {
			r, err := oc.Chat.Completions.New(t.Context(), op)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Usage.PromptTokensDetails.CachedTokens; got != want || r.Usage.PromptTokens != 1501 {
				t.Errorf("openai call %d: prompt %d cached %d, want 1501 and %d", i, r.Usage.PromptTokens, got, want)
			}
		}

		rp := responses.ResponseNewParams{
			Model: sdkOpenAIModel, MaxOutputTokens: openai.Int(16), Instructions: openai.String(mock.Filler(1500)),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")},
		}
		for i, want := range []int64{0, 1408} {
			r, err := oc.Responses.New(t.Context(), rp)
			if err != nil {
				t.Fatal(err)
			}
			validate(t, "Response", []byte(r.RawJSON()))
			if got := r.Usage.InputTokensDetails.CachedTokens; got != want || r.Usage.InputTokens != 1501 {
				t.Errorf("responses call %d: input %d cached %d, want 1501 and %d", i, r.Usage.InputTokens, got, want)
			}
		}
	})
}
