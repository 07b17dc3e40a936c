package mock

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

	"github.com/gorilla/mux"
)

// Amazon Bedrock Runtime (docs/bedrock.md): Converse and ConverseStream,
// and InvokeModel and InvokeModelWithResponseStream for Anthropic models,
// whose bodies are the Messages API's (anthropic.go). The model is named
// by the path, not the body; one bedrock value per request carries it.

// bedrockOp is a Bedrock Runtime operation.
type bedrockOp uint8

const (
	opConverse       bedrockOp = iota // POST /model/{modelId}/converse
	opConverseStream                  // POST /model/{modelId}/converse-stream
	opInvoke                          // POST /model/{modelId}/invoke
	opInvokeStream                    // POST /model/{modelId}/invoke-with-response-stream
)

// bedrock is the Bedrock Runtime wire format of one operation on one
// model id, as the path names it.
type bedrock struct {
	op    bedrockOp
	model string
}

func (bedrock) name() string            { return "bedrock" }
func (bedrock) requestIDHeader() string { return "X-Amzn-Requestid" }

// overloadStatus is ServiceUnavailableException's 503.
func (bedrock) overloadStatus() int { return http.StatusServiceUnavailable }

// streamContentType is the Content-Type of the streaming operations.
func (bedrock) streamContentType() []string { return valueAmazonEventStream }

var valueAmazonEventStream = []string{"application/vnd.amazon.eventstream"}

// isBedrock reports whether wr is Bedrock Runtime's.
func isBedrock(wr wire) bool {
	_, ok := wr.(bedrock)
	return ok
}

// bedrockRoutes are Bedrock Runtime's model operations. The model id may
// be a foundation model (anthropic.claude-sonnet-4-5-20250929-v1:0), an
// inference profile (us.anthropic.…) or an ARN whose "/" the SDKs escape
// as %2F, so it matches any run of characters.
func (s *Server) bedrockRoutes() []route {
	post := []string{http.MethodPost}
	return []route{
		{"/model/{modelId:.+}/converse", post, s.bedrockHandler(opConverse)},
		{"/model/{modelId:.+}/converse-stream", post, s.bedrockHandler(opConverseStream)},
		{"/model/{modelId:.+}/invoke", post, s.bedrockHandler(opInvoke)},
		{"/model/{modelId:.+}/invoke-with-response-stream", post, s.bedrockHandler(opInvokeStream)},
	}
}

func (s *Server) bedrockHandler(op bedrockOp) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		model := mux.Vars(req)["modelId"]
		if len(s.cfg.AWSSecretKeys) > 0 {
			req = verifySigV4(req, s.cfg.AWSSecretKeys)
		}
		s.serveModel(w, req, bedrock{op: op, model: model})
	}
}

// bedrockGeo matches the geography prefix of a cross-region inference
// profile (us., eu., apac., global., …) and bedrockVersion the version
// suffix of a foundation model id (-v1:0, -v2).
var (
	bedrockGeo     = regexp.MustCompile(`^(us|eu|apac|global|us-gov|jp|au|ca)\.`)
	bedrockVersion = regexp.MustCompile(`-v\d+(:\d+)?$`)
)

