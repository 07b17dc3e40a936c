package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ratelab/ratelab/internal/tokenest"
	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/eventstream"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// Amazon Bedrock Runtime (docs/bedrock.md): Converse and ConverseStream,
// and InvokeModel and InvokeModelWithResponseStream for Anthropic models,
// whose bodies are the Messages API's (mock/internal/anthropic). The model
// is named by the path, not the body; one Format value per request carries
// it (Spec.Routes' Resolve).

// op is a Bedrock Runtime operation.
type op uint8

const (
	opConverse       op = iota // POST /model/{modelId}/converse
	opConverseStream           // POST /model/{modelId}/converse-stream
	opInvoke                   // POST /model/{modelId}/invoke
	opInvokeStream             // POST /model/{modelId}/invoke-with-response-stream
)

// Format is the Bedrock Runtime wire format of one operation on one model
// id, as the path names it; the zero Format answers the core's own errors
// under /model/ (Spec.OwnsRequest).
type Format struct {
	op    op
	model string
}

func (Format) Name() string            { return "bedrock" }
func (Format) RequestIDHeader() string { return "X-Amzn-Requestid" }

// OverloadStatus is ServiceUnavailableException's 503.
func (Format) OverloadStatus() int { return http.StatusServiceUnavailable }

func (Format) Spec() *wire.Spec { return &spec }

// valueAmazonEventStream is the Content-Type of the streaming operations.
var valueAmazonEventStream = []string{"application/vnd.amazon.eventstream"}

