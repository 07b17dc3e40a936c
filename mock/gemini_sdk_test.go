package mock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/auth"
	"google.golang.org/genai"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// The Gemini API through google.golang.org/genai, unchanged, pointed at
// the mock with HTTPOptions.BaseURL: the Gemini API backend in virtual
// time (in memory, synctest), the Vertex AI backend with its own
// credentials path on loopback.

const geminiModel = "gemini-2.5-flash"

// gemini is a genai client of the Gemini API backend on h.
func (h *harness) gemini(t *testing.T, retry *genai.HTTPRetryOptions) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{
		APIKey:      sdkKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  h.hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: sdkBaseURL, RetryOptions: retry},
	})
	if err != nil {
		t.Fatalf("genai.NewClient: %v", err)
	}
	return c
}

const geminiConfig = `
api_keys: [` + sdkKey + `]
latency: {ttft: 100ms, per_token: 5ms}
output: {tokens: {fixed: 20}}
`

func TestGeminiGoSDKPlainAndStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, geminiConfig)
		c := h.gemini(t, nil)
		prompt := "What is the capital of France?"
		cfg := &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("Be terse.", genai.RoleUser), MaxOutputTokens: 64}
		start := time.Now()
		resp, err := c.Models.GenerateContent(t.Context(), geminiModel, genai.Text(prompt), cfg)
		if err != nil {
			t.Fatalf("GenerateContent: %v", err)
		}
		if took, want := time.Since(start), 100*time.Millisecond+20*5*time.Millisecond; took != want {
			t.Errorf("GenerateContent took %v, want %v (ttft + 20 tokens × 5ms)", took, want)
		}
		if len(resp.Candidates) != 1 || resp.Candidates[0].FinishReason != genai.FinishReasonStop {
			t.Fatalf("candidates = %+v, want one ended STOP", resp.Candidates)
		}
		text := resp.Text()
		if mock.EstimateTokens(text) == 0 || resp.ModelVersion != geminiModel || resp.ResponseID == "" {
			t.Errorf("text %q, modelVersion %q, responseId %q", text, resp.ModelVersion, resp.ResponseID)
		}
		u := resp.UsageMetadata
		if want := int32(promptTokens("Be terse.", prompt)); u.PromptTokenCount != want || u.CandidatesTokenCount != 20 || u.TotalTokenCount != want+20 {
			t.Errorf("usage = %+v, want prompt %d, candidates 20, total %d", u, want, want+20)
		}

		// Streamed: the same text in chunks, the last with the finish
		// reason and the whole usage.
		var got strings.Builder
		chunks := 0
		var last *genai.GenerateContentResponse
		for r, err := range c.Models.GenerateContentStream(t.Context(), geminiModel, genai.Text(prompt), cfg) {
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			chunks++
			got.WriteString(r.Text())
			last = r
		}
		if got.String() != text {
			t.Errorf("streamed text %q, want the JSON answer's %q", got.String(), text)
		}
		if chunks < 10 {
			t.Errorf("%d chunks, want one per token and a last one", chunks)
		}
		if last.Candidates[0].FinishReason != genai.FinishReasonStop || last.UsageMetadata.CandidatesTokenCount != 20 {
			t.Errorf("last chunk: %+v %+v", last.Candidates[0], last.UsageMetadata)
		}

		// max_tokens: MAX_TOKENS.
		resp, err = c.Models.GenerateContent(t.Context(), geminiModel, genai.Text(prompt), &genai.GenerateContentConfig{MaxOutputTokens: 5})
		if err != nil {
			t.Fatalf("GenerateContent: %v", err)
		}
		if resp.Candidates[0].FinishReason != genai.FinishReasonMaxTokens || resp.UsageMetadata.CandidatesTokenCount != 5 {
			t.Errorf("maxOutputTokens 5: %s, %d tokens; want MAX_TOKENS, 5", resp.Candidates[0].FinishReason, resp.UsageMetadata.CandidatesTokenCount)
		}

		// countTokens, models.get and models.list.
		ct, err := c.Models.CountTokens(t.Context(), geminiModel, genai.Text(prompt), nil)
		if err != nil || ct.TotalTokens != int32(promptTokens(prompt)) {
			t.Errorf("CountTokens = %+v, %v; want %d", ct, err, promptTokens(prompt))
		}
		m, err := c.Models.Get(t.Context(), geminiModel, nil)
		if err != nil || m.Name != "models/"+geminiModel {
			t.Errorf("Models.Get = %+v, %v", m, err)
		}
		page, err := c.Models.List(t.Context(), nil)
		if err != nil || len(page.Items) < 5 {
			t.Errorf("Models.List: %d models, %v", len(page.Items), err)
		}
	})
}

