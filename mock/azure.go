package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
)

// Azure OpenAI (docs/azure.md): the OpenAI formats (openai, responses)
// served under Azure's paths, with Azure's authentication (api-key or a
// bearer token), its api-version query parameter, deployments (a
// deployment names a model and has its own tpm and rpm), its error
// envelope and 429 text, and its content-filter annotations.
//
// The paths:
//
//	POST /openai/deployments/{deployment}/chat/completions?api-version=V
//	POST /openai/responses?api-version=V             (the model field names the deployment)
//	POST /openai/v1/chat/completions                  (the v1 API: api-version optional, v1 or preview)
//	POST /openai/v1/responses

// Azure configures the Azure OpenAI endpoints: the `azure:` block of the
// server schema.
type Azure struct {
	// Deployments maps a deployment name to its model and limits. None
	// (the default) deploys every model of the catalogue under its own
	// name, limited by the key's Limits only; with some, a request naming
	// another deployment gets 404 DeploymentNotFound.
	Deployments map[string]AzureDeployment `yaml:"deployments,omitempty"`
	// ContentFilter is the rate of requests refused by the content filter
	// (400 content_filter with innererror ResponsibleAIPolicyViolation),
	// drawn per request from a source seeded by Seed; 0 refuses none.
	ContentFilter float64 `yaml:"content_filter,omitempty"`
}

// AzureDeployment is one deployment.
type AzureDeployment struct {
	// Model is the model the deployment serves (a model of the catalogue,
	// or any with `models: any`): the model field of its answers.
	Model string `yaml:"model"`
	// Limits are the deployment's own limits, each API key having its own
	// instance (a key stands for one Azure resource): Azure gives each
	// deployment a tpm and an rpm (6 rpm per 1,000 tpm for most chat
	// models). They apply on top of the key's Limits and replace any
	// limits_by_model pool of the model.
	Limits Limits `yaml:"limits"`
}

