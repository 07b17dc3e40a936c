package mock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithy "github.com/aws/smithy-go"

	"github.com/ratelab/ratelab/mock"
)

// These tests point aws-sdk-go-v2's bedrockruntime client, unchanged, at
// the mock (BaseEndpoint), in a synctest bubble: its SigV4 signing, its
// event stream decoder and its standard retryer run as against Bedrock.

const (
	bedrockAKID  = "AKIDRATELABTEST01"
	bedrockModel = "anthropic.claude-sonnet-4-5-20250929-v1:0"
	bedrockCRIS  = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
)

// inMemoryBody hands the transport the request body as a *bytes.Reader.
// The SDK's body is a reader net/http cannot tell is in memory, so the
// transport probes it and writes it after the headers; over the harness's
// synchronous net.Pipe the SDK's closing of the body when Do returns (a
// stream returns at its headers) then races the transport's write loop,
// which closes the connection under the stream. Over TCP the write
// returns long before the response: the race is the pipe's, not the
// SDK's, and this wrapper changes nothing the SDK sends.
type inMemoryBody struct{ next http.RoundTripper }

func (t inMemoryBody) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	return t.next.RoundTrip(req)
}

func (h *harness) bedrockHTTP() *http.Client {
	return &http.Client{Transport: inMemoryBody{h.hc.Transport}}
}

func (h *harness) bedrock(opts ...func(*bedrockruntime.Options)) *bedrockruntime.Client {
	cfg := aws.Config{
		Region:     "us-east-1",
		HTTPClient: h.bedrockHTTP(),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: bedrockAKID, SecretAccessKey: "not-checked", Source: "test"}, nil
		}),
	}
	return bedrockruntime.NewFromConfig(cfg, append([]func(*bedrockruntime.Options){func(o *bedrockruntime.Options) {
		o.BaseEndpoint = aws.String(sdkBaseURL)
	}}, opts...)...)
}

const bedrockLatency = `
seed: 7
api_keys: [` + bedrockAKID + `]
latency: {ttft: 300ms, ttft_per_input_token: 0s, per_token: 10ms, jitter: 0}
`

func userText(s string) types.Message {
	return types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: s}}}
}