// spec: Bedrock sends none of the other APIs' headers (x-amzn-RequestId
// only), no rate-limit headers and no retry hints; it names Anthropic's
// models by its own ids, authenticates by SigV4 (auth.go) and counts
// attempts by amz-sdk-request.
var spec = wire.Spec{
	Routes:            routes,
	OwnsRequest:       func(req *http.Request) bool { return strings.HasPrefix(req.URL.Path, "/model/") },
	IDPrefix:          "msg_", // an InvokeModel answer is the Messages API's Message
	Catalog:           wire.CatalogAnthropic,
	ModelAliases:      func(id string) []string { return []string{id, BaseModel(id)} },
	Authenticate:      authenticate,
	AttemptIndex:      attemptIndex,
	StreamContentType: valueAmazonEventStream,
	QuotaMessage: func(limit, dim string) string {
		return fmt.Sprintf("You exceeded your current quota, please check your plan and billing details: this API key's quota of %s is spent (mock quota.%s).", limit, dim)
	},
	// WriteError turns the code into Bedrock's ValidationException.
	ModelNotFound: func(id string) wire.APIError {
		return wire.APIError{Msg: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", id), Code: "model_not_found"}
	},
}

// routes are Bedrock Runtime's model operations. The model id may be a
// foundation model (anthropic.claude-sonnet-4-5-20250929-v1:0), an
// inference profile (us.anthropic.…) or an ARN whose "/" the SDKs escape as
// %2F, so it matches any run of characters.
var routes = []wire.Route{
	{Method: http.MethodPost, Path: "/model/{modelId:.+}/converse", Resolve: bind(opConverse)},
	{Method: http.MethodPost, Path: "/model/{modelId:.+}/converse-stream", Resolve: bind(opConverseStream)},
	{Method: http.MethodPost, Path: "/model/{modelId:.+}/invoke", Resolve: bind(opInvoke)},
	{Method: http.MethodPost, Path: "/model/{modelId:.+}/invoke-with-response-stream", Resolve: bind(opInvokeStream)},
}

// bind serves operation o for the model id the path names.
func bind(o op) func(req *http.Request, vars map[string]string, env *wire.Env) wire.Target {
	return func(_ *http.Request, vars map[string]string, _ *wire.Env) wire.Target {
		return wire.Target{Format: Format{op: o, model: vars["modelId"]}, Endpoint: wire.EndpointModel}
	}
}

// geoPrefix matches the geography prefix of a cross-region inference
// profile (us., eu., apac., global., …) and versionSuffix the version
// suffix of a foundation model id (-v1:0, -v2).
var (
	geoPrefix     = regexp.MustCompile(`^(us|eu|apac|global|us-gov|jp|au|ca)\.`)
	versionSuffix = regexp.MustCompile(`-v\d+(:\d+)?$`)
)

// BaseModel is the model a Bedrock model id names: an ARN's last
// path segment, without an inference profile's geography; an Anthropic
// model's id is then the Messages API's name (anthropic.claude-haiku-4-5-
// 20251001-v1:0 is claude-haiku-4-5-20251001), which the mock's catalogue
// knows; another provider's id is returned as it is (amazon.nova-pro-v1:0).
func BaseModel(id string) string {
	if strings.HasPrefix(id, "arn:") {
		if i := strings.LastIndexByte(id, '/'); i >= 0 {
			id = id[i+1:]
		}
	}
	id = geoPrefix.ReplaceAllString(id, "")
	if rest, ok := strings.CutPrefix(id, "anthropic."); ok {
		return versionSuffix.ReplaceAllString(rest, "")
	}
	return id
}

// isAnthropicModel reports whether a Bedrock model id is Anthropic's.
func isAnthropicModel(id string) bool {
	if strings.HasPrefix(id, "arn:") {
		if i := strings.LastIndexByte(id, '/'); i >= 0 {
			id = id[i+1:]
		}
	}
	return strings.HasPrefix(geoPrefix.ReplaceAllString(id, ""), "anthropic.")
}

func (b Format) Decode(body []byte, defaultMax int, c *wire.Call) error {
	if b.model == "" {
		return wire.Invalid("modelId", "field required")
	}
	switch b.op {
	case opInvoke, opInvokeStream:
		return b.decodeInvoke(body, c)
	}
	return b.decodeConverse(body, defaultMax, c)
}

// converseRequest is the part of a Converse request the mock reads.
type converseRequest struct {
	Messages        []wire.Message  `json:"messages"`
	System          json.RawMessage `json:"system"`
	InferenceConfig *struct {
		MaxTokens     *int64   `json:"maxTokens"`
		Temperature   *float64 `json:"temperature"`
		TopP          *float64 `json:"topP"`
		StopSequences []string `json:"stopSequences"`
	} `json:"inferenceConfig"`
	ToolConfig   json.RawMessage `json:"toolConfig"`
	OutputConfig json.RawMessage `json:"outputConfig"`
	// AdditionalModelRequestFields go to the model as they are; an
	// Anthropic model reads output_config.format from them, the Messages
	// API's structured output, which the AI SDK sends.
	AdditionalModelRequestFields json.RawMessage `json:"additionalModelRequestFields"`
}

func (b Format) decodeConverse(body []byte, defaultMax int, c *wire.Call) error {
	var req converseRequest
	if err := wire.DecodeRequest(body, &req); err != nil {
		return wire.DescribeBodyError(body, err)
	}
	*c = wire.Call{Model: b.model, Stream: b.op == opConverseStream, MaxTokens: defaultMax}
	if err := wire.CheckMessages(req.Messages); err != nil {
		return err
	}
	for i, m := range req.Messages {
		switch {
		case m.Role == "":
			return wire.Invalid(wire.MsgPath(i, "role"), "field required")
		case m.Role != "user" && m.Role != "assistant":
			return wire.Invalid(wire.MsgPath(i, "role"), "want user or assistant, got %q", m.Role)
		}
		n, err := blocksLen(m.Content, wire.MsgPath(i, "content"))
		if err != nil {
			return err
		}
		c.Input += wire.MessageTokens(n)
	}
	if req.Messages[0].Role != "user" {
		return wire.Invalid("messages.0.role", "A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	if wire.Present(req.System) {
		n, err := blocksLen(req.System, "system")
		if err != nil {
			return err
		}
		c.Input += wire.MessageTokens(n)
	}
	var stops []string
	if ic := req.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil {
			n, err := wire.CheckMaxTokens("inferenceConfig.maxTokens", *ic.MaxTokens)
			if err != nil {
				return err
			}
			c.MaxTokens = n
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"inferenceConfig.temperature", ic.Temperature}, {"inferenceConfig.topP", ic.TopP}} {
			if f.v != nil && (*f.v < 0 || *f.v > 1) {
				return wire.Invalid(f.name, "must be in [0, 1], got %g", *f.v)
			}
		}
		for i, s := range ic.StopSequences {
			if s == "" {
				return wire.Invalid("inferenceConfig.stopSequences."+strconv.Itoa(i), "must not be empty")
			}
		}
		stops = ic.StopSequences
	}
	if wire.Present(req.ToolConfig) {
		c.Input += tokenest.Bytes(req.ToolConfig)
	}
	return decodeContent(&req, stops, c)
}

