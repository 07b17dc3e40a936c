package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// Format is the Gemini API's generateContent wire format (docs/gemini.md),
// served under the AI Studio paths (/v1beta/models/{model}:generateContent,
// a key in x-goog-api-key or ?key=) and, with Vertex set, under Vertex AI's
// (/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:…, a
// bearer token). The model and whether the answer streams come from the
// path, not the body: the routes' Resolve (routes.go) makes a value of the
// format per request with them. The two platforms are two registered
// formats, gemini and vertex, each with its own wire.Spec.
type Format struct {
	Vertex bool
	Model  string // from the path
	Stream bool   // :streamGenerateContent
}

func (g Format) Name() string {
	if g.Vertex {
		return "vertex"
	}
	return "gemini"
}

// Spec is AI Studio's or Vertex AI's (routes.go).
func (g Format) Spec() *wire.Spec {
	if g.Vertex {
		return &vertexSpec
	}
	return &studioSpec
}

// RequestIDHeader: Google's front end sends no request id header the SDKs
// read; the mock sends its own, as it does for every API.
func (Format) RequestIDHeader() string { return "X-Request-Id" }

// OverloadStatus is 503 UNAVAILABLE ("The model is overloaded").
func (Format) OverloadStatus() int { return http.StatusServiceUnavailable }

// AppendLimitHeaders appends nothing: neither Gemini API nor Vertex AI
// sends rate-limit headers.
func (Format) AppendLimitHeaders(b []byte, _ *wire.HeaderList, _ wire.Snapshot, _ time.Time) []byte {
	return b
}

// geminiRequest holds the fields of a GenerateContentRequest the mock reads,
// in the camelCase the SDKs send.
type geminiRequest struct {
	Contents          []geminiContent   `json:"contents"`
	SystemInstruction json.RawMessage   `json:"systemInstruction"`
	Tools             json.RawMessage   `json:"tools"`
	ToolConfig        json.RawMessage   `json:"toolConfig"`
	GenerationConfig  *geminiGenConfig  `json:"generationConfig"`
	CachedContent     string            `json:"cachedContent"`
	SafetySettings    []json.RawMessage `json:"safetySettings"`
}

type geminiContent struct {
	Role  string          `json:"role"`
	Parts json.RawMessage `json:"parts"`
}

type geminiGenConfig struct {
	MaxOutputTokens    *int64          `json:"maxOutputTokens"`
	CandidateCount     *int64          `json:"candidateCount"`
	StopSequences      []string        `json:"stopSequences"`
	ResponseMimeType   string          `json:"responseMimeType"`
	ResponseSchema     json.RawMessage `json:"responseSchema"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"topP"`
}

var geminiRequests wire.RequestPool[geminiRequest]

// defaultMaxTokens is a request's output limit when it sets no
// maxOutputTokens and Output.DefaultMaxTokens is unset, as for the OpenAI
// formats.
const defaultMaxTokens = 256

func (g Format) Decode(body []byte, defaultMax int, c *wire.Call) error {
	if err := decodeGemini(body, g.Model, defaultMax, true, c); err != nil {
		return err
	}
	c.Stream = g.Stream
	return nil
}