// TestBedrockSDKConverse: Converse and ConverseStream answer the filler
// for maxTokens tokens with stopReason max_tokens, usage counting the
// documented estimate, metrics.latencyMs the exact virtual time of the
// response (ttft + n × per_token), for a foundation model id and an
// inference profile id (whose ":" the SDK escapes in the path).
func TestBedrockSDKConverse(t *testing.T) {
	for _, model := range []string{bedrockModel, bedrockCRIS} {
		t.Run(model, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, bedrockLatency)
				c := h.bedrock()
				in := &bedrockruntime.ConverseInput{
					ModelId:         aws.String(model),
					System:          []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be terse."}},
					Messages:        []types.Message{userText("Tell me about rate limits.")},
					InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(20)},
				}
				start := time.Now()
				out, err := c.Converse(t.Context(), in)
				if err != nil {
					t.Fatalf("Converse: %v", err)
				}
				if took := time.Since(start); took != 500*time.Millisecond {
					t.Errorf("Converse took %v, want exactly 500ms (300ms + 20 × 10ms)", took)
				}
				msg := out.Output.(*types.ConverseOutputMemberMessage).Value
				text := msg.Content[0].(*types.ContentBlockMemberText).Value
				if text != mock.Filler(20) {
					t.Errorf("text = %q, want the filler of 20 tokens", text)
				}
				wantIn := int32(promptTokens("Be terse.", "Tell me about rate limits."))
				if out.StopReason != types.StopReasonMaxTokens || *out.Usage.InputTokens != wantIn || *out.Usage.OutputTokens != 20 || *out.Usage.TotalTokens != wantIn+20 {
					t.Errorf("stopReason %q usage in=%d out=%d total=%d, want max_tokens %d 20 %d",
						out.StopReason, *out.Usage.InputTokens, *out.Usage.OutputTokens, *out.Usage.TotalTokens, wantIn, wantIn+20)
				}
				if *out.Metrics.LatencyMs != 500 {
					t.Errorf("latencyMs = %d, want 500", *out.Metrics.LatencyMs)
				}
				as := h.tape.log()
				if len(as) != 1 || as[0].path != "/model/"+model+"/converse" {
					t.Errorf("attempts = %+v, want one to /model/%s/converse", as, model)
				}

				// The same conversation streamed.
				start = time.Now()
				st, err := c.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
					ModelId: in.ModelId, System: in.System, Messages: in.Messages, InferenceConfig: in.InferenceConfig,
				})
				if err != nil {
					t.Fatalf("ConverseStream: %v", err)
				}
				var got strings.Builder
				var kinds []string
				var stop types.StopReason
				var usage *types.TokenUsage
				var latency int64
				for ev := range st.GetStream().Events() {
					switch e := ev.(type) {
					case *types.ConverseStreamOutputMemberMessageStart:
						kinds = append(kinds, "messageStart:"+string(e.Value.Role))
					case *types.ConverseStreamOutputMemberContentBlockDelta:
						got.WriteString(e.Value.Delta.(*types.ContentBlockDeltaMemberText).Value)
						if len(kinds) == 0 || kinds[len(kinds)-1] != "delta" {
							kinds = append(kinds, "delta")
						}
					case *types.ConverseStreamOutputMemberContentBlockStop:
						kinds = append(kinds, "contentBlockStop")
					case *types.ConverseStreamOutputMemberMessageStop:
						kinds, stop = append(kinds, "messageStop"), e.Value.StopReason
					case *types.ConverseStreamOutputMemberMetadata:
						kinds, usage, latency = append(kinds, "metadata"), e.Value.Usage, *e.Value.Metrics.LatencyMs
					default:
						t.Errorf("unexpected event %T", ev)
					}
				}
				if err := st.GetStream().Err(); err != nil {
					t.Fatalf("stream: %v", err)
				}
				st.GetStream().Close()
				if took := time.Since(start); took != 500*time.Millisecond {
					t.Errorf("stream took %v, want exactly 500ms", took)
				}
				if got.String() != text {
					t.Errorf("streamed text = %q, want the Converse text %q", got.String(), text)
				}
				if fmt.Sprint(kinds) != "[messageStart:assistant delta contentBlockStop messageStop metadata]" {
					t.Errorf("events = %v", kinds)
				}
				if stop != types.StopReasonMaxTokens || *usage.InputTokens != wantIn || *usage.OutputTokens != 20 || latency != 500 {
					t.Errorf("stream stop %q usage %d/%d latency %d, want max_tokens %d/20 500", stop, *usage.InputTokens, *usage.OutputTokens, latency, wantIn)
				}
			})
		})
	}
}