// blocksLen is the length in characters of a Converse content
// array (a message's content or the system prompt): a text block counts
// its text, any other block (image, document, toolUse, toolResult,
// cachePoint, …) the length of its JSON.
func blocksLen(raw json.RawMessage, path string) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || wire.IsNull(raw) {
		return 0, wire.Invalid(path, "field required")
	}
	if raw[0] != '[' {
		return 0, wire.Invalid(path, "want an array of content blocks")
	}
	var blocks []json.RawMessage
	if err := wire.DecodeRequest(raw, &blocks); err != nil {
		return 0, wire.Invalid(path, "want an array of content blocks")
	}
	n := 0
	for j, blk := range blocks {
		var tb struct {
			Text *string `json:"text"`
		}
		if err := wire.DecodeRequest(blk, &tb); err != nil {
			return 0, wire.Invalid(path+"."+strconv.Itoa(j), "want a content block object")
		}
		if tb.Text != nil {
			n += utf8.RuneCountInString(*tb.Text)
			continue
		}
		if len(bytes.TrimSpace(blk)) <= 2 { // {}
			return 0, wire.Invalid(path+"."+strconv.Itoa(j), "a content block needs one member: text, image, document, toolUse, toolResult, …")
		}
		n += utf8.RuneCount(blk)
	}
	return n, nil
}

// decodeContent reads Converse's content fields: toolConfig
// (tools[].toolSpec with inputSchema.json, toolChoice auto, any or tool),
// inferenceConfig.stopSequences and outputConfig.textFormat, Bedrock's
// structured output (a JSON schema sent as a string).
func decodeContent(req *converseRequest, stops []string, c *wire.Call) error {
	var extra struct {
		OutputConfig *struct {
			Format json.RawMessage `json:"format"`
		} `json:"output_config"`
	}
	if wire.Present(req.AdditionalModelRequestFields) {
		if err := json.Unmarshal(req.AdditionalModelRequestFields, &extra); err != nil {
			return wire.Invalid("additionalModelRequestFields", "want an object: %v", err)
		}
	}
	anthropicFormat := extra.OutputConfig != nil && wire.Present(extra.OutputConfig.Format)
	if !wire.Present(req.ToolConfig) && !wire.Present(req.OutputConfig) && stops == nil && !anthropicFormat {
		return nil
	}
	cr := &wire.ContentReq{Choices: 1, Stops: stops, IDPrefix: "tooluse_",
		Seed: wire.ContentSeed(c.Model, req.Messages, req.System)}
	if wire.Present(req.ToolConfig) {
		var tc struct {
			Tools []struct {
				ToolSpec *struct {
					Name        string `json:"name"`
					InputSchema struct {
						JSON json.RawMessage `json:"json"`
					} `json:"inputSchema"`
				} `json:"toolSpec"`
			} `json:"tools"`
			ToolChoice *struct {
				Auto *struct{} `json:"auto"`
				Any  *struct{} `json:"any"`
				Tool *struct {
					Name string `json:"name"`
				} `json:"tool"`
			} `json:"toolChoice"`
		}
		if err := json.Unmarshal(req.ToolConfig, &tc); err != nil {
			return wire.Invalid("toolConfig", "want {tools: [{toolSpec: {name, inputSchema: {json}}}], toolChoice}: %v", err)
		}
		if len(tc.Tools) == 0 {
			return wire.Invalid("toolConfig.tools", "at least one tool is required")
		}
		for i, t := range tc.Tools {
			p := "toolConfig.tools." + strconv.Itoa(i)
			if t.ToolSpec == nil {
				continue // a cachePoint or a system tool: nothing the mock calls
			}
			if t.ToolSpec.Name == "" {
				return wire.Invalid(p+".toolSpec.name", "field required")
			}
			if !wire.Present(t.ToolSpec.InputSchema.JSON) {
				return wire.Invalid(p+".toolSpec.inputSchema.json", "field required")
			}
			cs, err := wire.CompileSchema(t.ToolSpec.InputSchema.JSON, p+".toolSpec.inputSchema.json")
			if err != nil {
				return err
			}
			cr.Tools = append(cr.Tools, wire.Tool{Name: t.ToolSpec.Name, Schema: cs})
		}
		if ch := tc.ToolChoice; ch != nil {
			switch {
			case ch.Tool != nil:
				cr.Mode, cr.Named = wire.ToolsNamed, ch.Tool.Name
			case ch.Any != nil:
				cr.Mode = wire.ToolsAny
			case ch.Auto != nil:
			default:
				return wire.Invalid("toolConfig.toolChoice", "want one of auto, any or tool")
			}
		}
	}
	if wire.Present(req.OutputConfig) {
		var oc struct {
			TextFormat *struct {
				Type      string `json:"type"`
				Structure struct {
					JSONSchema *struct {
						Schema *string `json:"schema"`
					} `json:"jsonSchema"`
				} `json:"structure"`
			} `json:"textFormat"`
		}
		if err := json.Unmarshal(req.OutputConfig, &oc); err != nil {
			return wire.Invalid("outputConfig", "want {textFormat: {type: json_schema, structure: {jsonSchema: {schema}}}}: %v", err)
		}
		if f := oc.TextFormat; f != nil {
			const p = "outputConfig.textFormat"
			if f.Type != "json_schema" {
				return wire.Invalid(p+".type", "want json_schema, got %q", f.Type)
			}
			js := f.Structure.JSONSchema
			if js == nil || js.Schema == nil {
				return wire.Invalid(p+".structure.jsonSchema.schema", "field required")
			}
			if !json.Valid([]byte(*js.Schema)) {
				return wire.Invalid(p+".structure.jsonSchema.schema", "want a JSON schema as a string of JSON")
			}
			cs, err := wire.CompileSchema(json.RawMessage(*js.Schema), p+".structure.jsonSchema.schema")
			if err != nil {
				return err
			}
			cr.Format = cs
		}
	}
	if anthropicFormat && cr.Format == nil {
		const p = "additionalModelRequestFields.output_config.format"
		var f struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(extra.OutputConfig.Format, &f); err != nil || f.Type != "json_schema" {
			return wire.Invalid(p+".type", "want json_schema")
		}
		if !wire.Present(f.Schema) {
			return wire.Invalid(p+".schema", "field required")
		}
		cs, err := wire.CompileSchema(f.Schema, p+".schema")
		if err != nil {
			return err
		}
		cr.Format = cs
	}
	if err := cr.CheckTools("toolConfig.toolChoice", "toolConfig.toolChoice.tool.name", "toolConfig.tools"); err != nil {
		return err
	}
	c.Content = cr
	return nil
}