// bedrockBaseModel is the model a Bedrock model id names: an ARN's last
// path segment, without an inference profile's geography; an Anthropic
// model's id is then the Messages API's name (anthropic.claude-haiku-4-5-
// 20251001-v1:0 is claude-haiku-4-5-20251001), which the mock's catalogue
// knows; another provider's id is returned as it is (amazon.nova-pro-v1:0).
func bedrockBaseModel(id string) string {
	if strings.HasPrefix(id, "arn:") {
		if i := strings.LastIndexByte(id, '/'); i >= 0 {
			id = id[i+1:]
		}
	}
	id = bedrockGeo.ReplaceAllString(id, "")
	if rest, ok := strings.CutPrefix(id, "anthropic."); ok {
		return bedrockVersion.ReplaceAllString(rest, "")
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
	return strings.HasPrefix(bedrockGeo.ReplaceAllString(id, ""), "anthropic.")
}

func (b bedrock) decode(body []byte, defaultMax int, c *call) error {
	if b.model == "" {
		return invalid("modelId", "field required")
	}
	switch b.op {
	case opInvoke, opInvokeStream:
		return b.decodeInvoke(body, c)
	}
	return b.decodeConverse(body, defaultMax, c)
}

// bedrockConverseRequest is the part of a Converse request the mock reads.
type bedrockConverseRequest struct {
	Messages        []message       `json:"messages"`
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

func (b bedrock) decodeConverse(body []byte, defaultMax int, c *call) error {
	var req bedrockConverseRequest
	if err := decodeRequest(body, &req); err != nil {
		return describeBodyError(body, err)
	}
	*c = call{model: b.model, stream: b.op == opConverseStream, maxTokens: defaultMax}
	if err := checkMessages(req.Messages); err != nil {
		return err
	}
	for i, m := range req.Messages {
		switch {
		case m.Role == "":
			return invalid(msgPath(i, "role"), "field required")
		case m.Role != "user" && m.Role != "assistant":
			return invalid(msgPath(i, "role"), "want user or assistant, got %q", m.Role)
		}
		n, err := bedrockBlocksLen(m.Content, msgPath(i, "content"))
		if err != nil {
			return err
		}
		c.input += messageTokens(n)
	}
	if req.Messages[0].Role != "user" {
		return invalid("messages.0.role", "A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	if present(req.System) {
		n, err := bedrockBlocksLen(req.System, "system")
		if err != nil {
			return err
		}
		c.input += messageTokens(n)
	}
	var stops []string
	if ic := req.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil {
			n, err := checkMaxTokens("inferenceConfig.maxTokens", *ic.MaxTokens)
			if err != nil {
				return err
			}
			c.maxTokens = n
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"inferenceConfig.temperature", ic.Temperature}, {"inferenceConfig.topP", ic.TopP}} {
			if f.v != nil && (*f.v < 0 || *f.v > 1) {
				return invalid(f.name, "must be in [0, 1], got %g", *f.v)
			}
		}
		for i, s := range ic.StopSequences {
			if s == "" {
				return invalid("inferenceConfig.stopSequences."+strconv.Itoa(i), "must not be empty")
			}
		}
		stops = ic.StopSequences
	}
	if present(req.ToolConfig) {
		c.input += (utf8.RuneCount(req.ToolConfig) + 3) / 4
	}
	return decodeBedrockContent(&req, stops, c)
}

// bedrockBlocksLen is the length in characters of a Converse content
// array (a message's content or the system prompt): a text block counts
// its text, any other block (image, document, toolUse, toolResult,
// cachePoint, …) the length of its JSON.
func bedrockBlocksLen(raw json.RawMessage, path string) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return 0, invalid(path, "field required")
	}
	if raw[0] != '[' {
		return 0, invalid(path, "want an array of content blocks")
	}
	var blocks []json.RawMessage
	if err := decodeRequest(raw, &blocks); err != nil {
		return 0, invalid(path, "want an array of content blocks")
	}
	n := 0
	for j, blk := range blocks {
		var tb struct {
			Text *string `json:"text"`
		}
		if err := decodeRequest(blk, &tb); err != nil {
			return 0, invalid(path+"."+strconv.Itoa(j), "want a content block object")
		}
		if tb.Text != nil {
			n += utf8.RuneCountInString(*tb.Text)
			continue
		}
		if len(bytes.TrimSpace(blk)) <= 2 { // {}
			return 0, invalid(path+"."+strconv.Itoa(j), "a content block needs one member: text, image, document, toolUse, toolResult, …")
		}
		n += utf8.RuneCount(blk)
	}
	return n, nil
}