// decodeGemini decodes a GenerateContentRequest for model into c;
// countTokens needs no generation config (full false).
func decodeGemini(body []byte, model string, defaultMax int, full bool, c *wire.Call) error {
	req := geminiRequests.Get()
	defer geminiRequests.Put(req)
	if err := wire.DecodeRequest(body, req); err != nil {
		return describeGeminiError(err)
	}
	*c = wire.Call{Model: model}
	if model == "" {
		return wire.Invalid("model", "must not be empty")
	}
	switch {
	case req.Contents == nil:
		return wire.Invalid("contents", "contents is not specified")
	case len(req.Contents) == 0:
		return wire.Invalid("contents", "at least one content is required")
	}
	msgs := make([]wire.Message, len(req.Contents))
	for i, ct := range req.Contents {
		switch ct.Role {
		case "", "user", "model", "function":
		default:
			return wire.Invalid(fmt.Sprintf("contents[%d].role", i), "Please use a valid role: user, model; got %q", ct.Role)
		}
		n, err := geminiPartsLen(ct.Parts, fmt.Sprintf("contents[%d].parts", i))
		if err != nil {
			return err
		}
		c.Input += wire.MessageTokens(n)
		msgs[i] = wire.Message{Role: ct.Role, Content: ct.Parts}
	}
	if wire.Present(req.SystemInstruction) {
		var si geminiContent
		if err := json.Unmarshal(req.SystemInstruction, &si); err != nil {
			return wire.Invalid("systemInstruction", "want a content object with parts")
		}
		n, err := geminiPartsLen(si.Parts, "systemInstruction.parts")
		if err != nil {
			return err
		}
		c.Input += wire.MessageTokens(n)
	}
	if wire.Present(req.Tools) {
		c.Input += (utf8.RuneCount(req.Tools) + 3) / 4
	}
	if !full {
		return nil
	}
	gc := req.GenerationConfig
	if gc == nil {
		gc = &geminiGenConfig{}
	}
	c.MaxTokens = defaultMax
	if c.MaxTokens <= 0 {
		c.MaxTokens = defaultMaxTokens
	}
	if gc.MaxOutputTokens != nil {
		n, err := wire.CheckMaxTokens("generationConfig.maxOutputTokens", *gc.MaxOutputTokens)
		if err != nil {
			return err
		}
		c.MaxTokens = n
	}
	if v := gc.Temperature; v != nil && (*v < 0 || *v > 2) {
		return wire.Invalid("generationConfig.temperature", "must be in [0, 2], got %g", *v)
	}
	if v := gc.TopP; v != nil && (*v < 0 || *v > 1) {
		return wire.Invalid("generationConfig.topP", "must be in [0, 1], got %g", *v)
	}
	return req.decodeContent(gc, model, msgs, c)
}

// geminiPartsLen is the length in characters of a content's parts: the
// text of text parts, the JSON length of the others (inline data, function
// calls and responses).
func geminiPartsLen(raw json.RawMessage, path string) (int, error) {
	if !wire.Present(raw) {
		return 0, wire.Invalid(path, "field required: a content needs at least one part")
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return 0, wire.Invalid(path, "want an array of parts")
	}
	if len(parts) == 0 {
		return 0, wire.Invalid(path, "a content needs at least one part")
	}
	n := 0
	for j, p := range parts {
		var tp struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(p, &tp); err != nil {
			return 0, wire.Invalid(fmt.Sprintf("%s[%d]", path, j), "want a part object (text, inlineData, functionCall, functionResponse, …)")
		}
		if tp.Text != nil {
			n += utf8.RuneCountInString(*tp.Text)
			continue
		}
		if bytes.Equal(bytes.TrimSpace(p), []byte("{}")) {
			return 0, wire.Invalid(fmt.Sprintf("%s[%d]", path, j), "a part must set one of text, inlineData, fileData, functionCall or functionResponse")
		}
		n += utf8.RuneCount(p)
	}
	return n, nil
}

// describeGeminiError names the field of a body that does not decode, in
// the words of Google's JSON parser ("Invalid JSON payload received").
func describeGeminiError(err error) error {
	e := wire.DescribeJSONError(err)
	if br, ok := e.(*wire.BadRequest); ok {
		br.Msg = "Invalid JSON payload received. " + br.Msg
	}
	return e
}

var (
	geminiToolsMemo  wire.Memo // tools JSON → []wire.Tool or error
	geminiSchemaMemo wire.Memo // a Gemini Schema's JSON → its JSON Schema or error
)

