package azure

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/mock/internal/openaichat"
	"github.com/ratelab/ratelab/mock/internal/openairesponses"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// The paths:
//
//	POST /openai/deployments/{deployment}/chat/completions?api-version=V
//	POST /openai/responses?api-version=V             (the model field names the deployment)
//	POST /openai/v1/chat/completions                  (the v1 API: api-version optional, v1 or preview)
//	POST /openai/v1/responses

// Format is Azure OpenAI's format over one of the OpenAI formats. The
// registered values (Chat, Responses) serve no request themselves: their
// routes' resolve makes one per request, with the request's deployment and api-version.
type Format struct {
	base       wire.Format // openaichat.Format{} or openairesponses.Format{}
	name       string
	spec       *wire.Spec
	env        *wire.Env
	kind       kind
	version    string // the api-version sent; "v1" on the v1 paths without one
	deployment string // the path's; "" on the other paths
}

// Chat and Responses are the registered formats: Chat Completions and the
// Responses API under Azure's paths.
var (
	Chat      = Format{base: openaichat.Format{}, name: "azure-openai", spec: &chatSpec, env: &noEnv, version: "v1"}
	Responses = Format{base: openairesponses.Format{}, name: "azure-openai-responses", spec: &responsesSpec, env: &noEnv, version: "v1"}
)

// noEnv is the registered values' environment, which resolve replaces by the
// server's: no deployments (every model under its own name), no content
// filter.
var noEnv = wire.Env{
	Accepts:  func(string, string) bool { return true },
	Filtered: func() bool { return false },
}

// chatSpec and responsesSpec are the OpenAI formats' specs at Azure's
// paths (Routes, each resolved by resolve; no Path), with Azure's key
// header and its retry-after-ms on every 429.
var (
	chatSpec      = azureSpec(openaichat.Format{})
	responsesSpec = azureSpec(openairesponses.Format{})
)

func azureSpec(base wire.Format) wire.Spec {
	s := *base.Spec()
	s.Path = ""
	s.APIKeyHeader = "Api-Key"
	s.MissingKey = "missing api-key header or Authorization: Bearer token"
	s.RetryAfterMS = true
	return s
}

func init() {
	// Set here: Chat and Responses point to their specs.
	chatSpec.Routes = []wire.Route{
		{Method: http.MethodPost, Path: "/openai/v1/chat/completions", Resolve: Chat.resolve},
		{Method: http.MethodPost, Path: "/openai/deployments/{deployment}/chat/completions", Resolve: Chat.resolve},
	}
	responsesSpec.Routes = []wire.Route{
		{Method: http.MethodPost, Path: "/openai/v1/responses", Resolve: Responses.resolve},
		{Method: http.MethodPost, Path: "/openai/responses", Resolve: Responses.resolve},
	}
	// Route errors under /openai/ take Azure's envelope (404 Resource not
	// found), as Chat writes it.
	chatSpec.OwnsRequest = func(req *http.Request) bool { return strings.HasPrefix(req.URL.Path, "/openai/") }
}

// kind is one of the Azure routes.
type kind int

const (
	deploymentChat kind = iota // /openai/deployments/{d}/chat/completions
	responses                  // /openai/responses
	v1                         // /openai/v1/chat/completions, /openai/v1/responses
)

// resolve is the value of f serving req (a wire.Route's Resolve): its
// route, deployment and api-version, and env; or the 404 of a missing or
// unknown api-version.
func (f Format) resolve(req *http.Request, vars map[string]string, env *wire.Env) wire.Target {
	if env != nil {
		f.env = env
	}
	f.deployment = vars["deployment"]
	switch {
	case strings.HasPrefix(req.URL.Path, "/openai/v1/"):
		f.kind = v1
	case f.deployment != "":
		f.kind = deploymentChat
	default:
		f.kind = responses
	}
	v, ok := apiVersion(req, f.kind)
	f.version = v
	if !ok {
		return wire.Target{Format: f, Status: http.StatusNotFound, Err: &wire.APIError{Msg: "Resource not found"}}
	}
	return wire.Target{Format: f, Endpoint: wire.EndpointModel}
}

