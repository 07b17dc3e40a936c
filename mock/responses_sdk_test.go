package mock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ratelab/ratelab/mock"
)

// responsesParams is conv as a Responses request: the system prompt as
// instructions, a single turn as a string input and several as a list of
// message items.
func (c conversation) responsesParams(maxTokens int64) responses.ResponseNewParams {
	p := responses.ResponseNewParams{Model: sdkOpenAIModel, MaxOutputTokens: openai.Int(maxTokens)}
	if c.system != "" {
		p.Instructions = openai.String(c.system)
	}
	if len(c.turns) == 1 {
		p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String(c.turns[0])}
		return p
	}
	var items responses.ResponseInputParam
	for i, s := range c.turns {
		role := responses.EasyInputMessageRoleUser
		if i%2 == 1 {
			role = responses.EasyInputMessageRoleAssistant
		}
		items = append(items, responses.ResponseInputItemParamOfMessage(s, role))
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	return p
}

// readResponseStream reads a Responses stream to its end, validating each
// event's JSON against the OpenAPI schema, and returns the text of its
// output_text deltas, the final response event and the virtual time of the
// last delta.
func readResponseStream(t *testing.T, stream interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
	Close() error
}, start time.Time) (text string, final responses.ResponseStreamEventUnion, lastDelta time.Duration) {
	t.Helper()
	defer stream.Close()
	var b strings.Builder
	for stream.Next() {
		ev := stream.Current()
		if def, ok := streamEventSchemas[ev.Type]; ok {
			validate(t, def, []byte(ev.RawJSON()))
		} else {
			t.Errorf("event type %q: not one the mock sends", ev.Type)
		}
		switch ev.Type {
		case "response.output_text.delta":
			b.WriteString(ev.AsResponseOutputTextDelta().Delta)
			lastDelta = time.Since(start)
		case "response.completed", "response.incomplete", "response.failed":
			final = ev
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return b.String(), final, lastDelta
}

// TestSDKResponses: openai-go's Responses.New and Responses.NewStreaming,
// unchanged, against the mock: the JSON answer's OutputText is the filler,
// the streamed deltas accumulate to the same text as the final
// response.completed event's response and the JSON answer, usage counts the
// documented estimate, and the stream's last token arrives exactly when the
// JSON answer does.
func TestSDKResponses(t *testing.T) {
	for _, conv := range conversations {
		t.Run(conv.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, sdkLatency+"output: {tokens: {fixed: 23}}\n")
				c := h.openai()
				ctx := t.Context()
				const n = 23
				params := conv.responsesParams(64)
				wantIn := promptTokens(conv.texts()...)
				want := mock.Filler(n)

				start := time.Now()
				r, err := c.Responses.New(ctx, params)
				if err != nil {
					t.Fatalf("Responses.New: %v", err)
				}
				jsonTook := time.Since(start)
				validate(t, "Response", []byte(r.RawJSON()))
				if got := r.OutputText(); got != want {
					t.Errorf("Responses.New: OutputText = %q, want %q", got, want)
				}
				if r.Status != responses.ResponseStatusCompleted || r.Model != sdkOpenAIModel || !strings.HasPrefix(r.ID, "resp_") {
					t.Errorf("Responses.New: status/model/id = %q/%q/%q, want completed/%s/resp_…", r.Status, r.Model, r.ID, sdkOpenAIModel)
				}
				if u := r.Usage; u.InputTokens != wantIn || u.OutputTokens != n || u.TotalTokens != wantIn+n {
					t.Errorf("Responses.New: usage input/output/total = %d/%d/%d, want %d/%d/%d",
						u.InputTokens, u.OutputTokens, u.TotalTokens, wantIn, n, wantIn+n)
				}
				if conv.system != "" && r.Instructions.OfString != conv.system {
					t.Errorf("Responses.New: instructions = %+v, want %q", r.Instructions, conv.system)
				}

				start = time.Now()
				text, final, lastDelta := readResponseStream(t, c.Responses.NewStreaming(ctx, params), start)
				if text != want {
					t.Errorf("stream: deltas = %q, want %q", text, want)
				}
				if final.Type != "response.completed" {
					t.Fatalf("stream: final event %q, want response.completed", final.Type)
				}
				fr := final.AsResponseCompleted().Response
				if fr.OutputText() != r.OutputText() || fr.Usage.OutputTokens != r.Usage.OutputTokens || fr.Usage.InputTokens != r.Usage.InputTokens {
					t.Errorf("stream: completed response text/usage = %q/%+v, want the JSON answer's %q/%+v", fr.OutputText(), fr.Usage, r.OutputText(), r.Usage)
				}
				if lastDelta != jsonTook {
					t.Errorf("stream: last delta after %v, the JSON answer after %v; want equal", lastDelta, jsonTook)
				}
			})
		})
	}
}

