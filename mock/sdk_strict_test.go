package mock_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/ratelab/ratelab/mock"
)

// TestSDKModelsGet: Models.Get through both SDKs, each answered from its
// own API's catalogue in its own shape; an unknown model is the API's own
// 404, which the SDKs do not retry.
func TestSDKModelsGet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, sdkLatency)
		ac, oc := h.anthropic(), h.openai()

		am, err := ac.Models.Get(t.Context(), string(anthropic.ModelClaudeHaiku4_5), anthropic.ModelGetParams{})
		if err != nil || am.ID != "claude-haiku-4-5" || am.Type != "model" || am.DisplayName == "" || am.CreatedAt.IsZero() || am.MaxTokens != mock.MaxOutputTokens {
			t.Errorf("anthropic Models.Get(claude-haiku-4-5) = %+v, %v", am, err)
		}
		om, err := oc.Models.Get(t.Context(), "gpt-5-mini") // the shipped scenarios' OpenAI model
		if err != nil || om.ID != "gpt-5-mini" || om.Object != "model" || om.Created == 0 || om.OwnedBy == "" {
			t.Errorf("openai Models.Get(gpt-5-mini) = %+v, %v", om, err)
		}

		// Each API knows only its own models.
		_, err = ac.Models.Get(t.Context(), "gpt-5-mini", anthropic.ModelGetParams{})
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Type() != "not_found_error" {
			t.Errorf("anthropic Models.Get(gpt-5-mini): %v, want 404 not_found_error", err)
		}
		_, err = oc.Models.Get(t.Context(), "claude-haiku-4-5")
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 404 || oe.Code != "model_not_found" {
			t.Errorf("openai Models.Get(claude-haiku-4-5): %v, want 404 model_not_found", err)
		}

		// The lists: each API lists its own.
		ap, err := ac.Models.List(t.Context(), anthropic.ModelListParams{})
		if err != nil || len(ap.Data) != len(mock.KnownModels("anthropic")) || !strings.HasPrefix(ap.Data[0].ID, "claude-") {
			t.Errorf("anthropic Models.List: %d models, %v", len(ap.Data), err)
		}
		op, err := oc.Models.List(t.Context())
		if err != nil || len(op.Data) != len(mock.KnownModels("openai")) || strings.HasPrefix(op.Data[0].ID, "claude-") {
			t.Errorf("openai Models.List: %d models, %v", len(op.Data), err)
		}
		if got := fmt.Sprint(statuses(h.tape.log())); got != "[200 200 404 404 200 200]" {
			t.Errorf("attempts = %s, want [200 200 404 404 200 200] (404s not retried)", got)
		}

		// models: any accepts any name, and Models.Get describes it.
		h2 := startMock(t, sdkLatency+"models: any\n")
		ac2, oc2 := h2.anthropic(), h2.openai()
		if m, err := ac2.Models.Get(t.Context(), "my-finetune", anthropic.ModelGetParams{}); err != nil || m.ID != "my-finetune" {
			t.Errorf("models: any: anthropic Models.Get(my-finetune) = %+v, %v", m, err)
		}
		if _, err := oc2.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model: "my-finetune", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxCompletionTokens: openai.Int(2),
		}); err != nil {
			t.Errorf("models: any: a chat completion for my-finetune: %v", err)
		}
	})
}