// decodeContent reads the content fields: function declarations and the
// function calling config, stop sequences, candidateCount and the
// response schema.
func (req *geminiRequest) decodeContent(gc *geminiGenConfig, model string, msgs []wire.Message, c *wire.Call) error {
	structured := gc.ResponseMimeType == "application/json" || wire.Present(gc.ResponseSchema) || wire.Present(gc.ResponseJSONSchema)
	if !wire.Present(req.Tools) && !wire.Present(req.ToolConfig) && gc.StopSequences == nil && gc.CandidateCount == nil && !structured {
		return nil
	}
	cr := &wire.ContentReq{Choices: 1, Stops: gc.StopSequences, Seed: wire.ContentSeed(model, msgs, req.SystemInstruction)}
	if wire.Present(req.Tools) {
		v := geminiToolsMemo.Get(req.Tools, func() any { return geminiTools(req.Tools) })
		if err, ok := v.(error); ok {
			return err
		}
		cr.Tools = v.([]wire.Tool)
	}
	if wire.Present(req.ToolConfig) {
		var tc struct {
			FunctionCallingConfig *struct {
				Mode                 string   `json:"mode"`
				AllowedFunctionNames []string `json:"allowedFunctionNames"`
			} `json:"functionCallingConfig"`
		}
		if err := json.Unmarshal(req.ToolConfig, &tc); err != nil {
			return wire.Invalid("toolConfig", "want {functionCallingConfig: {mode, allowedFunctionNames}}")
		}
		if fc := tc.FunctionCallingConfig; fc != nil {
			switch fc.Mode {
			case "", "AUTO", "MODE_UNSPECIFIED", "VALIDATED":
			case "NONE":
				cr.Mode = wire.ToolsNone
			case "ANY":
				cr.Mode = wire.ToolsAny
			default:
				return wire.Invalid("toolConfig.functionCallingConfig.mode", "want AUTO, ANY, NONE or VALIDATED, got %q", fc.Mode)
			}
			if len(fc.AllowedFunctionNames) > 0 {
				if cr.Mode != wire.ToolsAny {
					return wire.Invalid("toolConfig.functionCallingConfig.allowedFunctionNames", "may be set only with mode ANY")
				}
				var allowed []wire.Tool
				for i, name := range fc.AllowedFunctionNames {
					k := slices.IndexFunc(cr.Tools, func(t wire.Tool) bool { return t.Name == name })
					if k < 0 {
						return wire.Invalid(fmt.Sprintf("toolConfig.functionCallingConfig.allowedFunctionNames[%d]", i), "no function declaration named %q in tools", name)
					}
					allowed = append(allowed, cr.Tools[k])
				}
				cr.Tools = allowed
			}
		}
	}
	for i, s := range gc.StopSequences {
		if s == "" {
			return wire.Invalid(fmt.Sprintf("generationConfig.stopSequences[%d]", i), "must not be empty")
		}
	}
	if len(gc.StopSequences) > 5 {
		return wire.Invalid("generationConfig.stopSequences", "at most 5 stop sequences, got %d", len(gc.StopSequences))
	}
	if n := gc.CandidateCount; n != nil {
		if *n < 1 || *n > 8 {
			return wire.Invalid("generationConfig.candidateCount", "must be in [1, 8], got %d", *n)
		}
		cr.Choices = int(*n)
	}
	if structured {
		if gc.ResponseMimeType != "application/json" {
			return wire.Invalid("generationConfig.responseMimeType", "a response schema needs responseMimeType application/json, got %q", gc.ResponseMimeType)
		}
		schema, param := wire.JSONObjectSchema, "generationConfig.responseMimeType"
		switch {
		case wire.Present(gc.ResponseSchema) && wire.Present(gc.ResponseJSONSchema):
			return wire.Invalid("generationConfig.responseJsonSchema", "responseSchema and responseJsonSchema are mutually exclusive")
		case wire.Present(gc.ResponseSchema):
			js, err := geminiJSONSchema(gc.ResponseSchema, "generationConfig.responseSchema")
			if err != nil {
				return err
			}
			schema, param = js, "generationConfig.responseSchema"
		case wire.Present(gc.ResponseJSONSchema):
			schema, param = gc.ResponseJSONSchema, "generationConfig.responseJsonSchema"
		}
		cs, err := wire.CompileSchema(schema, param)
		if err != nil {
			return err
		}
		cr.Format = cs
	}
	if err := cr.CheckTools("toolConfig.functionCallingConfig.mode", "toolConfig.functionCallingConfig.allowedFunctionNames", "tools"); err != nil {
		return err
	}
	c.Content = cr
	return nil
}