// TestSDKResponsesIncomplete: an answer cut by max_output_tokens is an
// incomplete Response with reason max_output_tokens, and its stream ends
// with response.incomplete: the SDK reports neither as an error.
func TestSDKResponsesIncomplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, sdkLatency)
		c := h.openai()
		params := conversations[0].responsesParams(16)
		r, err := c.Responses.New(t.Context(), params)
		if err != nil {
			t.Fatalf("Responses.New: %v", err)
		}
		if r.Status != responses.ResponseStatusIncomplete || r.IncompleteDetails.Reason != "max_output_tokens" || r.OutputText() != mock.Filler(16) {
			t.Errorf("status/reason/text = %q/%q/%q, want incomplete/max_output_tokens/%q", r.Status, r.IncompleteDetails.Reason, r.OutputText(), mock.Filler(16))
		}
		text, final, _ := readResponseStream(t, c.Responses.NewStreaming(t.Context(), params), time.Now())
		if final.Type != "response.incomplete" || text != mock.Filler(16) {
			t.Errorf("stream: final %q, text %q; want response.incomplete, %q", final.Type, text, mock.Filler(16))
		}
	})
}

// callResponses and callResponsesStream make one call through the
// Responses client and check its text.
func callResponses(h *harness, ctx context.Context, retries int) error {
	c := h.openai(ooption.WithMaxRetries(retries))
	r, err := c.Responses.New(ctx, conversations[0].responsesParams(16))
	if err != nil {
		return err
	}
	if r.OutputText() != mock.Filler(16) {
		return fmt.Errorf("OutputText = %q, want %q", r.OutputText(), mock.Filler(16))
	}
	return nil
}

func callResponsesStream(h *harness, ctx context.Context, retries int) error {
	c := h.openai(ooption.WithMaxRetries(retries))
	stream := c.Responses.NewStreaming(ctx, conversations[0].responsesParams(16))
	defer stream.Close()
	var text strings.Builder
	final := ""
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			final = ev.Type
		}
	}
	if err := stream.Err(); err != nil {
		return err
	}
	if final != "response.incomplete" || text.String() != mock.Filler(16) {
		return fmt.Errorf("stream ended with %q and text %q, want response.incomplete and %q", final, text.String(), mock.Filler(16))
	}
	return nil
}