// versions are the inference api-versions Azure documents (the
// data-plane specifications' folders, docs/azure.md): the GA versions and
// the previews. A request with another one gets 404 Resource not found, as
// one without any does.
var versions = map[string]bool{
	// GA.
	"2022-12-01": true, "2023-05-15": true, "2024-02-01": true, "2024-06-01": true, "2024-10-21": true,
	// Previews.
	"2023-03-15-preview": true, "2023-06-01-preview": true, "2023-07-01-preview": true, "2023-08-01-preview": true,
	"2023-09-01-preview": true, "2023-10-01-preview": true, "2023-12-01-preview": true, "2024-02-15-preview": true,
	"2024-03-01-preview": true, "2024-04-01-preview": true, "2024-05-01-preview": true, "2024-07-01-preview": true,
	"2024-08-01-preview": true, "2024-09-01-preview": true, "2024-10-01-preview": true, "2024-12-01-preview": true,
	"2025-01-01-preview": true, "2025-02-01-preview": true, "2025-03-01-preview": true, "2025-04-01-preview": true,
}

// responsesSince is the first api-version serving /openai/responses.
const responsesSince = "2025-03-01-preview"

// apiVersion is the request's api-version, false when the path needs one
// it lacks or it is unknown: the deployment paths and /openai/responses
// require a documented version (the responses path one from
// responsesSince on); the v1 paths take none, v1 or preview.
func apiVersion(req *http.Request, k kind) (string, bool) {
	v := req.URL.Query().Get("api-version")
	switch k {
	case v1:
		switch v {
		case "":
			return "v1", true
		case "v1", "preview":
			return v, true
		}
		return v, false
	case responses:
		return v, versions[v] && v >= responsesSince
	}
	return v, versions[v]
}

func (f Format) Name() string            { return f.name }
func (f Format) RequestIDHeader() string { return f.base.RequestIDHeader() }
func (f Format) OverloadStatus() int     { return f.base.OverloadStatus() }
func (f Format) Spec() *wire.Spec        { return f.spec }