// weatherGeminiSchema is weatherSchema's fields in the Gemini Schema's
// terms (upper-case types, int64 bounds, nullable).
func weatherGeminiSchema() *genai.Schema {
	one, three := int64(1), int64(3)
	lo, hi := 1.0, 14.0
	return &genai.Schema{
		Type:     genai.TypeObject,
		Required: []string{"location", "unit", "days", "stations"},
		Properties: map[string]*genai.Schema{
			"location": {Type: genai.TypeString},
			"unit":     {Type: genai.TypeString, Enum: []string{"celsius", "fahrenheit"}, Format: "enum"},
			"days":     {Type: genai.TypeInteger, Minimum: &lo, Maximum: &hi},
			"stations": {Type: genai.TypeArray, MinItems: &one, MaxItems: &three, Items: &genai.Schema{Type: genai.TypeString}},
			"note":     {Type: genai.TypeString, Nullable: genai.Ptr(true)},
		},
	}
}

// weatherGeminiJSONSchema is the same schema in JSON Schema, for the
// independent validator.
const weatherGeminiJSONSchema = `{"type":"object","required":["location","unit","days","stations"],"properties":{
 "location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},
 "days":{"type":"integer","minimum":1,"maximum":14},
 "stations":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string"}},
 "note":{"type":["string","null"]}}}`

func TestGeminiGoSDKToolsAndSchema(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, geminiConfig)
		c := h.gemini(t, nil)
		tools := []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
			{Name: "noop"},
			{Name: "get_weather", Parameters: weatherGeminiSchema()},
		}}}
		cfg := &genai.GenerateContentConfig{Tools: tools, MaxOutputTokens: 1024, ToolConfig: &genai.ToolConfig{
			FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"get_weather"}}}}
		resp, err := c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("Weather in Paris?"), cfg)
		if err != nil {
			t.Fatalf("GenerateContent: %v", err)
		}
		calls := resp.FunctionCalls()
		if len(calls) != 1 || calls[0].Name != "get_weather" {
			t.Fatalf("function calls = %+v, want one get_weather", calls)
		}
		args, _ := json.Marshal(calls[0].Args)
		checkValid(t, "functionCall.args", weatherGeminiJSONSchema, args)
		if got, want := resp.UsageMetadata.CandidatesTokenCount, int32(mock.EstimateTokens(string(args))); got < want/2 {
			t.Errorf("candidatesTokenCount = %d for args of ~%d tokens", got, want)
		}
		// Streamed: the call whole, in the last chunk.
		var streamed []*genai.FunctionCall
		for r, err := range c.Models.GenerateContentStream(t.Context(), geminiModel, genai.Text("Weather in Paris?"), cfg) {
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			streamed = append(streamed, r.FunctionCalls()...)
		}
		if len(streamed) != 1 || streamed[0].Name != "get_weather" {
			t.Fatalf("streamed calls = %+v", streamed)
		}
		if sa, _ := json.Marshal(streamed[0].Args); string(sa) != string(args) {
			t.Errorf("streamed args %s, want the JSON answer's %s", sa, args)
		}

		// parametersJsonSchema: a JSON Schema as it is.
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "get_weather", ParametersJsonSchema: mustMap(t, weatherSchema)}}}}
		resp, err = c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("Weather in Oslo?"), cfg)
		if err != nil {
			t.Fatalf("GenerateContent (parametersJsonSchema): %v", err)
		}
		args, _ = json.Marshal(resp.FunctionCalls()[0].Args)
		checkValid(t, "functionCall.args (parametersJsonSchema)", weatherSchema, args)

		// Structured output: responseSchema and responseJsonSchema.
		for name, sc := range map[string]*genai.GenerateContentConfig{
			"responseSchema":     {ResponseMIMEType: "application/json", ResponseSchema: weatherGeminiSchema(), MaxOutputTokens: 1024},
			"responseJsonSchema": {ResponseMIMEType: "application/json", ResponseJsonSchema: mustMap(t, weatherGeminiJSONSchema), MaxOutputTokens: 1024},
		} {
			resp, err := c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("Weather as JSON"), sc)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkValid(t, name, weatherGeminiJSONSchema, []byte(resp.Text()))
			var streamed strings.Builder
			for r, err := range c.Models.GenerateContentStream(t.Context(), geminiModel, genai.Text("Weather as JSON"), sc) {
				if err != nil {
					t.Fatalf("%s stream: %v", name, err)
				}
				streamed.WriteString(r.Text())
			}
			if streamed.String() != resp.Text() {
				t.Errorf("%s: streamed %q, want %q", name, streamed.String(), resp.Text())
			}
		}
	})
}