// decodeBedrockContent reads Converse's content fields: toolConfig
// (tools[].toolSpec with inputSchema.json, toolChoice auto, any or tool),
// inferenceConfig.stopSequences and outputConfig.textFormat, Bedrock's
// structured output (a JSON schema sent as a string).
func decodeBedrockContent(req *bedrockConverseRequest, stops []string, c *call) error {
	var extra struct {
		OutputConfig *struct {
			Format json.RawMessage `json:"format"`
		} `json:"output_config"`
	}
	if present(req.AdditionalModelRequestFields) {
		if err := json.Unmarshal(req.AdditionalModelRequestFields, &extra); err != nil {
			return invalid("additionalModelRequestFields", "want an object: %v", err)
		}
	}
	anthropicFormat := extra.OutputConfig != nil && present(extra.OutputConfig.Format)
	if !present(req.ToolConfig) && !present(req.OutputConfig) && stops == nil && !anthropicFormat {
		return nil
	}
	cr := &contentReq{choices: 1, stops: stops, idPrefix: "tooluse_",
		seed: contentSeed(c.model, req.Messages, req.System)}
	if present(req.ToolConfig) {
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
			return invalid("toolConfig", "want {tools: [{toolSpec: {name, inputSchema: {json}}}], toolChoice}: %v", err)
		}
		if len(tc.Tools) == 0 {
			return invalid("toolConfig.tools", "at least one tool is required")
		}
		for i, t := range tc.Tools {
			p := "toolConfig.tools." + strconv.Itoa(i)
			if t.ToolSpec == nil {
				continue // a cachePoint or a system tool: nothing the mock calls
			}
			if t.ToolSpec.Name == "" {
				return invalid(p+".toolSpec.name", "field required")
			}
			if !present(t.ToolSpec.InputSchema.JSON) {
				return invalid(p+".toolSpec.inputSchema.json", "field required")
			}
			cs, err := compileSchema(t.ToolSpec.InputSchema.JSON, p+".toolSpec.inputSchema.json")
			if err != nil {
				return err
			}
			cr.tools = append(cr.tools, tool{name: t.ToolSpec.Name, schema: cs})
		}
		if ch := tc.ToolChoice; ch != nil {
			switch {
			case ch.Tool != nil:
				cr.mode, cr.named = toolsNamed, ch.Tool.Name
			case ch.Any != nil:
				cr.mode = toolsAny
			case ch.Auto != nil:
			default:
				return invalid("toolConfig.toolChoice", "want one of auto, any or tool")
			}
		}
	}
	if present(req.OutputConfig) {
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
			return invalid("outputConfig", "want {textFormat: {type: json_schema, structure: {jsonSchema: {schema}}}}: %v", err)
		}
		if f := oc.TextFormat; f != nil {
			const p = "outputConfig.textFormat"
			if f.Type != "json_schema" {
				return invalid(p+".type", "want json_schema, got %q", f.Type)
			}
			js := f.Structure.JSONSchema
			if js == nil || js.Schema == nil {
				return invalid(p+".structure.jsonSchema.schema", "field required")
			}
			if !json.Valid([]byte(*js.Schema)) {
				return invalid(p+".structure.jsonSchema.schema", "want a JSON schema as a string of JSON")
			}
			cs, err := compileSchema(json.RawMessage(*js.Schema), p+".structure.jsonSchema.schema")
			if err != nil {
				return err
			}
			cr.format = cs
		}
	}
	if anthropicFormat && cr.format == nil {
		const p = "additionalModelRequestFields.output_config.format"
		var f struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(extra.OutputConfig.Format, &f); err != nil || f.Type != "json_schema" {
			return invalid(p+".type", "want json_schema")
		}
		if !present(f.Schema) {
			return invalid(p+".schema", "field required")
		}
		cs, err := compileSchema(f.Schema, p+".schema")
		if err != nil {
			return err
		}
		cr.format = cs
	}
	if err := cr.checkTools("toolConfig.toolChoice", "toolConfig.toolChoice.tool.name", "toolConfig.tools"); err != nil {
		return err
	}
	c.content = cr
	return nil
}

// bedrockAnthropicVersion is the anthropic_version an InvokeModel body for
// an Anthropic model carries.
const bedrockAnthropicVersion = "bedrock-2023-05-31"