// TestSDKResponsesRetryAfter429: a Responses call over the key's
// concurrency limit gets a 429 with retry-after; openai-go waits exactly the
// advertised 3 s (virtual time between its two attempts), retries with
// X-Stainless-Retry-Count 1 and succeeds, JSON and streaming alike.
func TestSDKResponsesRetryAfter429(t *testing.T) {
	for _, sdk := range []struct {
		name string
		call func(*harness, context.Context, int) error
	}{{"json", callResponses}, {"stream", callResponsesStream}} {
		t.Run(sdk.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 100ms}
limits: {max_concurrent: 1}
`)
				held := h.block(t, 25)
				if err := sdk.call(h, t.Context(), 2); err != nil {
					t.Fatalf("call: %v", err)
				}
				as := h.tape.log()
				if got := fmt.Sprint(statuses(as)); got != "[429 200]" {
					t.Fatalf("attempt statuses = %s, want [429 200]", got)
				}
				if as[0].path != "/v1/responses" || as[0].retryAfter != "3" {
					t.Errorf("first attempt path/retry-after = %q/%q, want /v1/responses/3", as[0].path, as[0].retryAfter)
				}
				if gap := as[1].at.Sub(as[0].at); gap != 3*time.Second {
					t.Errorf("gap between attempts = %v, want exactly 3s (the retry-after)", gap)
				}
				if as[0].retryCount != "0" || as[1].retryCount != "1" {
					t.Errorf("X-Stainless-Retry-Count = %q, %q; want 0, 1", as[0].retryCount, as[1].retryCount)
				}
				if st := <-held; st != 200 {
					t.Errorf("blocking request: status %d, want 200", st)
				}
				if st := h.srv.Stats(); st.Attempts != 3 || st.Throttled != 1 || st.EarlyRetries != 0 {
					t.Errorf("Stats attempts/throttled/early = %d/%d/%d, want 3/1/0", st.Attempts, st.Throttled, st.EarlyRetries)
				}
			})
		})
	}
}

// TestSDKResponsesErrors: the SDK reads the mock's errors as *openai.Error
// with OpenAI's type, code and param: a bad request is not retried, a 401
// neither, and overload (503) is retried twice.
func TestSDKResponsesErrors(t *testing.T) {
	cases := []struct {
		name      string
		cfg       string
		key       string
		params    func(responses.ResponseNewParams) responses.ResponseNewParams
		status    int
		code      string
		param     string
		wantTries string
	}{
		{"bad-request", "", sdkKey, func(p responses.ResponseNewParams) responses.ResponseNewParams {
			p.MaxOutputTokens = openai.Int(8)
			return p
		}, 400, "integer_below_min_value", "max_output_tokens", "[400]"},
		{"previous-response", "", sdkKey, func(p responses.ResponseNewParams) responses.ResponseNewParams {
			p.PreviousResponseID = openai.String("resp_123")
			return p
		}, 400, "previous_response_not_found", "previous_response_id", "[400]"},
		{"unauthorized", "", "sk-wrong", nil, 401, "invalid_api_key", "", "[401]"},
		{"overloaded", "faults: {overloaded: 1}\n", sdkKey, nil, 503, "overloaded", "", "[503 503 503]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, sdkLatency+tc.cfg)
				c := h.openai(ooption.WithAPIKey(tc.key))
				p := conversations[0].responsesParams(16)
				if tc.params != nil {
					p = tc.params(p)
				}
				_, err := c.Responses.New(t.Context(), p)
				var oe *openai.Error
				if !errors.As(err, &oe) {
					t.Fatalf("err = %v, want *openai.Error", err)
				}
				if oe.StatusCode != tc.status || oe.Code != tc.code || oe.Param != tc.param {
					t.Errorf("status/code/param = %d/%q/%q, want %d/%q/%q (%s)", oe.StatusCode, oe.Code, oe.Param, tc.status, tc.code, tc.param, oe.Message)
				}
				if got := fmt.Sprint(statuses(h.tape.log())); got != tc.wantTries {
					t.Errorf("attempts = %s, want %s", got, tc.wantTries)
				}
			})
		})
	}
}

// TestSDKResponsesTools: function tools, a forced tool choice and a
// json_schema text format go through the SDK's own param types; the mock
// accepts them and the Response repeats them. (The forced choice wins over
// the format: the answer is a function call; see TestSDKResponsesToolCall.)
func TestSDKResponsesTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, sdkLatency)
		c := h.openai()
		p := conversations[0].responsesParams(32)
		p.Tools = []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"city": map[string]any{"type": "string"}},
			"required":             []string{"city"},
			"additionalProperties": false,
		}, true)}
		p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}}
		p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("weather", map[string]any{
			"type": "object", "properties": map[string]any{"temp": map[string]any{"type": "number"}},
		})}
		r, err := c.Responses.New(t.Context(), p)
		if err != nil {
			t.Fatalf("Responses.New: %v", err)
		}
		validate(t, "Response", []byte(r.RawJSON()))
		if len(r.Tools) != 1 || r.Tools[0].Name != "get_weather" || !r.Tools[0].Strict {
			t.Errorf("tools = %s, want get_weather, strict", mustJSON(r.Tools))
		}
		if r.ToolChoice.Name != "get_weather" || r.Text.Format.Type != "json_schema" || r.Text.Format.Name != "weather" {
			t.Errorf("tool_choice/text.format = %s/%s, want get_weather/json_schema weather", r.ToolChoice.RawJSON(), r.Text.Format.RawJSON())
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// weatherToolParams is a Responses request offering get_weather (the
// weatherSchema of the content tests) with the given tool choice.
func weatherToolParams(t *testing.T, choice responses.ResponseNewParamsToolChoiceUnion) responses.ResponseNewParams {
	p := responses.ResponseNewParams{
		Model:           sdkOpenAIModel,
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")},
		MaxOutputTokens: openai.Int(2000),
		Tools:           []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", mustMap(t, weatherSchema), true)},
		ToolChoice:      choice,
	}
	return p
}

// accumulate reads a Responses stream to its end through the SDK's
// ResponseAccumulator, validating each event against the OpenAPI schema,
// and returns the reconstructed response (the terminal event's), the
// accumulator's snapshot of the first output item (built from the item and
// argument events), the concatenated deltas, and the virtual time of the
// stream's last delta.
func accumulate(t *testing.T, stream interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
	Close() error
}, start time.Time) (*responses.Response, responses.ResponseAccumulatedOutput, string, time.Duration) {
	t.Helper()
	defer stream.Close()
	var acc responses.ResponseAccumulator
	var last time.Duration
	var deltas strings.Builder
	for stream.Next() {
		ev := stream.Current()
		def, ok := streamEventSchemas[ev.Type]
		if !ok {
			t.Errorf("event type %q: not one the mock sends", ev.Type)
			continue
		}
		validate(t, def, []byte(ev.RawJSON()))
		if strings.HasSuffix(ev.Type, ".delta") {
			last = time.Since(start)
			deltas.WriteString(ev.Delta)
		}
		var se responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &se); err != nil {
			t.Fatalf("event %s: %v", ev.RawJSON(), err)
		}
		if err := acc.AddEvent(se); err != nil {
			t.Fatalf("ResponseAccumulator.AddEvent(%s): %v", ev.Type, err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	r, err := acc.ReconstructedResponse()
	if err != nil {
		t.Fatalf("ReconstructedResponse: %v", err)
	}
	snap := acc.Snapshot()
	if len(snap.Output) != 1 {
		t.Fatalf("accumulator: %d output items, want 1", len(snap.Output))
	}
	return r, snap.Output[0], deltas.String(), last
}

// TestSDKResponsesToolCall: a forced tool choice (named or required)
// through Responses.New answers with one function_call item whose
// arguments are valid against the tool's schema, counted as output tokens
// and paced like text; the stream, accumulated by the SDK's
// ResponseAccumulator, gives the same call with the same arguments, its
// last delta at the instant the JSON answer came.
func TestSDKResponsesToolCall(t *testing.T) {
	forced := map[string]responses.ResponseNewParamsToolChoiceUnion{
		"named":    {OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
		"required": {OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)},
	}
	for name, choice := range forced {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, contentConfig)
				c := h.openai()
				params := weatherToolParams(t, choice)
				start := time.Now()
				r, err := c.Responses.New(t.Context(), params)
				if err != nil {
					t.Fatalf("Responses.New: %v", err)
				}
				took := time.Since(start)
				validate(t, "Response", []byte(r.RawJSON()))
				if r.Status != responses.ResponseStatusCompleted || len(r.Output) != 1 || r.Output[0].Type != "function_call" {
					t.Fatalf("status %q, output %s; want completed with one function_call", r.Status, mustJSON(r.Output))
				}
				call := r.Output[0].AsFunctionCall()
				if call.Name != "get_weather" || !strings.HasPrefix(call.CallID, "call_") || r.OutputText() != "" {
					t.Errorf("call %s, text %q; want get_weather with a call_ id and no text", call.RawJSON(), r.OutputText())
				}
				checkValid(t, "arguments", weatherSchema, []byte(call.Arguments))
				want := int64(mock.EstimateTokens(call.Arguments))
				if r.Usage.OutputTokens != want {
					t.Errorf("output_tokens = %d, want %d", r.Usage.OutputTokens, want)
				}
				if wantT := time.Duration(want) * 5 * time.Millisecond; took != wantT {
					t.Errorf("took %v, want %v (5 ms a token)", took, wantT)
				}

				start = time.Now()
				sr, acc, deltas, last := accumulate(t, c.Responses.NewStreaming(t.Context(), params), start)
				if acc.Type != "function_call" || acc.Name != call.Name || acc.CallID != call.CallID || acc.Arguments != call.Arguments || deltas != call.Arguments {
					t.Errorf("stream: accumulated %+v, deltas %s; want the JSON answer's call %s", acc, deltas, call.RawJSON())
				}
				if len(sr.Output) != 1 || sr.Output[0].Type != "function_call" {
					t.Fatalf("stream: output %s, want one function_call", mustJSON(sr.Output))
				}
				if g := sr.Output[0].AsFunctionCall(); g.Name != call.Name || g.CallID != call.CallID || g.Arguments != call.Arguments {
					t.Errorf("stream: accumulated %s, want %s", g.RawJSON(), call.RawJSON())
				}
				if sr.Usage.OutputTokens != want {
					t.Errorf("stream: output_tokens = %d, want %d", sr.Usage.OutputTokens, want)
				}
				if last != took {
					t.Errorf("stream: last delta after %v, the JSON answer after %v; want equal", last, took)
				}
			})
		})
	}
}

// TestSDKResponsesStructuredOutput: text.format json_schema through the
// SDK's param types answers with a message whose OutputText is a JSON
// document valid against the schema, streamed or not; json_object answers
// a JSON object.
func TestSDKResponsesStructuredOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, contentConfig)
		c := h.openai()
		params := responses.ResponseNewParams{
			Model: sdkOpenAIModel,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Extract the invoice.")},
			Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
				OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "invoice", Strict: openai.Bool(true), Schema: mustMap(t, extractSchema)},
			}},
		}
		r, err := c.Responses.New(t.Context(), params)
		if err != nil {
			t.Fatalf("Responses.New: %v", err)
		}
		validate(t, "Response", []byte(r.RawJSON()))
		if r.Status != responses.ResponseStatusCompleted {
			t.Errorf("status %q, want completed", r.Status)
		}
		checkValid(t, "json_schema output", extractSchema, []byte(r.OutputText()))
		if want := int64(mock.EstimateTokens(r.OutputText())); r.Usage.OutputTokens != want {
			t.Errorf("output_tokens = %d, want %d", r.Usage.OutputTokens, want)
		}
		sr, acc, deltas, _ := accumulate(t, c.Responses.NewStreaming(t.Context(), params), time.Now())
		if sr.OutputText() != r.OutputText() || deltas != r.OutputText() || acc.Text[0] != r.OutputText() {
			t.Errorf("stream: output %q, deltas %q, accumulated %q; want the JSON answer's %q", sr.OutputText(), deltas, acc.Text[0], r.OutputText())
		}

		params.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}
		r, err = c.Responses.New(t.Context(), params)
		if err != nil {
			t.Fatalf("Responses.New json_object: %v", err)
		}
		validate(t, "Response", []byte(r.RawJSON()))
		var obj map[string]any
		if err := json.Unmarshal([]byte(r.OutputText()), &obj); err != nil {
			t.Errorf("json_object: output %q is not a JSON object: %v", r.OutputText(), err)
		}
	})
}