// bedrockErrorCode is the error code of an SDK error, or "".
func bedrockErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestBedrockSDKRetries: the SDK's standard retryer (3 attempts) against
// Bedrock's errors. A scripted ThrottlingException is retried after the
// throttle backoff (at most 1 s for the first retry: base 1 s × 2⁰ ×
// jitter) and the call succeeds; an rpm limit that outlasts the retries
// ends in *types.ThrottlingException after 3 attempts; a 503
// ServiceUnavailableException is retried; a ModelNotReadyException (429,
// not a throttle code, no retryable trait in the SDK) is not retried. No
// response carries retry-after.
func TestBedrockSDKRetries(t *testing.T) {
	cases := []struct {
		name     string
		yaml     string
		want     string // attempt statuses
		code     string // the final error's code; "" for success
		maxFirst time.Duration
	}{
		{"throttle-once", "faults: {script: [{attempts: 1, status: 429, retry_after: 5s}]}", "[429 200]", "", time.Second},
		{"rpm", "limits: {rpm: 1}", "[200 429 429 429]", "ThrottlingException", 0},
		{"unavailable", "faults: {script: [{attempts: 2, status: 503}]}", "[503 503 200]", "", 0},
		{"model-not-ready", "faults: {script: [{attempts: 1, status: 529}]}", "[429]", "ModelNotReadyException", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, "api_keys: ["+bedrockAKID+"]\nlatency: {ttft: 0s, per_token: 1ms}\n"+tc.yaml+"\n")
				c := h.bedrock()
				in := &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: []types.Message{userText("hi")},
					InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(5)}}
				calls := 1
				if tc.name == "rpm" {
					calls = 2
				}
				var err error
				for range calls {
					_, err = c.Converse(t.Context(), in)
				}
				if got := bedrockErrorCode(err); got != tc.code {
					t.Fatalf("error code = %q (%v), want %q", got, err, tc.code)
				}
				if tc.code == "ThrottlingException" {
					var te *types.ThrottlingException
					if !errors.As(err, &te) || !strings.Contains(te.ErrorMessage(), "Too many requests") {
						t.Errorf("err = %v, want *types.ThrottlingException saying Too many requests", err)
					}
				}
				if tc.code == "ModelNotReadyException" {
					var me *types.ModelNotReadyException
					if !errors.As(err, &me) {
						t.Errorf("err = %T, want *types.ModelNotReadyException", err)
					}
				}
				as := h.tape.log()
				if got := fmt.Sprint(statuses(as)); got != tc.want {
					t.Fatalf("attempt statuses = %v, want %v", got, tc.want)
				}
				for i, a := range as {
					if a.retryAfter != "" {
						t.Errorf("attempt %d: retry-after %q, want none (Bedrock sends none)", i, a.retryAfter)
					}
				}
				if tc.maxFirst > 0 {
					if gap := as[1].at.Sub(as[0].at); gap < 0 || gap > tc.maxFirst {
						t.Errorf("backoff before the retry = %v, want within [0, %v]", gap, tc.maxFirst)
					}
				}
			})
		})
	}
}

// TestBedrockSDKErrors: a field out of range is a ValidationException
// naming it, an unknown model is the ValidationException Bedrock answers,
// an access key id the server does not know is UnrecognizedClientException
// (403), none retried; the raw 429 carries x-amzn-ErrorType and a
// {"message"} body.
func TestBedrockSDKErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, bedrockLatency+"limits: {rpm: 1}\n")
		c := h.bedrock()
		_, err := c.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: []types.Message{userText("hi")},
			InferenceConfig: &types.InferenceConfiguration{Temperature: aws.Float32(1.5)}})
		var ve *types.ValidationException
		if !errors.As(err, &ve) || !strings.Contains(ve.ErrorMessage(), "inferenceConfig.temperature") {
			t.Errorf("temperature 1.5: err = %v, want a ValidationException naming inferenceConfig.temperature", err)
		}
		_, err = c.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String("anthropic.claude-nonesuch-v1:0"), Messages: []types.Message{userText("hi")}})
		if !errors.As(err, &ve) || !strings.Contains(ve.ErrorMessage(), "The provided model identifier is invalid") {
			t.Errorf("unknown model: err = %v, want ValidationException: The provided model identifier is invalid", err)
		}
		other := bedrockruntime.NewFromConfig(aws.Config{Region: "us-east-1", HTTPClient: h.bedrockHTTP(),
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKIDUNKNOWN", SecretAccessKey: "x"}, nil
			})}, func(o *bedrockruntime.Options) { o.BaseEndpoint = aws.String(sdkBaseURL) })
		_, err = other.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: []types.Message{userText("hi")}})
		if bedrockErrorCode(err) != "UnrecognizedClientException" {
			t.Errorf("unknown access key: err = %v, want UnrecognizedClientException", err)
		}
		if got := fmt.Sprint(statuses(h.tape.log())); got != "[400 400 403]" {
			t.Errorf("statuses = %v, want [400 400 403]: none retried", got)
		}

		// The raw 429, as the service sends it.
		if _, err := c.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: []types.Message{userText("hi")}}); err != nil {
			t.Fatalf("first call: %v", err)
		}
		var raw *http.Response
		_, err = c.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: []types.Message{userText("hi")}},
			func(o *bedrockruntime.Options) {
				o.RetryMaxAttempts = 1
				o.HTTPClient = clientFunc(func(req *http.Request) (*http.Response, error) {
					resp, err := h.bedrockHTTP().Do(req)
					if err == nil {
						b, _ := io.ReadAll(resp.Body)
						resp.Body = io.NopCloser(strings.NewReader(string(b)))
						raw = &http.Response{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: io.NopCloser(strings.NewReader(string(b)))}
					}
					return resp, err
				})
			})
		if raw == nil || raw.StatusCode != 429 {
			t.Fatalf("raw 429: %v %v", raw, err)
		}
		if et := raw.Header.Get("x-amzn-ErrorType"); et != "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/" {
			t.Errorf("x-amzn-ErrorType = %q", et)
		}
		var body map[string]string
		b, _ := io.ReadAll(raw.Body)
		if json.Unmarshal(b, &body) != nil || len(body) != 1 || !strings.HasPrefix(body["message"], "Too many requests, please wait before trying again.") {
			t.Errorf("429 body = %s, want {\"message\": \"Too many requests, …\"}", b)
		}
		if raw.Header.Get("x-amzn-RequestId") == "" || raw.Header.Get("Retry-After") != "" || raw.Header.Get("Openai-Version") != "" {
			t.Errorf("429 headers = %v, want x-amzn-RequestId and no retry-after nor other APIs' headers", raw.Header)
		}
	})
}