// azureDeploymentName is what Azure accepts as a deployment name: 2 to 64
// letters, digits, '-', '_' and '.'.
var azureDeploymentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{1,63}$`)

// validateAzure checks the azure: block.
func validateAzure(a Azure, models Models, check func(bool, string, string, ...any)) {
	known := modelIndex(openaiCatalog, models.Extra)
	for _, name := range poolPatterns(a.Deployments) {
		p := "azure.deployments." + name
		d := a.Deployments[name]
		check(azureDeploymentName.MatchString(name), p, "want a deployment name of 2 to 64 letters, digits, '.', '_' or '-', got %q", name)
		switch {
		case d.Model == "":
			check(false, p+".model", "field required: the model the deployment serves, e.g. gpt-4o")
		case !models.Any && !known[d.Model]:
			check(false, p+".model", "unknown model %q: name one of KnownModels(\"openai\"), add it to models:, or set models: any", d.Model)
		}
		validateLimits(d.Limits, p+".limits", check)
	}
	check(a.ContentFilter >= 0 && a.ContentFilter <= 1, "azure.content_filter", "must be a rate in [0, 1], got %v", a.ContentFilter)
}

// azureKind is one of the Azure routes.
type azureKind int

const (
	azureDeploymentChat azureKind = iota // /openai/deployments/{d}/chat/completions
	azureResponses                       // /openai/responses
	azureV1Chat                          // /openai/v1/chat/completions
	azureV1Responses                     // /openai/v1/responses
)

// azureVersions are the inference api-versions Azure documents (the
// data-plane specifications' folders, docs/azure.md): the GA versions and
// the previews. A request with another one gets 404 Resource not found, as
// one without any does.
var azureVersions = map[string]bool{
	// GA.
	"2022-12-01": true, "2023-05-15": true, "2024-02-01": true, "2024-06-01": true, "2024-10-21": true,
	// Previews.
	"2023-03-15-preview": true, "2023-06-01-preview": true, "2023-07-01-preview": true, "2023-08-01-preview": true,
	"2023-09-01-preview": true, "2023-10-01-preview": true, "2023-12-01-preview": true, "2024-02-15-preview": true,
	"2024-03-01-preview": true, "2024-04-01-preview": true, "2024-05-01-preview": true, "2024-07-01-preview": true,
	"2024-08-01-preview": true, "2024-09-01-preview": true, "2024-10-01-preview": true, "2024-12-01-preview": true,
	"2025-01-01-preview": true, "2025-02-01-preview": true, "2025-03-01-preview": true, "2025-04-01-preview": true,
}

// azureResponsesSince is the first api-version serving /openai/responses.
const azureResponsesSince = "2025-03-01-preview"

// azureState is what the Azure routes share: the content filter's random
// source (its own, so that Azure requests do not change the draws of the
// server's other faults).
type azureState struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// azureRoutes are the Azure OpenAI endpoints.
func (s *Server) azureRoutes() []route {
	st := &azureState{rng: rand.New(rand.NewPCG(uint64(s.cfg.Seed), 0xa2c7e))}
	post := []string{http.MethodPost}
	return []route{
		{"/openai/deployments/{deployment}/chat/completions", post, s.azureModel(st, azureDeploymentChat)},
		{"/openai/responses", post, s.azureModel(st, azureResponses)},
		{"/openai/v1/chat/completions", post, s.azureModel(st, azureV1Chat)},
		{"/openai/v1/responses", post, s.azureModel(st, azureV1Responses)},
	}
}

// azure is the wire of one Azure request: the OpenAI format it wraps and
// what the request's path and query said. It is made per request.
type azure struct {
	base       wire // openai{} or responses{}
	s          *Server
	st         *azureState
	kind       azureKind
	version    string // the api-version sent; "v1" on the v1 paths without one
	deployment string // the path's; after decode, the deployment served
	limits     *Limits
}

func (s *Server) azureModel(st *azureState, kind azureKind) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		a := &azure{base: openai{}, s: s, st: st, kind: kind}
		if kind == azureResponses || kind == azureV1Responses {
			a.base = responses{}
		}
		a.deployment = mux.Vars(req)["deployment"]
		v, ok := azureVersion(req, kind)
		if !ok {
			s.metrics.request(a.name(), http.StatusNotFound, "unauthenticated")
			s.writeError(w, a, http.StatusNotFound, apiError{msg: "Resource not found"})
			return
		}
		a.version = v
		s.serveModel(w, req, a)
	}
}

// azureVersion is the request's api-version, false when the path needs
// one it lacks or it is unknown: the deployment paths and /openai/responses
// require a documented version (the responses path one from
// azureResponsesSince on); the v1 paths take none, v1 or preview.
func azureVersion(req *http.Request, kind azureKind) (string, bool) {
	v := req.URL.Query().Get("api-version")
	switch kind {
	case azureV1Chat, azureV1Responses:
		switch v {
		case "":
			return "v1", true
		case "v1", "preview":
			return v, true
		}
		return v, false
	case azureResponses:
		return v, azureVersions[v] && v >= azureResponsesSince
	}
	return v, azureVersions[v]
}

// unwrapAzure is the OpenAI format an Azure request speaks, or wr itself:
// what the type switches on a wire's format look at.
func unwrapAzure(wr wire) wire {
	if a, ok := wr.(*azure); ok {
		return a.base
	}
	return wr
}

func (a *azure) name() string {
	if _, ok := a.base.(responses); ok {
		return "azure-openai-responses"
	}
	return "azure-openai"
}

func (a *azure) requestIDHeader() string { return a.base.requestIDHeader() }
func (a *azure) overloadStatus() int     { return a.base.overloadStatus() }

// authenticateAzure is authenticate for Azure: an api-key header, or a
// bearer token (Microsoft Entra ID), each checked against the keys.
func (s *Server) authenticateAzure(req *http.Request) (string, bool, string) {
	if len(s.keys) == 0 {
		return "", true, ""
	}
	if k := req.Header.Get("Api-Key"); k != "" {
		if s.keys[k] {
			return k, true, ""
		}
		return "", false, "invalid api-key"
	}
	const bearer = "Bearer "
	if auth := req.Header.Get("Authorization"); len(auth) > len(bearer) && auth[:len(bearer)] == bearer {
		if k := auth[len(bearer):]; s.keys[k] {
			return k, true, ""
		}
		return "", false, "invalid bearer token"
	}
	return "", false, "missing api-key header or Authorization: Bearer token"
}

// decode decodes the body in the wrapped format, then resolves the
// deployment: the path's, or the one the model field names. On the
// deployment path the body's model is optional and ignored, as Azure
// ignores it. The call's model becomes the deployment's model.
func (a *azure) decode(body []byte, defaultMax int, c *call) error {
	err := a.base.decode(body, defaultMax, c)
	var br *badRequest
	if err != nil && a.deployment != "" && asBadRequest(err, &br) && br.param == "model" {
		// The deployment path names the model: decode again with it.
		err = a.base.decode(withModel(body, a.deployment), defaultMax, c)
	}
	if err != nil {
		return err
	}
	name := a.deployment
	if name == "" {
		name = c.model
	}
	deps := a.s.cfg.Azure.Deployments
	switch d, ok := deps[name]; {
	case ok:
		c.model = d.Model
		if d.Limits != (Limits{}) {
			a.limits = &d.Limits
		}
	case len(deps) == 0 && a.s.acceptsModel(a.base, name):
		c.model = name
	default:
		return &requestError{http.StatusNotFound, apiError{code: "DeploymentNotFound",
			msg: "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}
	}
	a.deployment = name
	if a.filtered() {
		return &requestError{http.StatusBadRequest, apiError{code: "content_filter", param: "prompt",
			msg: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"}}
	}
	return nil
}

func asBadRequest(err error, br **badRequest) bool {
	b, ok := err.(*badRequest)
	*br = b
	return ok
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
	out = appendJSONString(out, model)
	return append(out, '}')
}

// filtered draws whether the content filter refuses this request.
func (a *azure) filtered() bool {
	rate := a.s.cfg.Azure.ContentFilter
	if rate <= 0 {
		return false
	}
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return a.st.rng.Float64() < rate
}

// poolOf is the per-model pool a request is charged to, besides its key's
// limits: its Azure deployment's, when that has limits, or else the
// limits_by_model pool of its model. s.mu is held.
func (s *Server) poolOf(wr wire, c *call) (string, Limits, bool) {
	if a, ok := wr.(*azure); ok && a.limits != nil {
		// Named apart from every model pattern: a pattern cannot start
		// with a NUL.
		return "\x00azure deployment " + a.deployment, *a.limits, true
	}
	if name := poolFor(s.pools, c.model); name != "" {
		return name, s.pools[name], true
	}
	return "", Limits{}, false
}

// azureError is Azure's own error envelope: a string code and a message.
type azureError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// The texts of Azure's own errors (docs/azure.md).
const (
	azureUnauthorized = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
	azureQuotaURL     = "https://aka.ms/oai/quotaincrease"
)

// writeError answers Azure's errors in Azure's envelope (401, 404, 429,
// the content filter's 400) and the rest as the wrapped OpenAI API does.
func (a *azure) writeError(w http.ResponseWriter, status int, e apiError, reqID string) {
	var ae azureError
	switch {
	case status == http.StatusUnauthorized:
		ae.Error.Code, ae.Error.Message = "401", azureUnauthorized
	case status == http.StatusNotFound && e.code == "DeploymentNotFound":
		ae.Error.Code, ae.Error.Message = e.code, e.msg
	case status == http.StatusNotFound:
		ae.Error.Code, ae.Error.Message = "404", "Resource not found"
	case status == http.StatusTooManyRequests && e.limit != LimitQuota:
		ae.Error.Code, ae.Error.Message = "429", a.throttleMessage(w.Header(), e)
	case status == http.StatusBadRequest && e.code == "content_filter":
		writeJSONBody(w, status, azureFilterError(e))
		return
	default:
		a.base.writeError(w, status, e, reqID)
		return
	}
	writeJSONBody(w, status, ae)
}

// throttleMessage is the text of Azure's 429: the operation, the
// api-version, which rate (token or call) and the wait of retry-after.
func (a *azure) throttleMessage(h http.Header, e apiError) string {
	op := "ChatCompletions_Create"
	if _, ok := a.base.(responses); ok {
		op = "Responses_Create"
	}
	rate := "call rate limit"
	switch e.limit {
	case LimitTPM, LimitITPM, LimitOTPM:
		rate = "token rate limit"
	}
	wait := "1"
	if v := h.Get("Retry-After"); v != "" {
		wait = v
	}
	return fmt.Sprintf("Requests to the %s Operation under Azure OpenAI API version %s have exceeded %s of your current OpenAI S0 pricing tier. Please retry after %s seconds. Please go here: %s if you would like to further increase the default rate limit.",
		op, a.version, rate, wait, azureQuotaURL)
}

// azureFilterError is the content filter's 400: OpenAI's envelope with
// status and innererror, the categories' verdicts in it (hate filtered
// at high severity, the injected refusal's reason).
func azureFilterError(e apiError) any {
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
	}{body{Message: e.msg, Param: e.param, Code: e.code, Status: http.StatusBadRequest,
		Innererror: inner{Code: "ResponsibleAIPolicyViolation", ContentFilterResult: json.RawMessage(azureFilteredResults)}}}
}

// The content filter's verdicts: every category safe, and the refused
// prompt's, hate filtered at high severity.
const (
	azureSafeResults = `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},` +
		`"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`
	azurePromptResults = `{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},` +
		`"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`
	azureFilteredResults = `{"hate":{"filtered":true,"severity":"high"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},` +
		`"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`
	azurePromptFilter = `[{"prompt_index":0,"content_filter_results":` + azurePromptResults + `}]`
)