// geminiTools parses tools[].functionDeclarations: []wire.Tool or an error.
// Other tools (googleSearch, codeExecution, …) are accepted and never
// called: the mock runs no server tools.
func geminiTools(raw json.RawMessage) any {
	var tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return wire.Invalid("tools", "want an array of {functionDeclarations: [{name, parameters}]}")
	}
	var out []wire.Tool
	for i, t := range tools {
		for j, fd := range t.FunctionDeclarations {
			p := fmt.Sprintf("tools[%d].functionDeclarations[%d]", i, j)
			if fd.Name == "" {
				return wire.Invalid(p+".name", "field required")
			}
			var schema json.RawMessage
			switch {
			case wire.Present(fd.Parameters) && wire.Present(fd.ParametersJSONSchema):
				return wire.Invalid(p+".parametersJsonSchema", "parameters and parametersJsonSchema are mutually exclusive")
			case wire.Present(fd.Parameters):
				js, err := geminiJSONSchema(fd.Parameters, p+".parameters")
				if err != nil {
					return err
				}
				schema = js
			case wire.Present(fd.ParametersJSONSchema):
				schema = fd.ParametersJSONSchema
			default:
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			cs, err := wire.CompileSchema(schema, p+".parameters")
			if err != nil {
				return err
			}
			out = append(out, wire.Tool{Name: fd.Name, Schema: cs})
		}
	}
	return out
}

// geminiJSONSchema translates a Gemini Schema (the OpenAPI 3.0 subset of
// responseSchema and parameters: upper-case types, nullable, int64 bounds
// as strings) into the JSON Schema the generator reads.
func geminiJSONSchema(raw json.RawMessage, param string) (json.RawMessage, error) {
	v := geminiSchemaMemo.Get(raw, func() any {
		var s any
		if err := json.Unmarshal(raw, &s); err != nil {
			return wire.Invalid(param, "want a Schema object")
		}
		out, err := translateGeminiSchema(s, param)
		if err != nil {
			return err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return wire.Invalid(param, "%v", err)
		}
		return json.RawMessage(b)
	})
	if err, ok := v.(error); ok {
		return nil, err
	}
	return v.(json.RawMessage), nil
}

func translateGeminiSchema(v any, path string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, wire.Invalid(path, "want a Schema object")
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		switch k {
		case "type":
			t, ok := x.(string)
			if !ok {
				return nil, wire.Invalid(path+".type", "want a string")
			}
			t = strings.ToLower(t)
			switch t {
			case "type_unspecified", "":
				continue
			case "string", "number", "integer", "boolean", "array", "object", "null":
			default:
				return nil, wire.Invalid(path+".type", "want STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT or NULL, got %q", x)
			}
			out["type"] = t
		case "properties":
			props, ok := x.(map[string]any)
			if !ok {
				return nil, wire.Invalid(path+".properties", "want an object of Schemas")
			}
			tp := make(map[string]any, len(props))
			for name, p := range props {
				s, err := translateGeminiSchema(p, path+".properties."+name)
				if err != nil {
					return nil, err
				}
				tp[name] = s
			}
			out["properties"] = tp
		case "items":
			s, err := translateGeminiSchema(x, path+".items")
			if err != nil {
				return nil, err
			}
			out["items"] = s
		case "anyOf":
			list, ok := x.([]any)
			if !ok {
				return nil, wire.Invalid(path+".anyOf", "want an array of Schemas")
			}
			var tl []any
			for i, p := range list {
				s, err := translateGeminiSchema(p, fmt.Sprintf("%s.anyOf[%d]", path, i))
				if err != nil {
					return nil, err
				}
				tl = append(tl, s)
			}
			out["anyOf"] = tl
		case "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties":
			// int64 fields: protobuf's JSON writes them as strings.
			switch n := x.(type) {
			case float64:
				out[k] = n
			case string:
				f, err := strconv.ParseInt(n, 10, 64)
				if err != nil {
					return nil, wire.Invalid(path+"."+k, "want an integer, got %q", n)
				}
				out[k] = f
			default:
				return nil, wire.Invalid(path+"."+k, "want an integer")
			}
		case "format":
			// Gemini's formats for numbers (int32, int64, float, double)
			// and enum strings ("enum") are not JSON Schema's; the
			// generator ignores formats it does not know.
			out[k] = x
		case "nullable", "propertyOrdering", "example", "description", "title", "default":
			if k == "description" || k == "title" || k == "default" {
				out[k] = x
			}
		default:
			out[k] = x // enum, required, minimum, maximum, pattern
		}
	}
	if n, _ := m["nullable"].(bool); n {
		if t, ok := out["type"].(string); ok {
			out["type"] = []any{t, "null"}
		}
	}
	return out, nil
}