// Decode decodes the body in the wrapped format, then resolves the
// deployment: the path's, or the one the model field names. On the
// deployment path the body's model is optional and ignored, as Azure
// ignores it. The call's model becomes the deployment's model, and its
// pool the deployment's.
func (f Format) Decode(body []byte, defaultMax int, c *wire.Call) error {
	err := f.base.Decode(body, defaultMax, c)
	var br *wire.BadRequest
	if err != nil && f.deployment != "" && errors.As(err, &br) && br.Param == "model" {
		// The deployment path names the model: decode again with it.
		err = f.base.Decode(withModel(body, f.deployment), defaultMax, c)
	}
	if err != nil {
		return err
	}
	name := f.deployment
	if name == "" {
		name = c.Model
	}
	deps := f.env.Deployments
	switch d, ok := deps[name]; {
	case ok:
		c.Model, c.Pool = d.Model, d.Pool
	case len(deps) == 0 && f.env.Accepts(f.spec.Catalog, name):
		c.Model = name
	default:
		return &wire.Refusal{Status: http.StatusNotFound, E: wire.APIError{Code: "DeploymentNotFound",
			Msg: "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}
	}
	if f.env.Filtered() {
		return &wire.BadRequest{Code: "content_filter", Param: "prompt",
			Msg: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"}
	}
	return nil
}

// withModel is body with its model field set to model (the last of
// duplicate keys wins in the decoders).
func withModel(body []byte, model string) []byte {
	b := bytes.TrimRight(body, " \t\r\n")
	if len(b) == 0 || b[len(b)-1] != '}' {
		return body
	}
	inner := bytes.TrimSpace(b[:len(b)-1])
	out := append([]byte(nil), b[:len(b)-1]...)
	if len(inner) > 1 { // more than the opening brace
		out = append(out, ',')
	}
	out = append(out, `"model":`...)
	out = wire.AppendJSONString(out, model)
	return append(out, '}')
}

// errorBody is Azure's own error envelope: a string code and a message.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// The texts of Azure's own errors (docs/azure.md).
const (
	Unauthorized = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
	quotaURL     = "https://aka.ms/oai/quotaincrease"
)

// WriteError answers Azure's errors in Azure's envelope (401, 404, 429,
// the content filter's 400) and the rest as the wrapped OpenAI API does.
func (f Format) WriteError(w http.ResponseWriter, status int, e wire.APIError, reqID string) {
	var ae errorBody
	switch {
	case status == http.StatusUnauthorized:
		ae.Error.Code, ae.Error.Message = "401", Unauthorized
	case status == http.StatusNotFound && e.Code == "DeploymentNotFound":
		ae.Error.Code, ae.Error.Message = e.Code, e.Msg
	case status == http.StatusNotFound:
		ae.Error.Code, ae.Error.Message = "404", "Resource not found"
	case status == http.StatusTooManyRequests && e.Limit != wire.LimitQuota:
		ae.Error.Code, ae.Error.Message = "429", f.throttleMessage(w.Header(), e)
	case status == http.StatusBadRequest && e.Code == "content_filter":
		wire.WriteJSONBody(w, status, filterError(e))
		return
	default:
		f.base.WriteError(w, status, e, reqID)
		return
	}
	wire.WriteJSONBody(w, status, ae)
}

// throttleMessage is the text of Azure's 429: the operation, the
// api-version, which rate (token or call) and the wait of retry-after.
func (f Format) throttleMessage(h http.Header, e wire.APIError) string {
	op := "ChatCompletions_Create"
	if !f.chat() {
		op = "Responses_Create"
	}
	rate := "call rate limit"
	switch e.Limit {
	case wire.LimitTPM, wire.LimitITPM, wire.LimitOTPM:
		rate = "token rate limit"
	}
	wait := "1"
	if v := h.Get("Retry-After"); v != "" {
		wait = v
	}
	return fmt.Sprintf("Requests to the %s Operation under Azure OpenAI API version %s have exceeded %s of your current OpenAI S0 pricing tier. Please retry after %s seconds. Please go here: %s if you would like to further increase the default rate limit.",
		op, f.version, rate, wait, quotaURL)
}

// filterError is the content filter's 400: OpenAI's envelope with status
// and innererror, the categories' verdicts in it (hate filtered at high
// severity, the injected refusal's reason).
func filterError(e wire.APIError) any {
	type inner struct {
		Code                string          `json:"code"`
		ContentFilterResult json.RawMessage `json:"content_filter_result"`
	}
	type body struct {
		Message    string  `json:"message"`
		Type       *string `json:"type"`
		Param      string  `json:"param"`
		Code       string  `json:"code"`
		Status     int     `json:"status"`
		Innererror inner   `json:"innererror"`
	}
	return struct {
		Error body `json:"error"`
	}{body{Message: e.Msg, Param: e.Param, Code: e.Code, Status: http.StatusBadRequest,
		Innererror: inner{Code: "ResponsibleAIPolicyViolation", ContentFilterResult: json.RawMessage(filteredResults)}}}
}

// The content filter's verdicts: every category safe, and the refused
// prompt's, hate filtered at high severity.
const (
	safeResults = `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},` +
		`"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`
	promptResults = `{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},` +
		`"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`
	filteredResults = `{"hate":{"filtered":true,"severity":"high"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},` +
		`"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`
	promptFilter = `[{"prompt_index":0,"content_filter_results":` + promptResults + `}]`
)

// limitHeaders are the rate-limit headers Azure sends: the limit and the
// remaining of requests and tokens (no reset headers).
var limitHeaders = [2][2]string{
	{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests"},
	{"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens"},
}

func (Format) AppendLimitHeaders(buf []byte, l *wire.HeaderList, s wire.Snapshot, _ time.Time) []byte {
	for i, d := range [...]wire.Dimension{s.Requests, s.Tokens} {
		if d.Limit <= 0 {
			continue
		}
		buf = strconv.AppendInt(buf, d.Limit, 10)
		l.Add(limitHeaders[i][0], buf)
		buf = strconv.AppendInt(buf, d.Remaining, 10)
		l.Add(limitHeaders[i][1], buf)
	}
	return buf
}

// Body is the wrapped format's, with Azure's content-filter annotations
// on a chat completion: prompt_filter_results, and content_filter_results
// on each choice.
func (f Format) Body(b []byte, c *wire.Call, r *wire.Result) ([]byte, error) {
	start := len(b)
	b, err := f.base.Body(b, c, r)
	if err != nil || !f.chat() {
		return b, err
	}
	out, err := annotateCompletion(b[start:], true)
	if err != nil {
		return nil, err
	}
	return append(b[:start], out...), nil
}

func (f Format) chat() bool {
	_, ok := f.base.(openaichat.Format)
	return ok
}

// StreamStart sends Azure's first event of a chat stream, the prompt's
// verdicts with no choices, before the wrapped format's first chunk.
func (f Format) StreamStart(b []byte, c *wire.Call, r *wire.Result) []byte {
	if !f.chat() {
		return f.base.StreamStart(b, c, r)
	}
	b = append(b, `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":`+promptFilter+"}\n\n"...)
	start := len(b)
	return annotateFrames(f.base.StreamStart(b, c, r), start)
}

func (f Format) StreamDelta(b []byte, c *wire.Call, r *wire.Result, from, to int) []byte {
	start := len(b)
	b = f.base.StreamDelta(b, c, r, from, to)
	if !f.chat() {
		return b
	}
	return annotateFrames(b, start)
}

func (f Format) StreamEnd(b []byte, c *wire.Call, r *wire.Result) []byte {
	start := len(b)
	b = f.base.StreamEnd(b, c, r)
	if !f.chat() {
		return b
	}
	return annotateFrames(b, start)
}

func (f Format) StreamError(b []byte, c *wire.Call, r *wire.Result) []byte {
	return f.base.StreamError(b, c, r)
}

// annotateCompletion adds content_filter_results to each choice of the
// chat completion (or chunk) doc, and prompt_filter_results to a
// completion (top). A delta's choices get every category's verdict, the
// other chunks' (the role and finish chunks) an empty object, as Azure
// sends them; a chunk without choices is left alone.
func annotateCompletion(doc []byte, top bool) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	var choices []map[string]json.RawMessage
	if err := json.Unmarshal(m["choices"], &choices); err != nil {
		return nil, err
	}
	if len(choices) == 0 && !top {
		return doc, nil
	}
	for _, ch := range choices {
		verdict := json.RawMessage(safeResults)
		if !top && !hasContent(ch["delta"]) {
			verdict = json.RawMessage(`{}`)
		}
		ch["content_filter_results"] = verdict
	}
	cb, err := json.Marshal(choices)
	if err != nil {
		return nil, err
	}
	m["choices"] = cb
	if top {
		m["prompt_filter_results"] = json.RawMessage(promptFilter)
	}
	return json.Marshal(m)
}

// hasContent reports whether a chunk's delta carries text or arguments.
func hasContent(delta json.RawMessage) bool {
	var d struct {
		Content   *string           `json:"content"`
		ToolCalls []json.RawMessage `json:"tool_calls"`
		Role      string            `json:"role"`
	}
	if json.Unmarshal(delta, &d) != nil || d.Role != "" {
		return false
	}
	return d.Content != nil && *d.Content != "" || len(d.ToolCalls) > 0
}

// annotateFrames annotates the chunks of the SSE frames in b[start:]
// ("data: {…}\n\n" each; [DONE] and errors pass through).
func annotateFrames(b []byte, start int) []byte {
	frames := b[start:]
	if len(frames) == 0 {
		return b
	}
	out := make([]byte, 0, len(frames)+256)
	for _, fr := range strings.SplitAfter(string(frames), "\n\n") {
		data, ok := strings.CutPrefix(fr, "data: ")
		if !ok || !strings.HasPrefix(data, `{"id"`) {
			out = append(out, fr...)
			continue
		}
		doc := strings.TrimSuffix(data, "\n\n")
		ann, err := annotateCompletion([]byte(doc), false)
		if err != nil {
			out = append(out, fr...)
			continue
		}
		out = append(out, "data: "...)
		out = append(out, ann...)
		out = append(out, "\n\n"...)
	}
	return append(b[:start], out...)
}