// geminiAPIError is err as the SDK's APIError.
func geminiAPIError(t *testing.T, err error) genai.APIError {
	t.Helper()
	var ae genai.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want a genai.APIError", err, err)
	}
	return ae
}

// detail is the detail of type typ of ae, or nil.
func detail(ae genai.APIError, typ string) map[string]any {
	for _, d := range ae.Details {
		if d["@type"] == "type.googleapis.com/google.rpc."+typ {
			return d
		}
	}
	return nil
}

// TestGeminiGoSDK429 is a rate limit as genai sees it: by default one
// attempt and an APIError (RESOURCE_EXHAUSTED, QuotaFailure naming the
// per-minute quota, RetryInfo with the mock's wait); with RetryOptions,
// the SDK's own exponential backoff (it does not read RetryInfo): with
// InitialDelay 1s and no jitter, 1s, 2s, 4s.
func TestGeminiGoSDK429(t *testing.T) {
	const cfg = `
api_keys: [` + sdkKey + `]
latency: {ttft: 0s, per_token: 1ms}
output: {tokens: {fixed: 2}}
limits: {rpm: 1}
`
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, cfg)
		c := h.gemini(t, nil)
		if _, err := c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("hi"), nil); err != nil {
			t.Fatalf("first call: %v", err)
		}
		h.tape.log()
		_, err := c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("hi"), nil)
		ae := geminiAPIError(t, err)
		if ae.Code != 429 || ae.Status != "RESOURCE_EXHAUSTED" {
			t.Errorf("APIError %d %s, want 429 RESOURCE_EXHAUSTED", ae.Code, ae.Status)
		}
		if ri := detail(ae, "RetryInfo"); ri == nil || ri["retryDelay"] != "60s" {
			t.Errorf("RetryInfo = %v, want retryDelay 60s", ri)
		}
		qf := detail(ae, "QuotaFailure")
		if qf == nil || !strings.Contains(fmt.Sprint(qf["violations"]), "PerMinute") {
			t.Errorf("QuotaFailure = %v, want a per-minute quota", qf)
		}
		if n := len(h.tape.log()); n != 1 {
			t.Errorf("%d attempts, want 1: genai retries only with RetryOptions", n)
		}

		one, zero := 1.0, 0.0
		c = h.gemini(t, &genai.HTTPRetryOptions{InitialDelay: &one, Jitter: &zero})
		_, err = c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("hi"), nil)
		if ae := geminiAPIError(t, err); ae.Code != 429 {
			t.Errorf("with retries: %v", err)
		}
		as := h.tape.log()
		if got := fmt.Sprint(statuses(as)); got != "[429 429 429 429 429]" {
			t.Fatalf("statuses = %s, want five 429s (Attempts defaults to 5)", got)
		}
		for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
			if gap := as[i+1].at.Sub(as[i].at); gap != want {
				t.Errorf("wait before attempt %d = %v, want %v", i+2, gap, want)
			}
		}
	})
}