// googleStatus is the google.rpc.Code name Google's front ends send with
// an HTTP status.
func googleStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestHeaderFieldsTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable, 529:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// googleError is the google.rpc.Status envelope: {"error": {code, message,
// status, details}}.
type googleError struct {
	Error googleStatusBody `json:"error"`
}

type googleStatusBody struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status"`
	Details []map[string]any `json:"details,omitempty"`
}

// The types of the details (google/rpc/error_details.proto).
const (
	typeRetryInfo    = "type.googleapis.com/google.rpc.RetryInfo"
	typeQuotaFailure = "type.googleapis.com/google.rpc.QuotaFailure"
	typeBadRequest   = "type.googleapis.com/google.rpc.BadRequest"
	typeErrorInfo    = "type.googleapis.com/google.rpc.ErrorInfo"
	typeHelp         = "type.googleapis.com/google.rpc.Help"
)

func (g Format) WriteError(w http.ResponseWriter, status int, e wire.APIError, _ string) {
	WriteGoogleError(w, g.Vertex, g.Model, status, e)
}

// WriteGoogleError writes e, an error of Google's front end for model
// (on Vertex AI or AI Studio), in Google's envelope. The retry delay of a
// 429 travels in a RetryInfo detail, not in headers: the retry-after (and
// retry-after-ms) the core set on the response before it asked for the
// error are moved into it, and x-should-retry, which Google does not
// send, is dropped. (docs/architecture.md, "Adding a wire format".)
func WriteGoogleError(w http.ResponseWriter, vertex bool, model string, status int, e wire.APIError) {
	h := w.Header()
	delay, hasDelay := googleRetryDelay(h)
	delete(h, "Retry-After")
	delete(h, "Retry-After-Ms")
	delete(h, "X-Should-Retry")
	body := googleStatusBody{Code: status, Message: e.Msg}
	switch {
	case status == http.StatusUnauthorized && !vertex:
		// AI Studio: no key is 403 PERMISSION_DENIED, a wrong one 400
		// INVALID_ARGUMENT with ErrorInfo API_KEY_INVALID.
		if strings.HasPrefix(e.Msg, "missing") {
			body.Code = http.StatusForbidden
			body.Message = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
		} else {
			body.Code = http.StatusBadRequest
			body.Message = "API key not valid. Please pass a valid API key."
			body.Details = []map[string]any{{"@type": typeErrorInfo, "reason": "API_KEY_INVALID", "domain": "googleapis.com",
				"metadata": map[string]string{"service": "generativelanguage.googleapis.com"}}}
		}
	case status == http.StatusUnauthorized:
		body.Message = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. (mock: " + e.Msg + ")"
		body.Details = []map[string]any{{"@type": typeErrorInfo, "reason": "ACCESS_TOKEN_TYPE_UNSUPPORTED", "domain": "googleapis.com"}}
	case status == http.StatusBadRequest && e.Param != "":
		body.Details = []map[string]any{{"@type": typeBadRequest,
			"fieldViolations": []map[string]string{{"field": e.Param, "description": e.Msg}}}}
	case status == http.StatusTooManyRequests:
		body.Message, body.Details = googleQuotaError(vertex, model, e, delay, hasDelay)
	case status == http.StatusServiceUnavailable || status == 529:
		body.Code = http.StatusServiceUnavailable
		body.Message = "The model is overloaded. Please try again later."
		if e.Msg != "Overloaded" {
			body.Message += " (mock: " + e.Msg + ")"
		}
	}
	body.Status = googleStatus(body.Code)
	wire.WriteJSONBody(w, body.Code, googleError{body})
}