type clientFunc func(*http.Request) (*http.Response, error)

func (f clientFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }

const bedrockWeather = `{"type":"object","additionalProperties":false,"required":["city","unit"],"properties":{"city":{"type":"string","minLength":1},"unit":{"enum":["c","f"]},"days":{"type":"integer","minimum":1,"maximum":7}}}`

// TestBedrockSDKToolsAndStructured: toolConfig with a forced tool gives a
// toolUse block whose input is valid against the tool's inputSchema, and
// stopReason tool_use; streamed, a contentBlockStart names the tool and
// the toolUse deltas concatenate to the same input. outputConfig's JSON
// schema gives a text answer valid against it.
func TestBedrockSDKToolsAndStructured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, bedrockLatency)
		c := h.bedrock()
		var schema map[string]any
		json.Unmarshal([]byte(bedrockWeather), &schema)
		tc := &types.ToolConfiguration{
			Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
				Name: aws.String("get_weather"), InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)},
			}}},
			ToolChoice: &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String("get_weather")}},
		}
		msgs := []types.Message{userText("Weather in Paris?")}
		out, err := c.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: msgs, ToolConfig: tc,
			InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(400)}})
		if err != nil {
			t.Fatalf("Converse: %v", err)
		}
		tu := out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberToolUse).Value
		input, err := tu.Input.MarshalSmithyDocument()
		if err != nil {
			t.Fatal(err)
		}
		if out.StopReason != types.StopReasonToolUse || *tu.Name != "get_weather" || !strings.HasPrefix(*tu.ToolUseId, "tooluse_") {
			t.Errorf("stopReason %q tool %q id %q, want tool_use get_weather tooluse_…", out.StopReason, *tu.Name, *tu.ToolUseId)
		}
		checkValid(t, "toolUse input", bedrockWeather, input)

		st, err := c.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(bedrockModel), Messages: msgs, ToolConfig: tc,
			InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(400)}})
		if err != nil {
			t.Fatalf("ConverseStream: %v", err)
		}
		var streamed strings.Builder
		var started string
		var stop types.StopReason
		for ev := range st.GetStream().Events() {
			switch e := ev.(type) {
			case *types.ConverseStreamOutputMemberContentBlockStart:
				started = *e.Value.Start.(*types.ContentBlockStartMemberToolUse).Value.Name
			case *types.ConverseStreamOutputMemberContentBlockDelta:
				streamed.WriteString(*e.Value.Delta.(*types.ContentBlockDeltaMemberToolUse).Value.Input)
			case *types.ConverseStreamOutputMemberMessageStop:
				stop = e.Value.StopReason
			}
		}
		if err := st.GetStream().Err(); err != nil {
			t.Fatal(err)
		}
		st.GetStream().Close()
		var a, b any
		json.Unmarshal(input, &a)
		if json.Unmarshal([]byte(streamed.String()), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) || started != "get_weather" || stop != types.StopReasonToolUse {
			t.Errorf("stream: tool %q input %s stop %q, want get_weather %s tool_use", started, streamed.String(), stop, input)
		}

		out, err = c.Converse(t.Context(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: msgs,
			InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(400)},
			OutputConfig: &types.OutputConfig{TextFormat: &types.OutputFormat{Type: types.OutputFormatTypeJsonSchema,
				Structure: &types.OutputFormatStructureMemberJsonSchema{Value: types.JsonSchemaDefinition{Schema: aws.String(bedrockWeather), Name: aws.String("weather")}}}},
		})
		if err != nil {
			t.Fatalf("structured: %v", err)
		}
		text := out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value
		checkValid(t, "structured output", bedrockWeather, []byte(text))
		if out.StopReason != types.StopReasonEndTurn {
			t.Errorf("structured: stopReason %q, want end_turn", out.StopReason)
		}
	})
}