// anthropicVersion is the anthropic_version an InvokeModel body for
// an Anthropic model carries.
const anthropicVersion = "bedrock-2023-05-31"

// decodeInvoke decodes an InvokeModel body for an Anthropic model: the
// Messages API's body without model and stream (the path says both), with
// anthropic_version bedrock-2023-05-31.
func (b Format) decodeInvoke(body []byte, c *wire.Call) error {
	if !isAnthropicModel(b.model) {
		return wire.Invalid("modelId", "the mock serves InvokeModel for Anthropic models (anthropic.…) only, got %q; use Converse", b.model)
	}
	var head struct {
		Version *string         `json:"anthropic_version"`
		Model   json.RawMessage `json:"model"`
		Stream  json.RawMessage `json:"stream"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return wire.DescribeJSONError(err)
	}
	switch {
	case head.Version == nil:
		return wire.Invalid("anthropic_version", "field required: want %q", anthropicVersion)
	case *head.Version != anthropicVersion:
		return wire.Invalid("anthropic_version", "want %q, got %q", anthropicVersion, *head.Version)
	case head.Model != nil:
		return wire.Invalid("model", "extraneous key [model] is not permitted: the path names the model")
	case head.Stream != nil:
		return wire.Invalid("stream", "extraneous key [stream] is not permitted: invoke-with-response-stream streams")
	}
	// The Messages decoder, given the model the path names.
	open := bytes.IndexByte(body, '{')
	spliced := make([]byte, 0, len(body)+len(b.model)+16)
	spliced = append(spliced, `{"model":`...)
	spliced = wire.AppendJSONString(spliced, b.model)
	if rest := bytes.TrimSpace(body[open+1:]); len(rest) > 0 && rest[0] != '}' {
		spliced = append(spliced, ',')
	}
	spliced = append(spliced, body[open+1:]...)
	if err := anthropic.DecodeMessages(spliced, true, c); err != nil {
		return err
	}
	// Claude's ranges on Bedrock, as on the Messages API: checked here,
	// always, not under strictness only (Spec.CheckSampling is nil).
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"temperature", c.Temperature}, {"top_p", c.TopP}} {
		if e := wire.CheckRange(f.v, f.name, 1, true); f.v != nil && e != nil {
			return wire.Invalid(f.name, "%s", strings.TrimPrefix(e.Msg, f.name+": "))
		}
	}
	c.Temperature, c.TopP = nil, nil
	if c.FirstRole != "user" {
		return wire.Invalid("messages.0.role", "A conversation must start with a user message, got %q.", c.FirstRole)
	}
	c.Stream = b.op == opInvokeStream
	return nil
}

// Bedrock's error types by status (the x-amzn-ErrorType header and the
// Go SDK's types/errors.go). A 404 for an unknown model is the
// ValidationException Bedrock answers for it; a 529 (a scripted Anthropic
// overload) is ModelNotReadyException, Bedrock's 429 for a model that
// cannot serve yet; 401 is one of the signature errors, all 403.
func errorOf(status int, e wire.APIError) (int, string, string) {
	msg := e.Msg
	switch status {
	case http.StatusUnauthorized:
		switch {
		case strings.HasPrefix(msg, "Missing Authentication Token"):
			return http.StatusForbidden, "MissingAuthenticationTokenException", msg
		case strings.HasPrefix(msg, "The security token"):
			return http.StatusForbidden, "UnrecognizedClientException", msg
		case strings.HasPrefix(msg, "The request signature"):
			return http.StatusForbidden, "InvalidSignatureException", msg
		}
		return http.StatusBadRequest, "IncompleteSignatureException", msg
	case http.StatusForbidden:
		return status, "AccessDeniedException", msg
	case http.StatusNotFound:
		if e.Code == "model_not_found" {
			return http.StatusBadRequest, "ValidationException", "The provided model identifier is invalid. (" + msg + ")"
		}
		return status, "ResourceNotFoundException", msg
	case http.StatusRequestTimeout:
		return status, "ModelTimeoutException", msg
	case http.StatusRequestEntityTooLarge:
		return http.StatusBadRequest, "ValidationException", "Input is too long for requested model. (" + msg + ")"
	case http.StatusTooManyRequests:
		switch {
		case e.Limit == wire.LimitQuota:
			return status, "ThrottlingException", "Too many tokens per day, please wait before trying again. (" + msg + ")"
		case e.Limit == wire.LimitRPM || e.Limit == wire.LimitConcurrency:
			return status, "ThrottlingException", "Too many requests, please wait before trying again. (" + msg + ")"
		case e.Limit == wire.LimitITPM || e.Limit == wire.LimitOTPM || e.Limit == wire.LimitTPM:
			return status, "ThrottlingException", "Too many tokens, please wait before trying again. (" + msg + ")"
		}
		return status, "ThrottlingException", msg
	case 529:
		return http.StatusTooManyRequests, "ModelNotReadyException", "Model is not ready for inference. Wait and try your request again. (" + msg + ")"
	case http.StatusServiceUnavailable:
		return status, "ServiceUnavailableException", "Bedrock is unable to process your request. (" + msg + ")"
	case http.StatusFailedDependency:
		return status, "ModelErrorException", msg
	}
	if status >= 500 {
		return status, "InternalServerException", msg
	}
	return status, "ValidationException", msg
}

// errorTypeSuffix follows the error type in x-amzn-ErrorType, as
// the service sends it; the SDKs keep what precedes the colon.
const errorTypeSuffix = ":http://internal.amazon.com/coral/com.amazon.bedrock/"

func (Format) WriteError(w http.ResponseWriter, status int, e wire.APIError, _ string) {
	status, typ, msg := errorOf(status, e)
	h := w.Header()
	// Bedrock tells a client nothing of when to retry.
	delete(h, "Retry-After")
	delete(h, "Retry-After-Ms")
	delete(h, "X-Should-Retry")
	h["X-Amzn-Errortype"] = []string{typ + errorTypeSuffix}
	wire.WriteJSONBody(w, status, struct {
		Message string `json:"message"`
	}{msg})
}

// AppendLimitHeaders appends nothing: Bedrock sends no rate-limit headers.
func (Format) AppendLimitHeaders(b []byte, _ *wire.HeaderList, _ wire.Snapshot, _ time.Time) []byte {
	return b
}

// latencyMs is metrics.latencyMs: the time from the request's arrival to
// now, the response's end, in milliseconds.
func latencyMs(r *wire.Result) int64 {
	return max(0, r.Clock.Now().Sub(r.Created).Milliseconds())
}

// outputTokensOf is the usage's output tokens.
func outputTokensOf(c *wire.Call, r *wire.Result) int {
	if c.Content != nil {
		return c.Content.Ans[0].Emitted(r)
	}
	return r.N
}

// appendUsage appends the usage object of Converse and
// ConverseStream's metadata event.
func appendUsage(b []byte, c *wire.Call, r *wire.Result) []byte {
	in, out := c.Input-c.CacheRead-c.CacheWrite, outputTokensOf(c, r)
	b = append(b, `{"inputTokens":`...)
	b = strconv.AppendInt(b, int64(in), 10)
	b = append(b, `,"outputTokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"totalTokens":`...)
	b = strconv.AppendInt(b, int64(c.Input+out), 10)
	b = append(b, `,"cacheReadInputTokens":`...)
	b = strconv.AppendInt(b, int64(c.CacheRead), 10)
	b = append(b, `,"cacheWriteInputTokens":`...)
	b = strconv.AppendInt(b, int64(c.CacheWrite), 10)
	return append(b, '}')
}

// appendToolUseHead appends {"toolUseId": …, "name": …} of choice 0's call.
func appendToolUseHead(b []byte, cr *wire.ContentReq) []byte {
	b = append(b, `"toolUseId":`...)
	b = wire.AppendJSONString(b, cr.IDs[0])
	b = append(b, `,"name":`...)
	return wire.AppendJSONString(b, cr.Tools[cr.ToolIdx].Name)
}

func (b Format) Body(buf []byte, c *wire.Call, r *wire.Result) ([]byte, error) {
	if b.op == opInvoke {
		cc := *c
		cc.Model = BaseModel(c.Model) // the Messages API's name, as Bedrock reports it
		return anthropic.Format{}.Body(buf, &cc, r)
	}
	buf = append(buf, `{"output":{"message":{"role":"assistant","content":[`...)
	switch {
	case c.Content == nil:
		buf = append(buf, `{"text":"`...)
		buf = wire.AppendText(buf, r, 0, r.N)
		buf = append(buf, `"}`...)
	case c.Content.Ans[0].Tool:
		ch := &c.Content.Ans[0]
		input := []byte("{}") // a call cut before its end
		if ch.Whole(r) {
			input = ch.Doc
		}
		buf = append(buf, `{"toolUse":{`...)
		buf = appendToolUseHead(buf, c.Content)
		buf = append(buf, `,"input":`...)
		buf = append(buf, input...)
		buf = append(buf, `}}`...)
	default:
		buf = append(buf, `{"text":"`...)
		buf = c.Content.Ans[0].AppendTokens(buf, 0, r.N)
		buf = append(buf, `"}`...)
	}
	buf = append(buf, `]}},"stopReason":"`...)
	buf = append(buf, anthropic.StopReason(c, r)...)
	buf = append(buf, `","usage":`...)
	buf = appendUsage(buf, c, r)
	buf = append(buf, `,"metrics":{"latencyMs":`...)
	buf = strconv.AppendInt(buf, latencyMs(r), 10)
	return append(buf, `}}`...), nil
}

// The ConverseStream events: messageStart, contentBlockStart (for a tool
// call only; a text block starts with its first delta), contentBlockDelta,
// contentBlockStop, messageStop and metadata, each an eventstream event
// whose payload is the member's JSON.

func (b Format) StreamStart(buf []byte, c *wire.Call, r *wire.Result) []byte {
	if b.op == opInvokeStream {
		return rechunk(buf, anthropic.Format{}.StreamStart(nil, b.invokeCall(c), r), c, r)
	}
	buf = eventstream.AppendEvent(buf, "messageStart", func(p []byte) []byte {
		return append(p, `{"role":"assistant"}`...)
	})
	if c.Content != nil && c.Content.Ans[0].Tool {
		buf = eventstream.AppendEvent(buf, "contentBlockStart", func(p []byte) []byte {
			p = append(p, `{"contentBlockIndex":0,"start":{"toolUse":{`...)
			p = appendToolUseHead(p, c.Content)
			return append(p, `}}}`...)
		})
	}
	return buf
}

func (b Format) StreamDelta(buf []byte, c *wire.Call, r *wire.Result, from, to int) []byte {
	if b.op == opInvokeStream {
		return rechunk(buf, anthropic.Format{}.StreamDelta(nil, c, r, from, to), c, r)
	}
	if c.Content != nil && from >= c.Content.Ans[0].N {
		return buf
	}
	return eventstream.AppendEvent(buf, "contentBlockDelta", func(p []byte) []byte {
		p = append(p, `{"contentBlockIndex":0,"delta":{`...)
		switch {
		case c.Content == nil:
			p = append(p, `"text":"`...)
			p = wire.AppendText(p, r, from, to)
			p = append(p, '"')
		case c.Content.Ans[0].Tool:
			p = append(p, `"toolUse":{"input":"`...)
			p = c.Content.Ans[0].AppendTokens(p, from, to)
			p = append(p, `"}`...)
		default:
			p = append(p, `"text":"`...)
			p = c.Content.Ans[0].AppendTokens(p, from, to)
			p = append(p, '"')
		}
		return append(p, `}}`...)
	})
}

func (b Format) StreamEnd(buf []byte, c *wire.Call, r *wire.Result) []byte {
	if b.op == opInvokeStream {
		return rechunk(buf, anthropic.Format{}.StreamEnd(nil, c, r), c, r)
	}
	buf = eventstream.AppendEvent(buf, "contentBlockStop", func(p []byte) []byte {
		return append(p, `{"contentBlockIndex":0}`...)
	})
	buf = eventstream.AppendEvent(buf, "messageStop", func(p []byte) []byte {
		p = append(p, `{"stopReason":"`...)
		p = append(p, anthropic.StopReason(c, r)...)
		return append(p, `"}`...)
	})
	return eventstream.AppendEvent(buf, "metadata", func(p []byte) []byte {
		p = append(p, `{"usage":`...)
		p = appendUsage(p, c, r)
		p = append(p, `,"metrics":{"latencyMs":`...)
		p = strconv.AppendInt(p, latencyMs(r), 10)
		return append(p, `}}`...)
	})
}

// StreamError is the overload of a stream cut by the stream_error fault:
// a serviceUnavailableException message, the stream's last.
func (Format) StreamError(buf []byte, _ *wire.Call, _ *wire.Result) []byte {
	return eventstream.AppendException(buf, "serviceUnavailableException", "Bedrock is unable to process your request. (the mock's stream_error fault)")
}

// invokeCall is c with the model named as the Messages API names it, for
// the Anthropic events of InvokeModelWithResponseStream.
func (b Format) invokeCall(c *wire.Call) *wire.Call {
	cc := *c
	cc.Model = BaseModel(c.Model)
	return &cc
}

// rechunk turns the Messages API's SSE frames in sse into the chunk events
// of InvokeModelWithResponseStream: each event's JSON, base64-encoded in
// {"bytes": …}. Pings are dropped; message_stop carries the
// amazon-bedrock-invocationMetrics Bedrock adds to it.
func rechunk(buf, sse []byte, c *wire.Call, r *wire.Result) []byte {
	for len(sse) > 0 {
		frame := sse
		if i := bytes.Index(sse, []byte("\n\n")); i >= 0 {
			frame, sse = sse[:i], sse[i+2:]
		} else {
			sse = nil
		}
		_, data, ok := bytes.Cut(frame, []byte("data: "))
		if !ok || bytes.HasPrefix(frame, []byte("event: ping")) {
			continue
		}
		if bytes.Equal(data, []byte(`{"type":"message_stop"}`)) {
			data = fmt.Appendf(nil, `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":%d,"outputTokenCount":%d,"invocationLatency":%d}}`,
				c.Input, outputTokensOf(c, r), latencyMs(r))
		}
		buf = eventstream.AppendEvent(buf, "chunk", func(p []byte) []byte {
			p = append(p, `{"bytes":"`...)
			p = base64.StdEncoding.AppendEncode(p, data)
			return append(p, `"}`...)
		})
	}
	return buf
}