// googleRetryDelay reads the delay the core put in retry-after-ms (exact)
// or retry-after (whole seconds).
func googleRetryDelay(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Duration(ms) * time.Millisecond, true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Duration(s) * time.Second, true
		}
	}
	return 0, false
}

// formatProtoDuration writes d as google.protobuf.Duration's JSON form:
// seconds with up to nine fractional digits and an s, "18s", "0.250s".
func formatProtoDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// googleQuotaError is a 429's message and details, as each API words them
// (docs/gemini.md, Errors). A rate limit names a per-minute quota in a
// QuotaFailure and carries a RetryInfo; a spent quota (Config.Quota) names
// a per-day quota and carries no RetryInfo, as the daily free-tier limit
// does: waiting seconds does not lift it.
func googleQuotaError(vertex bool, model string, e wire.APIError, delay time.Duration, hasDelay bool) (string, []map[string]any) {
	metric, id := googleQuotaMetric(vertex, e.Limit)
	var msg string
	var details []map[string]any
	switch {
	case vertex && e.Limit == wire.LimitQuota:
		msg = fmt.Sprintf("Quota exceeded for %s with base model: %s. Please submit a quota increase request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai. (mock: %s)", metric, model, e.Msg)
	case vertex && metric == "":
		msg = "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details. (mock: " + e.Msg + ")"
	case vertex:
		msg = fmt.Sprintf("Quota exceeded for %s with base model: %s. Please submit a quota increase request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai. (mock: %s)", metric, model, e.Msg)
	default:
		msg = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. (mock: " + e.Msg + ")"
		if hasDelay {
			msg += " Please retry in " + formatProtoDuration(delay) + "."
		}
	}
	if metric != "" {
		details = append(details, map[string]any{"@type": typeQuotaFailure, "violations": []map[string]any{{
			"quotaMetric":     metric,
			"quotaId":         id,
			"quotaDimensions": map[string]string{"location": "global", "model": model},
		}}})
	}
	if !vertex {
		details = append(details, map[string]any{"@type": typeHelp, "links": []map[string]string{{
			"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}}})
	}
	if hasDelay && e.Limit != wire.LimitQuota {
		details = append(details, map[string]any{"@type": typeRetryInfo, "retryDelay": formatProtoDuration(delay)})
	}
	return msg, details
}

// googleQuotaMetric is the quota a 429 of the mock's limit names: its
// metric and quota id; "" for a limit Google has no quota for (the mock's
// concurrency limit, scripted failures), answered as Vertex's shared
// capacity is ("Resource exhausted").
func googleQuotaMetric(vertex bool, limit string) (metric, id string) {
	if vertex {
		switch limit {
		case wire.LimitRPM:
			return "aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model", "GenerateContentRequestsPerMinutePerProjectPerBaseModel"
		case wire.LimitITPM, wire.LimitTPM, wire.LimitOTPM:
			return "aiplatform.googleapis.com/generate_content_input_tokens_per_minute_per_base_model", "GenerateContentInputTokensPerMinutePerBaseModel"
		case wire.LimitQuota:
			return "aiplatform.googleapis.com/generate_content_requests_per_day_per_project_per_base_model", "GenerateContentRequestsPerDayPerProjectPerBaseModel"
		}
		return "", ""
	}
	switch limit {
	case wire.LimitRPM, wire.LimitConcurrency:
		return "generativelanguage.googleapis.com/generate_content_paid_tier_requests", "GenerateRequestsPerMinutePerProjectPerModel"
	case wire.LimitITPM, wire.LimitTPM:
		return "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count", "GenerateContentPaidTierInputTokensPerModelPerMinute"
	case wire.LimitOTPM:
		return "generativelanguage.googleapis.com/generate_content_paid_tier_output_token_count", "GenerateContentPaidTierOutputTokensPerModelPerMinute"
	case wire.LimitQuota:
		return "generativelanguage.googleapis.com/generate_requests_per_model_per_day", "GenerateRequestsPerDayPerProjectPerModel"
	}
	return "", ""
}