// TestBedrockSDKStreamError: the stream_error fault ends a ConverseStream
// with a serviceUnavailableException message, which the SDK's stream
// reports as *types.ServiceUnavailableException after the deltas before it.
func TestBedrockSDKStreamError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, bedrockLatency+"faults: {stream_error: 1}\n")
		st, err := h.bedrock().ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(bedrockModel),
			Messages: []types.Message{userText("hi")}, InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(10)}})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for ev := range st.GetStream().Events() {
			if d, ok := ev.(*types.ConverseStreamOutputMemberContentBlockDelta); ok {
				text.WriteString(d.Value.Delta.(*types.ContentBlockDeltaMemberText).Value)
			}
		}
		var se *types.ServiceUnavailableException
		if err := st.GetStream().Err(); !errors.As(err, &se) {
			t.Errorf("stream Err = %v, want *types.ServiceUnavailableException", err)
		}
		st.GetStream().Close()
		if text.String() != mock.Filler(5) {
			t.Errorf("text before the error = %q, want the first 5 tokens", text.String())
		}
	})
}

// TestBedrockSDKInvokeModel: InvokeModel and InvokeModelWithResponseStream
// take the Messages API's body with anthropic_version bedrock-2023-05-31
// and answer a Message (model named as the Messages API names it) and the
// Messages stream's events as base64 chunks, message_stop carrying
// amazon-bedrock-invocationMetrics; a body without anthropic_version is a
// ValidationException.
func TestBedrockSDKInvokeModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, bedrockLatency)
		c := h.bedrock()
		body := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":8,"messages":[{"role":"user","content":"Hello"}]}`
		out, err := c.InvokeModel(t.Context(), &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockCRIS), Body: []byte(body),
			ContentType: aws.String("application/json"), Accept: aws.String("application/json")})
		if err != nil {
			t.Fatalf("InvokeModel: %v", err)
		}
		var m struct {
			Model      string `json:"model"`
			StopReason string `json:"stop_reason"`
			Content    []struct {
				Text string `json:"text"`
			} `json:"content"`
			Usage struct {
				InputTokens, OutputTokens int
			} `json:"usage"`
		}
		if err := json.Unmarshal(out.Body, &m); err != nil {
			t.Fatalf("body %s: %v", out.Body, err)
		}
		if m.Model != "claude-haiku-4-5-20251001" || m.StopReason != "max_tokens" || m.Content[0].Text != mock.Filler(8) || *out.ContentType != "application/json" {
			t.Errorf("InvokeModel = %s (%s)", out.Body, *out.ContentType)
		}

		st, err := c.InvokeModelWithResponseStream(t.Context(), &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(bedrockCRIS), Body: []byte(body)})
		if err != nil {
			t.Fatalf("InvokeModelWithResponseStream: %v", err)
		}
		var types_ []string
		var text strings.Builder
		var metrics json.RawMessage
		for ev := range st.GetStream().Events() {
			chunk := ev.(*types.ResponseStreamMemberChunk).Value.Bytes
			var e struct {
				Type  string `json:"type"`
				Delta struct {
					Text string `json:"text"`
				} `json:"delta"`
				Metrics json.RawMessage `json:"amazon-bedrock-invocationMetrics"`
			}
			if err := json.Unmarshal(chunk, &e); err != nil {
				t.Fatalf("chunk %s: %v", chunk, err)
			}
			types_ = append(types_, e.Type)
			if e.Type == "content_block_delta" {
				text.WriteString(e.Delta.Text)
			}
			if e.Metrics != nil {
				metrics = e.Metrics
			}
		}
		if err := st.GetStream().Err(); err != nil {
			t.Fatal(err)
		}
		st.GetStream().Close()
		if types_[0] != "message_start" || types_[len(types_)-1] != "message_stop" || text.String() != mock.Filler(8) {
			t.Errorf("chunks %v text %q", types_, text.String())
		}
		if want := fmt.Sprintf(`{"inputTokenCount":%d,"outputTokenCount":8,"invocationLatency":380}`, promptTokens("Hello")); string(metrics) != want {
			t.Errorf("invocation metrics = %s, want %s", metrics, want)
		}

		_, err = c.InvokeModel(t.Context(), &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel),
			Body: []byte(`{"max_tokens":8,"messages":[{"role":"user","content":"Hello"}]}`)})
		var ve *types.ValidationException
		if !errors.As(err, &ve) || !strings.Contains(ve.ErrorMessage(), "anthropic_version") {
			t.Errorf("no anthropic_version: err = %v, want a ValidationException naming it", err)
		}
	})
}