// azureLimitHeaders are the rate-limit headers Azure sends: the limit and
// the remaining of requests and tokens (no reset headers).
var azureLimitHeaders = [2][2]string{
	{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests"},
	{"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens"},
}

func (a *azure) appendLimitHeaders(buf []byte, l *headerList, s snapshot, _ time.Time) []byte {
	for i, d := range [...]dimension{s.requests, s.tokens} {
		if d.limit <= 0 {
			continue
		}
		buf = strconv.AppendInt(buf, d.limit, 10)
		l.add(azureLimitHeaders[i][0], buf)
		buf = strconv.AppendInt(buf, d.remaining, 10)
		l.add(azureLimitHeaders[i][1], buf)
	}
	return buf
}

// body is the wrapped format's, with Azure's content-filter annotations
// on a chat completion: prompt_filter_results, and content_filter_results
// on each choice.
func (a *azure) body(b []byte, c *call, r *result) ([]byte, error) {
	start := len(b)
	b, err := a.base.body(b, c, r)
	if err != nil || !a.chat() {
		return b, err
	}
	out, err := annotateCompletion(b[start:], true)
	if err != nil {
		return nil, err
	}
	return append(b[:start], out...), nil
}

func (a *azure) chat() bool {
	_, ok := a.base.(openai)
	return ok
}

// streamStart sends Azure's first event of a chat stream, the prompt's
// verdicts with no choices, before the wrapped format's first chunk.
func (a *azure) streamStart(b []byte, c *call, r *result) []byte {
	if !a.chat() {
		return a.base.streamStart(b, c, r)
	}
	b = append(b, `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":`+azurePromptFilter+"}\n\n"...)
	start := len(b)
	return annotateFrames(a.base.streamStart(b, c, r), start)
}

func (a *azure) streamDelta(b []byte, c *call, r *result, from, to int) []byte {
	start := len(b)
	b = a.base.streamDelta(b, c, r, from, to)
	if !a.chat() {
		return b
	}
	return annotateFrames(b, start)
}

func (a *azure) streamEnd(b []byte, c *call, r *result) []byte {
	start := len(b)
	b = a.base.streamEnd(b, c, r)
	if !a.chat() {
		return b
	}
	return annotateFrames(b, start)
}

func (a *azure) streamError(b []byte, c *call, r *result) []byte {
	return a.base.streamError(b, c, r)
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
		verdict := json.RawMessage(azureSafeResults)
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
		m["prompt_filter_results"] = json.RawMessage(azurePromptFilter)
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
	for _, f := range strings.SplitAfter(string(frames), "\n\n") {
		data, ok := strings.CutPrefix(f, "data: ")
		if !ok || !strings.HasPrefix(data, `{"id"`) {
			out = append(out, f...)
			continue
		}
		doc := strings.TrimSuffix(data, "\n\n")
		ann, err := annotateCompletion([]byte(doc), false)
		if err != nil {
			out = append(out, f...)
			continue
		}
		out = append(out, "data: "...)
		out = append(out, ann...)
		out = append(out, "\n\n"...)
	}
	return append(b[:start], out...)
}
