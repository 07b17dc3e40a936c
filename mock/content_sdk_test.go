package mock_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ratelab/ratelab/mock"
)

// The content tests: tool calls, structured output, stop sequences,
// several choices and logprobs, through the official SDKs in virtual time.

const contentConfig = `
latency:
  per_token: 5ms
`

// weatherSchema is a tool's input schema with nesting, enums, formats,
// bounds and a $ref.
const weatherSchema = `{"type":"object","additionalProperties":false,
 "required":["location","unit","days","when","stations"],
 "$defs":{"station":{"type":"object","required":["id","elevation"],"properties":{"id":{"type":"string","format":"uuid"},"elevation":{"type":"integer","minimum":-400,"maximum":8848}}}},
 "properties":{
  "location":{"type":"string","minLength":3},
  "unit":{"type":"string","enum":["celsius","fahrenheit"]},
  "days":{"type":"integer","minimum":1,"maximum":14},
  "when":{"type":"string","format":"date-time"},
  "stations":{"type":"array","minItems":1,"maxItems":3,"items":{"$ref":"#/$defs/station"}},
  "note":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`

func mustMap(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkValid validates doc against schema with the library, independently
// of the mock.
func checkValid(t *testing.T, what, schema string, doc []byte) {
	t.Helper()
	sd, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("s.json", sd); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(doc)))
	if err != nil {
		t.Fatalf("%s: not JSON: %s: %v", what, doc, err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s: %s is not valid against the schema: %v", what, doc, err)
	}
}

func anthropicWeatherTool(t *testing.T) anthropic.ToolUnionParam {
	m := mustMap(t, weatherSchema)
	extra := map[string]any{"additionalProperties": false, "$defs": m["$defs"]}
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name: "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: m["properties"], Required: []string{"location", "unit", "days", "when", "stations"}, ExtraFields: extra,
		},
	}}
}

func anthropicToolParams(t *testing.T, choice anthropic.ToolChoiceUnionParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model: sdkModel, MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{
			{OfTool: &anthropic.ToolParam{Name: "noop", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}},
			anthropicWeatherTool(t),
		},
		ToolChoice: choice,
	}
}

func TestSDKAnthropicToolUse(t *testing.T) {
	forced := map[string]anthropic.ToolChoiceUnionParam{
		"tool": anthropic.ToolChoiceParamOfTool("get_weather"),
		"any":  {OfAny: &anthropic.ToolChoiceAnyParam{}},
	}
	for name, choice := range forced {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, contentConfig)
				ac, oc := h.anthropic(), h.openai(ooptionNoRetry())
				_, _ = ac, oc
				c := h.anthropic()
				params := anthropicToolParams(t, choice)

				start := time.Now()
				msg, err := c.Messages.New(t.Context(), params)
				if err != nil {
					t.Fatalf("Messages.New: %v", err)
				}
				took := time.Since(start)
				if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" {
					t.Fatalf("Messages.New: stop_reason %q, content %+v; want one tool_use block", msg.StopReason, msg.Content)
				}
				tu := msg.Content[0].AsToolUse()
				if name == "tool" && tu.Name != "get_weather" {
					t.Errorf("tool_use name = %q, want get_weather", tu.Name)
				}
				if !strings.HasPrefix(tu.ID, "toolu_01") {
					t.Errorf("tool_use id = %q, want toolu_01…", tu.ID)
				}
				if tu.Name == "get_weather" {
					checkValid(t, "tool_use input", weatherSchema, tu.Input)
				}
				wantOut := int64(mock.EstimateTokens(string(tu.Input)))
				if msg.Usage.OutputTokens != wantOut {
					t.Errorf("usage output_tokens = %d, want %d (the input's tokens)", msg.Usage.OutputTokens, wantOut)
				}
				if want := time.Duration(wantOut) * 5 * time.Millisecond; took != want {
					t.Errorf("Messages.New took %v, want %v (%d tokens × 5ms)", took, want, wantOut)
				}

				// The same request streamed: the same call, in input_json_delta pieces.
				stream := c.Messages.NewStreaming(t.Context(), params)
				var acc anthropic.Message
				deltas := 0
				for stream.Next() {
					ev := stream.Current()
					if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
						deltas++
					}
					if err := acc.Accumulate(ev); err != nil {
						t.Fatalf("Accumulate: %v", err)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("stream: %v", err)
				}
				if len(tu.Input) > 8 && deltas < 2 {
					t.Errorf("stream: %d input_json_delta events, want the input in pieces", deltas)
				}
				if acc.StopReason != anthropic.StopReasonToolUse || len(acc.Content) != 1 {
					t.Fatalf("stream: stop_reason %q, content %+v", acc.StopReason, acc.Content)
				}
				got := acc.Content[0].AsToolUse()
				if got.ID != tu.ID || string(got.Input) != string(tu.Input) {
					t.Errorf("stream: accumulated %s %s, want the JSON answer's %s %s", got.ID, got.Input, tu.ID, tu.Input)
				}
				if acc.Usage.OutputTokens != wantOut {
					t.Errorf("stream: output_tokens = %d, want %d", acc.Usage.OutputTokens, wantOut)
				}
			})
		})
	}
}