// TestGeminiGoSDKErrors: quota versus rate, overload, 400 naming the
// field, a wrong key, an unknown model.
func TestGeminiGoSDKErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, `
api_keys: [`+sdkKey+`]
quota: {requests: 1}
`)
		c := h.gemini(t, nil)
		if _, err := c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("hi"), nil); err != nil {
			t.Fatal(err)
		}
		_, err := c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("hi"), nil)
		ae := geminiAPIError(t, err)
		if ae.Code != 429 || detail(ae, "RetryInfo") != nil || !strings.Contains(fmt.Sprint(detail(ae, "QuotaFailure")), "PerDay") {
			t.Errorf("spent quota: %d %v, want 429 with a per-day QuotaFailure and no RetryInfo", ae.Code, ae.Details)
		}

		_, err = c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("hi"), &genai.GenerateContentConfig{Temperature: genai.Ptr[float32](3)})
		ae = geminiAPIError(t, err)
		br := detail(ae, "BadRequest")
		if ae.Code != 400 || ae.Status != "INVALID_ARGUMENT" || !strings.Contains(fmt.Sprint(br), "generationConfig.temperature") {
			t.Errorf("temperature 3: %d %s %v, want 400 INVALID_ARGUMENT naming generationConfig.temperature", ae.Code, ae.Status, ae.Details)
		}
		_, err = c.Models.GenerateContent(t.Context(), "gemini-nonexistent", genai.Text("hi"), nil)
		if ae := geminiAPIError(t, err); ae.Code != 404 || ae.Status != "NOT_FOUND" {
			t.Errorf("unknown model: %d %s", ae.Code, ae.Status)
		}
		bad, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: "wrong", Backend: genai.BackendGeminiAPI, HTTPClient: h.hc, HTTPOptions: genai.HTTPOptions{BaseURL: sdkBaseURL}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bad.Models.GenerateContent(t.Context(), geminiModel, genai.Text("hi"), nil)
		if ae := geminiAPIError(t, err); ae.Code != 400 || !strings.Contains(ae.Message, "API key not valid") {
			t.Errorf("wrong key: %d %s", ae.Code, ae.Message)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, "api_keys: ["+sdkKey+"]\nfaults: {overloaded: 1}\n")
		_, err := h.gemini(t, nil).Models.GenerateContent(t.Context(), geminiModel, genai.Text("hi"), nil)
		if ae := geminiAPIError(t, err); ae.Code != 503 || ae.Status != "UNAVAILABLE" {
			t.Errorf("overloaded: %d %s, want 503 UNAVAILABLE", ae.Code, ae.Status)
		}
	})
}

// staticToken is a TokenProvider of one bearer token.
type staticToken string

func (s staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(s), Type: "Bearer", Expiry: time.Now().Add(time.Hour)}, nil
}

// TestGeminiGoSDKVertex is the Vertex AI backend: the SDK's own
// credentials path (auth.Credentials, a bearer token) on loopback, the
// project and location in the path.
func TestGeminiGoSDKVertex(t *testing.T) {
	cfg, err := mock.ParseConfig([]byte(`
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 0s}
output: {tokens: {fixed: 8}}
limits: {rpm: 3}
`), "vertex.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	srv := mocktest.Start(t, cfg, mocktest.Wrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			paths = append(paths, r.URL.Path)
			next.ServeHTTP(w, r)
		})
	}))
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "my-project", Location: "us-central1",
		Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken(sdkKey)}),
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		t.Fatalf("genai.NewClient: %v", err)
	}
	resp, err := c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("Hello"), nil)
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if resp.UsageMetadata.CandidatesTokenCount != 8 || resp.UsageMetadata.TrafficType != genai.TrafficTypeOnDemand || resp.CreateTime.IsZero() {
		t.Errorf("usage %+v, createTime %v", resp.UsageMetadata, resp.CreateTime)
	}
	want := "/v1beta1/projects/my-project/locations/us-central1/publishers/google/models/" + geminiModel + ":generateContent"
	if len(paths) != 1 || paths[0] != want {
		t.Errorf("paths = %q, want [%q]", paths, want)
	}
	var text strings.Builder
	for r, err := range c.Models.GenerateContentStream(t.Context(), geminiModel, genai.Text("Hello"), nil) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		text.WriteString(r.Text())
	}
	if text.String() != resp.Text() {
		t.Errorf("streamed %q, want %q", text.String(), resp.Text())
	}
	resp, err = c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("Weather?"), &genai.GenerateContentConfig{
		Tools:      []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "get_weather", Parameters: weatherGeminiSchema()}}}},
		ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny}},
	})
	if err != nil || len(resp.FunctionCalls()) != 1 {
		t.Fatalf("tool call: %v", err)
	}
	_, err = c.Models.GenerateContent(t.Context(), geminiModel, genai.Text("Hello"), nil)
	ae := geminiAPIError(t, err)
	if ae.Code != 429 || ae.Status != "RESOURCE_EXHAUSTED" || !strings.Contains(ae.Message, "aiplatform.googleapis.com/generate_content_requests_per_minute") {
		t.Errorf("rpm: %d %s %q", ae.Code, ae.Status, ae.Message)
	}

	noToken, err := genai.NewClient(t.Context(), &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "my-project", Location: "us-central1",
		Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken("wrong")}),
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = noToken.Models.GenerateContent(t.Context(), geminiModel, genai.Text("Hello"), nil)
	if ae := geminiAPIError(t, err); ae.Code != 401 || ae.Status != "UNAUTHENTICATED" {
		t.Errorf("wrong token: %d %s, want 401 UNAUTHENTICATED", ae.Code, ae.Status)
	}
}