// bedrockWithSecret is a client signing with bedrockAKID and secret.
func (h *harness) bedrockWithSecret(secret string) *bedrockruntime.Client {
	return bedrockruntime.NewFromConfig(aws.Config{Region: "eu-west-1", HTTPClient: h.bedrockHTTP(),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: bedrockAKID, SecretAccessKey: secret}, nil
		})}, func(o *bedrockruntime.Options) { o.BaseEndpoint = aws.String(sdkBaseURL) })
}

// TestBedrockSDKSigV4Verified: with the key's secret configured
// (aws_secret_keys), the mock verifies the SDK's signature for real: the
// right secret is served, Converse and ConverseStream (whose path has the
// model id's escaped ":"), and a wrong one is a 403
// InvalidSignatureException, which the SDK does not retry.
func TestBedrockSDKSigV4Verified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, bedrockLatency+"aws_secret_keys: {"+bedrockAKID+": the-secret}\n")
		in := &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockCRIS), Messages: []types.Message{userText("hi")},
			InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(3)}}
		if _, err := h.bedrockWithSecret("the-secret").Converse(t.Context(), in); err != nil {
			t.Fatalf("right secret: %v", err)
		}
		st, err := h.bedrockWithSecret("the-secret").ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: in.ModelId, Messages: in.Messages, InferenceConfig: in.InferenceConfig})
		if err != nil {
			t.Fatalf("right secret, stream: %v", err)
		}
		for range st.GetStream().Events() {
		}
		if err := st.GetStream().Err(); err != nil {
			t.Fatalf("right secret, stream: %v", err)
		}
		st.GetStream().Close()
		_, err = h.bedrockWithSecret("a-wrong-secret").Converse(t.Context(), in)
		if bedrockErrorCode(err) != "InvalidSignatureException" {
			t.Errorf("wrong secret: err = %v, want InvalidSignatureException", err)
		}
		if got := fmt.Sprint(statuses(h.tape.log())); got != "[200 200 403]" {
			t.Errorf("statuses = %v, want [200 200 403]", got)
		}
	})
}