func TestSDKAnthropicToolAuto(t *testing.T) {
	for _, tc := range []struct {
		toolUse string
		want    anthropic.StopReason
	}{{"0", anthropic.StopReasonMaxTokens}, {"1", anthropic.StopReasonToolUse}} {
		t.Run("tool_use="+tc.toolUse, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, contentConfig+"output:\n  tool_use: "+tc.toolUse+"\n")
				ac, oc := h.anthropic(), h.openai(ooptionNoRetry())
				_, _ = ac, oc
				params := anthropicToolParams(t, anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}})
				params.MaxTokens = 300
				msg, err := ac.Messages.New(t.Context(), params)
				if err != nil {
					t.Fatalf("Messages.New: %v", err)
				}
				if msg.StopReason != tc.want {
					t.Errorf("stop_reason = %q, want %q", msg.StopReason, tc.want)
				}
			})
		})
	}
}

func openaiToolParams(t *testing.T, choice openai.ChatCompletionToolChoiceOptionUnionParam) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    sdkOpenAIModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "noop"}),
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name: "get_weather", Parameters: mustMap(t, weatherSchema), Strict: openai.Bool(true),
			}),
		},
		ToolChoice:          choice,
		MaxCompletionTokens: openai.Int(1024),
	}
}

func TestSDKOpenAIToolCalls(t *testing.T) {
	forced := map[string]openai.ChatCompletionToolChoiceOptionUnionParam{
		"named":    openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}),
		"required": {OfAuto: openai.String("required")},
	}
	for name, choice := range forced {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, contentConfig)
				ac, oc := h.anthropic(), h.openai(ooptionNoRetry())
				_, _ = ac, oc
				c := h.openai()
				params := openaiToolParams(t, choice)
				start := time.Now()
				cc, err := c.Chat.Completions.New(t.Context(), params)
				if err != nil {
					t.Fatalf("Chat.Completions.New: %v", err)
				}
				took := time.Since(start)
				ch := cc.Choices[0]
				if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
					t.Fatalf("finish_reason %q, tool_calls %+v; want one tool call", ch.FinishReason, ch.Message.ToolCalls)
				}
				call := ch.Message.ToolCalls[0]
				if name == "named" && call.Function.Name != "get_weather" {
					t.Errorf("function name = %q, want get_weather", call.Function.Name)
				}
				if call.Function.Name == "get_weather" {
					checkValid(t, "arguments", weatherSchema, []byte(call.Function.Arguments))
				}
				want := int64(mock.EstimateTokens(call.Function.Arguments))
				if cc.Usage.CompletionTokens != want {
					t.Errorf("completion_tokens = %d, want %d", cc.Usage.CompletionTokens, want)
				}
				if wantT := time.Duration(want) * 5 * time.Millisecond; took != wantT {
					t.Errorf("took %v, want %v", took, wantT)
				}

				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				stream := c.Chat.Completions.NewStreaming(t.Context(), params)
				var acc openai.ChatCompletionAccumulator
				chunks := 0
				for stream.Next() {
					chunks++
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("stream: %v", err)
				}
				if chunks < 4 {
					t.Errorf("stream: %d chunks, want the arguments in pieces", chunks)
				}
				got := acc.Choices[0]
				if got.FinishReason != "tool_calls" || len(got.Message.ToolCalls) != 1 {
					t.Fatalf("stream: finish_reason %q, tool_calls %+v", got.FinishReason, got.Message.ToolCalls)
				}
				if g := got.Message.ToolCalls[0]; g.ID != call.ID || g.Function.Name != call.Function.Name || g.Function.Arguments != call.Function.Arguments {
					t.Errorf("stream: accumulated %+v, want %+v", g, call)
				}
				if acc.Usage.CompletionTokens != want {
					t.Errorf("stream: completion_tokens = %d, want %d", acc.Usage.CompletionTokens, want)
				}
			})
		})
	}
}

const extractSchema = `{"type":"object","additionalProperties":false,"required":["name","email","amount","items"],
 "properties":{"name":{"type":"string"},"email":{"type":"string","format":"email"},"amount":{"type":"number","minimum":0,"maximum":1000},
 "items":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["sku"],"properties":{"sku":{"type":"string"}}}}}}`

func TestSDKStructuredOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, contentConfig)
		ac, oc := h.anthropic(), h.openai(ooptionNoRetry())
		_, _ = ac, oc
		ctx := t.Context()
		msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Extract the invoice.")}

		cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: sdkOpenAIModel, Messages: msgs,
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "invoice", Strict: openai.Bool(true), Schema: mustMap(t, extractSchema)},
			}},
		})
		if err != nil {
			t.Fatalf("json_schema: %v", err)
		}
		if cc.Choices[0].FinishReason != "stop" {
			t.Errorf("json_schema: finish_reason = %q, want stop", cc.Choices[0].FinishReason)
		}
		checkValid(t, "json_schema content", extractSchema, []byte(cc.Choices[0].Message.Content))

		cc, err = oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: sdkOpenAIModel, Messages: msgs,
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
		})
		if err != nil {
			t.Fatalf("json_object: %v", err)
		}
		if !json.Valid([]byte(cc.Choices[0].Message.Content)) || !strings.HasPrefix(cc.Choices[0].Message.Content, "{") {
			t.Errorf("json_object: content %q is not a JSON object", cc.Choices[0].Message.Content)
		}

		params := anthropic.MessageNewParams{
			Model: sdkModel, MaxTokens: 1024,
			Messages:     []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Extract the invoice."))},
			OutputConfig: anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: mustMap(t, extractSchema)}},
		}
		msg, err := ac.Messages.New(ctx, params)
		if err != nil {
			t.Fatalf("output_config: %v", err)
		}
		if msg.StopReason != anthropic.StopReasonEndTurn || len(msg.Content) != 1 {
			t.Fatalf("output_config: stop_reason %q, content %+v", msg.StopReason, msg.Content)
		}
		checkValid(t, "output_config text", extractSchema, []byte(msg.Content[0].Text))
		if want := int64(mock.EstimateTokens(msg.Content[0].Text)); msg.Usage.OutputTokens != want {
			t.Errorf("output_config: output_tokens = %d, want %d", msg.Usage.OutputTokens, want)
		}

		// Streamed, the text deltas add up to the same kind of document.
		acc := accumulateMessage(t, ac.Messages.NewStreaming(ctx, params))
		checkValid(t, "output_config streamed", extractSchema, []byte(acc.Content[0].Text))
	})
}

func TestSDKStructuredOutputMalformed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, contentConfig+"faults:\n  malformed: 1\n")
		ac, oc := h.anthropic(), h.openai(ooptionNoRetry())
		_, _ = ac, oc
		cc, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model: sdkOpenAIModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "invoice", Schema: mustMap(t, extractSchema)},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if json.Valid([]byte(cc.Choices[0].Message.Content)) {
			t.Errorf("malformed: content %q is valid JSON, want it cut", cc.Choices[0].Message.Content)
		}
	})
}

func TestSDKUnsupportedSchema(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, contentConfig)
		ac, oc := h.anthropic(), h.openai(ooptionNoRetry())
		_, _ = ac, oc
		_, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model: sdkOpenAIModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "x", Schema: mustMap(t, `{"type":"object","required":["a"],"properties":{"a":{"not":{"type":"string"}}}}`)},
			}},
		})
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
			t.Fatalf("err = %v, want a 400", err)
		}
		if !strings.Contains(ae.Message, `"not"`) || ae.Param != "response_format.json_schema.schema" {
			t.Errorf("400: message %q param %q, want the keyword \"not\" and the schema's param", ae.Message, ae.Param)
		}
	})
}

func TestSDKStopSequences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, contentConfig)
		ac, oc := h.anthropic(), h.openai(ooptionNoRetry())
		_, _ = ac, oc
		ctx := t.Context()
		// The filler reads "the lab can run any mix …".
		msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{
			Model: sdkModel, MaxTokens: 50, StopSequences: []string{"mix", "run"},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonStopSequence || msg.StopSequence != "run" || msg.Content[0].Text != "the lab can " {
			t.Errorf("stop_sequences: stop_reason %q, stop_sequence %q, text %q; want stop_sequence, run, %q",
				msg.StopReason, msg.StopSequence, msg.Content[0].Text, "the lab can ")
		}
		if msg.Usage.OutputTokens != 3 {
			t.Errorf("stop_sequences: output_tokens = %d, want 3", msg.Usage.OutputTokens)
		}
		// No match within max_tokens: max_tokens as before.
		msg, err = ac.Messages.New(ctx, anthropic.MessageNewParams{
			Model: sdkModel, MaxTokens: 2, StopSequences: []string{"run"},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonMaxTokens || msg.StopSequence != "" {
			t.Errorf("no match: stop_reason %q stop_sequence %q, want max_tokens and none", msg.StopReason, msg.StopSequence)
		}

		cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: sdkOpenAIModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
			Stop:                openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("can")},
			MaxCompletionTokens: openai.Int(50),
		})
		if err != nil {
			t.Fatal(err)
		}
		if cc.Choices[0].FinishReason != "stop" || cc.Choices[0].Message.Content != "the lab " || cc.Usage.CompletionTokens != 2 {
			t.Errorf("stop: finish %q content %q tokens %d; want stop, %q, 2", cc.Choices[0].FinishReason, cc.Choices[0].Message.Content, cc.Usage.CompletionTokens, "the lab ")
		}
	})
}

func TestSDKChoicesLogprobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, contentConfig)
		ac, oc := h.anthropic(), h.openai(ooptionNoRetry())
		_, _ = ac, oc
		params := openai.ChatCompletionNewParams{
			Model: sdkOpenAIModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
			N: openai.Int(3), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(2), MaxCompletionTokens: openai.Int(10),
		}
		cc, err := oc.Chat.Completions.New(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		if len(cc.Choices) != 3 {
			t.Fatalf("n=3: %d choices", len(cc.Choices))
		}
		texts := map[string]bool{}
		for i, ch := range cc.Choices {
			if ch.Index != int64(i) || ch.FinishReason != "length" {
				t.Errorf("choice %d: index %d finish %q, want %d length", i, ch.Index, ch.FinishReason, i)
			}
			texts[ch.Message.Content] = true
			var joined strings.Builder
			for _, lp := range ch.Logprobs.Content {
				joined.WriteString(lp.Token)
				if lp.Logprob >= 0 || string(bytesOf(lp.Bytes)) != lp.Token || len(lp.TopLogprobs) != 2 ||
					lp.TopLogprobs[0].Token != lp.Token || lp.TopLogprobs[1].Logprob >= lp.TopLogprobs[0].Logprob {
					t.Errorf("choice %d: malformed logprob %+v", i, lp)
				}
			}
			if joined.String() != ch.Message.Content || len(ch.Logprobs.Content) != 10 {
				t.Errorf("choice %d: logprob tokens %q (%d), want the content %q (10)", i, joined.String(), len(ch.Logprobs.Content), ch.Message.Content)
			}
		}
		if len(texts) != 3 {
			t.Errorf("n=3: %d distinct texts, want 3", len(texts))
		}
		if cc.Usage.CompletionTokens != 30 {
			t.Errorf("n=3: completion_tokens = %d, want 30", cc.Usage.CompletionTokens)
		}

		stream := oc.Chat.Completions.NewStreaming(t.Context(), params)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 3 {
			t.Fatalf("stream: %d choices", len(acc.Choices))
		}
		for i, ch := range acc.Choices {
			if ch.Message.Content != cc.Choices[i].Message.Content || ch.FinishReason != "length" {
				t.Errorf("stream choice %d: %q %q, want %q length", i, ch.Message.Content, ch.FinishReason, cc.Choices[i].Message.Content)
			}
		}
	})
}

func bytesOf(v []int64) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

func TestSDKNaturalStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, contentConfig+"output:\n  length: natural\n")
		ac, oc := h.anthropic(), h.openai(ooptionNoRetry())
		_, _ = ac, oc
		for range 20 {
			msg, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{
				Model: sdkModel, MaxTokens: 40,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := msg.Usage.OutputTokens; msg.StopReason != anthropic.StopReasonEndTurn || n < 20 || n > 39 {
				t.Errorf("natural: stop_reason %q after %d tokens, want end_turn in [20, 39]", msg.StopReason, n)
			}
		}
		cc, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model: sdkOpenAIModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
			MaxCompletionTokens: openai.Int(1),
		})
		if err != nil {
			t.Fatal(err)
		}
		if cc.Choices[0].FinishReason != "length" {
			t.Errorf("natural with max_tokens 1: finish_reason %q, want length", cc.Choices[0].FinishReason)
		}
	})
}

func ooptionNoRetry() ooption.RequestOption { return ooption.WithMaxRetries(0) }

// The request fuzzers start from the content fields too.
func init() {
	requestSeeds = append(requestSeeds,
		`{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"t","input_schema":{"type":"object","required":["a"],"properties":{"a":{"type":"integer","minimum":3}}}}],"tool_choice":{"type":"any"},"stream":true}`,
		`{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"x"}],"stop_sequences":["run"],"output_config":{"format":{"type":"json_schema","schema":{"type":"array","items":{"enum":[1,"a"]}}}}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"anyOf":[{"type":"string"},{"type":"null"}]}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"n":2,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object","properties":{"b":{"type":"boolean"}}}}},"stop":"lab","n":3,"logprobs":true,"top_logprobs":2}`,
	)
}