// TestSDKErrorClasses: what the real APIs refuse, the mock refuses, each
// error in the envelope of the API the request was for, so each SDK
// surfaces its own error type and fields (OpenAI's param and code filled),
// and none is retried.
func TestSDKErrorClasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, sdkLatency)
		ac, oc := h.anthropic(), h.openai()
		msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}

		for _, tt := range []struct {
			name   string
			params anthropic.MessageNewParams
			opts   []aoption.RequestOption
			status int
			typ    string
			msg    string
		}{
			{"unknown model", anthropic.MessageNewParams{Model: "claude-nonesuch", MaxTokens: 4, Messages: msgs}, nil, 404, "not_found_error", "model: claude-nonesuch"},
			{"temperature above 1", anthropic.MessageNewParams{Model: sdkModel, MaxTokens: 4, Messages: msgs, Temperature: anthropic.Float(1.5)}, nil, 400, "invalid_request_error", "temperature: range: 0..1"},
			{"top_p below 0", anthropic.MessageNewParams{Model: sdkModel, MaxTokens: 4, Messages: msgs, TopP: anthropic.Float(-0.1)}, nil, 400, "invalid_request_error", "top_p: range: 0..1"},
			{"assistant turn first", anthropic.MessageNewParams{Model: sdkModel, MaxTokens: 4, Messages: []anthropic.MessageParam{anthropic.NewAssistantMessage(anthropic.NewTextBlock("hi"))}}, nil, 400, "invalid_request_error", "the first message must use the"},
			{"no anthropic-version", anthropic.MessageNewParams{Model: sdkModel, MaxTokens: 4, Messages: msgs}, []aoption.RequestOption{aoption.WithHeaderDel("anthropic-version")}, 400, "invalid_request_error", "anthropic-version: header is required"},
			{"headers too large", anthropic.MessageNewParams{Model: sdkModel, MaxTokens: 4, Messages: msgs}, []aoption.RequestOption{aoption.WithHeader("X-Big", strings.Repeat("x", 70<<10))}, 431, "invalid_request_error", "above the limit of 65536 bytes"},
			{"wrong key", anthropic.MessageNewParams{Model: sdkModel, MaxTokens: 4, Messages: msgs}, []aoption.RequestOption{aoption.WithAPIKey("wrong")}, 401, "authentication_error", "invalid x-api-key"},
		} {
			var resp *http.Response
			_, err := ac.Messages.New(t.Context(), tt.params, append(tt.opts, aoption.WithResponseInto(&resp))...)
			var ae *anthropic.Error
			if !errors.As(err, &ae) || ae.StatusCode != tt.status || string(ae.Type()) != tt.typ || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("anthropic, %s: %v; want %d %s %q", tt.name, err, tt.status, tt.typ, tt.msg)
				continue
			}
			if ae.Response.Header.Get("Request-Id") == "" || ae.Response.Header.Get("Anthropic-Organization-Id") == "" {
				t.Errorf("anthropic, %s: headers %v, want request-id and anthropic-organization-id", tt.name, ae.Response.Header)
			}
		}

		umsgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}
		for _, tt := range []struct {
			name   string
			params openai.ChatCompletionNewParams
			opts   []ooption.RequestOption
			status int
			typ    string
			param  string
			code   string
		}{
			{"unknown model", openai.ChatCompletionNewParams{Model: "gpt-nonesuch", Messages: umsgs}, nil, 404, "invalid_request_error", "", "model_not_found"},
			{"temperature above 2", openai.ChatCompletionNewParams{Model: sdkOpenAIModel, Messages: umsgs, Temperature: openai.Float(2.5)}, nil, 400, "invalid_request_error", "temperature", "decimal_above_max_value"},
			{"top_p above 1", openai.ChatCompletionNewParams{Model: sdkOpenAIModel, Messages: umsgs, TopP: openai.Float(1.5)}, nil, 400, "invalid_request_error", "top_p", "decimal_above_max_value"},
			{"max_completion_tokens 0", openai.ChatCompletionNewParams{Model: sdkOpenAIModel, Messages: umsgs, MaxCompletionTokens: openai.Int(0)}, nil, 400, "invalid_request_error", "max_completion_tokens", "integer_below_min_value"},
			{"no messages", openai.ChatCompletionNewParams{Model: sdkOpenAIModel}, nil, 400, "invalid_request_error", "messages", "missing_required_parameter"},
			{"headers too large", openai.ChatCompletionNewParams{Model: sdkOpenAIModel, Messages: umsgs}, []ooption.RequestOption{ooption.WithHeader("X-Big", strings.Repeat("x", 70<<10))}, 431, "invalid_request_error", "", "request_header_fields_too_large"},
			{"wrong key", openai.ChatCompletionNewParams{Model: sdkOpenAIModel, Messages: umsgs}, []ooption.RequestOption{ooption.WithAPIKey("wrong")}, 401, "invalid_request_error", "", "invalid_api_key"},
		} {
			_, err := oc.Chat.Completions.New(t.Context(), tt.params, tt.opts...)
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.StatusCode != tt.status || oe.Type != tt.typ || oe.Param != tt.param || oe.Code != tt.code {
				t.Errorf("openai, %s: %v; want %d type %s param %q code %q", tt.name, err, tt.status, tt.typ, tt.param, tt.code)
				continue
			}
			if hd := oe.Response.Header; hd.Get("X-Request-Id") == "" || hd.Get("Openai-Version") != "2020-10-01" || hd.Get("Openai-Processing-Ms") == "" {
				t.Errorf("openai, %s: headers %v, want x-request-id, openai-version and openai-processing-ms", tt.name, hd)
			}
		}
		for _, a := range h.tape.log() {
			if a.retryCount != "0" {
				t.Errorf("attempt %+v: an SDK retried a client error", a)
			}
		}

		// strict: false lets through what strictness refuses.
		h2 := startMock(t, sdkLatency+"strict: false\n")
		ac2 := h2.anthropic()
		_, err := ac2.Messages.New(t.Context(), anthropic.MessageNewParams{Model: sdkModel, MaxTokens: 2, Temperature: anthropic.Float(1.5),
			Messages: []anthropic.MessageParam{anthropic.NewAssistantMessage(anthropic.NewTextBlock("hi"))}}, aoption.WithHeaderDel("anthropic-version"))
		if err != nil {
			t.Errorf("strict: false: %v", err)
		}
	})
}

// TestSDKSuccessHeaders: successful responses carry the headers the real
// APIs send on every response.
func TestSDKSuccessHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, sdkLatency)
		var resp *http.Response
		ac, oc := h.anthropic(), h.openai()
		if _, err := ac.Messages.New(t.Context(), conversations[0].anthropicParams(4), aoption.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		if resp.Header.Get("Anthropic-Organization-Id") == "" {
			t.Errorf("anthropic 200 headers %v, want anthropic-organization-id", resp.Header)
		}
		if _, err := oc.Chat.Completions.New(t.Context(), conversations[0].openaiParams(4), ooption.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		// 300 ms to the first token, then 4 tokens of 10 ms: the headers
		// go out with the whole answer, 340 ms after admission.
		if resp.Header.Get("Openai-Version") != "2020-10-01" || resp.Header.Get("Openai-Processing-Ms") != "340" {
			t.Errorf("openai 200 headers %v, want openai-version 2020-10-01 and openai-processing-ms 340", resp.Header)
		}
	})
}