// decodeInvoke decodes an InvokeModel body for an Anthropic model: the
// Messages API's body without model and stream (the path says both), with
// anthropic_version bedrock-2023-05-31.
func (b bedrock) decodeInvoke(body []byte, c *call) error {
	if !isAnthropicModel(b.model) {
		return invalid("modelId", "the mock serves InvokeModel for Anthropic models (anthropic.…) only, got %q; use Converse", b.model)
	}
	var head struct {
		Version *string         `json:"anthropic_version"`
		Model   json.RawMessage `json:"model"`
		Stream  json.RawMessage `json:"stream"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return describeJSONError(err)
	}
	switch {
	case head.Version == nil:
		return invalid("anthropic_version", "field required: want %q", bedrockAnthropicVersion)
	case *head.Version != bedrockAnthropicVersion:
		return invalid("anthropic_version", "want %q, got %q", bedrockAnthropicVersion, *head.Version)
	case head.Model != nil:
		return invalid("model", "extraneous key [model] is not permitted: the path names the model")
	case head.Stream != nil:
		return invalid("stream", "extraneous key [stream] is not permitted: invoke-with-response-stream streams")
	}
	// The Messages decoder, given the model the path names.
	open := bytes.IndexByte(body, '{')
	spliced := make([]byte, 0, len(body)+len(b.model)+16)
	spliced = append(spliced, `{"model":`...)
	spliced = appendJSONString(spliced, b.model)
	if rest := bytes.TrimSpace(body[open+1:]); len(rest) > 0 && rest[0] != '}' {
		spliced = append(spliced, ',')
	}
	spliced = append(spliced, body[open+1:]...)
	if err := decodeAnthropic(spliced, true, c); err != nil {
		return err
	}
	// Claude's ranges on Bedrock, as on the Messages API: checked here,
	// since checkSampling holds only the anthropic wire to them.
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"temperature", c.temperature}, {"top_p", c.topP}} {
		if e := checkRange(f.v, f.name, 1, true); f.v != nil && e != nil {
			return invalid(f.name, "%s", strings.TrimPrefix(e.msg, f.name+": "))
		}
	}
	c.temperature, c.topP = nil, nil
	if c.firstRole != "user" {
		return invalid("messages.0.role", "A conversation must start with a user message, got %q.", c.firstRole)
	}
	c.stream = b.op == opInvokeStream
	return nil
}

// Bedrock's error types by status (the x-amzn-ErrorType header and the
// Go SDK's types/errors.go). A 404 for an unknown model is the
// ValidationException Bedrock answers for it; a 529 (a scripted Anthropic
// overload) is ModelNotReadyException, Bedrock's 429 for a model that
// cannot serve yet; 401 is one of the signature errors, all 403.
func bedrockError(status int, e apiError) (int, string, string) {
	msg := e.msg
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
		if e.code == "model_not_found" {
			return http.StatusBadRequest, "ValidationException", "The provided model identifier is invalid. (" + msg + ")"
		}
		return status, "ResourceNotFoundException", msg
	case http.StatusRequestTimeout:
		return status, "ModelTimeoutException", msg
	case http.StatusRequestEntityTooLarge:
		return http.StatusBadRequest, "ValidationException", "Input is too long for requested model. (" + msg + ")"
	case http.StatusTooManyRequests:
		switch {
		case e.limit == LimitQuota:
			return status, "ThrottlingException", "Too many tokens per day, please wait before trying again. (" + msg + ")"
		case e.limit == LimitRPM || e.limit == LimitConcurrency:
			return status, "ThrottlingException", "Too many requests, please wait before trying again. (" + msg + ")"
		case e.limit == LimitITPM || e.limit == LimitOTPM || e.limit == LimitTPM:
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

// bedrockErrorTypeSuffix follows the error type in x-amzn-ErrorType, as
// the service sends it; the SDKs keep what precedes the colon.
const bedrockErrorTypeSuffix = ":http://internal.amazon.com/coral/com.amazon.bedrock/"

func (bedrock) writeError(w http.ResponseWriter, status int, e apiError, _ string) {
	status, typ, msg := bedrockError(status, e)
	h := w.Header()
	// Bedrock tells a client nothing of when to retry.
	delete(h, "Retry-After")
	delete(h, "Retry-After-Ms")
	delete(h, "X-Should-Retry")
	h["X-Amzn-Errortype"] = []string{typ + bedrockErrorTypeSuffix}
	writeJSONBody(w, status, struct {
		Message string `json:"message"`
	}{msg})
}

// appendLimitHeaders appends nothing: Bedrock sends no rate-limit headers.
func (bedrock) appendLimitHeaders(b []byte, _ *headerList, _ snapshot, _ time.Time) []byte {
	return b
}

// latencyMs is metrics.latencyMs: the time from the request's arrival to
// now, the response's end, in milliseconds.
func latencyMs(r *result) int64 {
	return max(0, r.clock.Now().Sub(r.created).Milliseconds())
}

// bedrockStopReason is stopReason: end_turn, max_tokens, tool_use or
// stop_sequence, the Messages API's values.
func bedrockStopReason(c *call, r *result) string {
	if c.content != nil {
		return c.content.ans[0].anthropicStopReason(r)
	}
	return anthropicStopReason(r)
}

// outputTokensOf is the usage's output tokens.
func outputTokensOf(c *call, r *result) int {
	if c.content != nil {
		return c.content.ans[0].emitted(r)
	}
	return r.n
}

// appendBedrockUsage appends the usage object of Converse and
// ConverseStream's metadata event.
func appendBedrockUsage(b []byte, c *call, r *result) []byte {
	in, out := c.input-c.cacheRead-c.cacheWrite, outputTokensOf(c, r)
	b = append(b, `{"inputTokens":`...)
	b = strconv.AppendInt(b, int64(in), 10)
	b = append(b, `,"outputTokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"totalTokens":`...)
	b = strconv.AppendInt(b, int64(c.input+out), 10)
	b = append(b, `,"cacheReadInputTokens":`...)
	b = strconv.AppendInt(b, int64(c.cacheRead), 10)
	b = append(b, `,"cacheWriteInputTokens":`...)
	b = strconv.AppendInt(b, int64(c.cacheWrite), 10)
	return append(b, '}')
}

// appendToolUseID appends {"toolUseId": …, "name": …} of choice 0's call.
func appendToolUseHead(b []byte, cr *contentReq) []byte {
	b = append(b, `"toolUseId":`...)
	b = appendJSONString(b, cr.ids[0])
	b = append(b, `,"name":`...)
	return appendJSONString(b, cr.tools[cr.toolIdx].name)
}

func (b bedrock) body(buf []byte, c *call, r *result) ([]byte, error) {
	if b.op == opInvoke {
		cc := *c
		cc.model = bedrockBaseModel(c.model) // the Messages API's name, as Bedrock reports it
		return anthropic{}.body(buf, &cc, r)
	}
	buf = append(buf, `{"output":{"message":{"role":"assistant","content":[`...)
	switch {
	case c.content == nil:
		buf = append(buf, `{"text":"`...)
		buf = appendText(buf, r, 0, r.n)
		buf = append(buf, `"}`...)
	case c.content.ans[0].tool:
		ch := &c.content.ans[0]
		input := []byte("{}") // a call cut before its end
		if ch.whole(r) {
			input = ch.doc
		}
		buf = append(buf, `{"toolUse":{`...)
		buf = appendToolUseHead(buf, c.content)
		buf = append(buf, `,"input":`...)
		buf = append(buf, input...)
		buf = append(buf, `}}`...)
	default:
		buf = append(buf, `{"text":"`...)
		buf = c.content.ans[0].appendTokens(buf, 0, r.n)
		buf = append(buf, `"}`...)
	}
	buf = append(buf, `]}},"stopReason":"`...)
	buf = append(buf, bedrockStopReason(c, r)...)
	buf = append(buf, `","usage":`...)
	buf = appendBedrockUsage(buf, c, r)
	buf = append(buf, `,"metrics":{"latencyMs":`...)
	buf = strconv.AppendInt(buf, latencyMs(r), 10)
	return append(buf, `}}`...), nil
}

// The ConverseStream events: messageStart, contentBlockStart (for a tool
// call only; a text block starts with its first delta), contentBlockDelta,
// contentBlockStop, messageStop and metadata, each an eventstream event
// whose payload is the member's JSON.

func (b bedrock) streamStart(buf []byte, c *call, r *result) []byte {
	if b.op == opInvokeStream {
		return rechunk(buf, anthropic{}.streamStart(nil, b.invokeCall(c), r), c, r)
	}
	buf = appendEvent(buf, "messageStart", func(p []byte) []byte {
		return append(p, `{"role":"assistant"}`...)
	})
	if c.content != nil && c.content.ans[0].tool {
		buf = appendEvent(buf, "contentBlockStart", func(p []byte) []byte {
			p = append(p, `{"contentBlockIndex":0,"start":{"toolUse":{`...)
			p = appendToolUseHead(p, c.content)
			return append(p, `}}}`...)
		})
	}
	return buf
}

func (b bedrock) streamDelta(buf []byte, c *call, r *result, from, to int) []byte {
	if b.op == opInvokeStream {
		return rechunk(buf, anthropic{}.streamDelta(nil, c, r, from, to), c, r)
	}
	if c.content != nil && from >= c.content.ans[0].n {
		return buf
	}
	return appendEvent(buf, "contentBlockDelta", func(p []byte) []byte {
		p = append(p, `{"contentBlockIndex":0,"delta":{`...)
		switch {
		case c.content == nil:
			p = append(p, `"text":"`...)
			p = appendText(p, r, from, to)
			p = append(p, '"')
		case c.content.ans[0].tool:
			p = append(p, `"toolUse":{"input":"`...)
			p = c.content.ans[0].appendTokens(p, from, to)
			p = append(p, `"}`...)
		default:
			p = append(p, `"text":"`...)
			p = c.content.ans[0].appendTokens(p, from, to)
			p = append(p, '"')
		}
		return append(p, `}}`...)
	})
}

func (b bedrock) streamEnd(buf []byte, c *call, r *result) []byte {
	if b.op == opInvokeStream {
		return rechunk(buf, anthropic{}.streamEnd(nil, c, r), c, r)
	}
	buf = appendEvent(buf, "contentBlockStop", func(p []byte) []byte {
		return append(p, `{"contentBlockIndex":0}`...)
	})
	buf = appendEvent(buf, "messageStop", func(p []byte) []byte {
		p = append(p, `{"stopReason":"`...)
		p = append(p, bedrockStopReason(c, r)...)
		return append(p, `"}`...)
	})
	return appendEvent(buf, "metadata", func(p []byte) []byte {
		p = append(p, `{"usage":`...)
		p = appendBedrockUsage(p, c, r)
		p = append(p, `,"metrics":{"latencyMs":`...)
		p = strconv.AppendInt(p, latencyMs(r), 10)
		return append(p, `}}`...)
	})
}

// streamError is the overload of a stream cut by the stream_error fault:
// a serviceUnavailableException message, the stream's last.
func (bedrock) streamError(buf []byte, _ *call, _ *result) []byte {
	return appendException(buf, "serviceUnavailableException", "Bedrock is unable to process your request. (the mock's stream_error fault)")
}

// invokeCall is c with the model named as the Messages API names it, for
// the Anthropic events of InvokeModelWithResponseStream.
func (b bedrock) invokeCall(c *call) *call {
	cc := *c
	cc.model = bedrockBaseModel(c.model)
	return &cc
}

// rechunk turns the Messages API's SSE frames in sse into the chunk events
// of InvokeModelWithResponseStream: each event's JSON, base64-encoded in
// {"bytes": …}. Pings are dropped; message_stop carries the
// amazon-bedrock-invocationMetrics Bedrock adds to it.
func rechunk(buf, sse []byte, c *call, r *result) []byte {
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
				c.input, outputTokensOf(c, r), latencyMs(r))
		}
		buf = appendEvent(buf, "chunk", func(p []byte) []byte {
			p = append(p, `{"bytes":"`...)
			p = base64.StdEncoding.AppendEncode(p, data)
			return append(p, `"}`...)
		})
	}
	return buf
}
