package mock_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ratelab/ratelab/internal/memnet"
	"github.com/ratelab/ratelab/mock"
)

// The Azure OpenAI tests point openai-go's azure package at the mock, over
// TLS on an in-memory listener: the package sends credentials over https
// only (plain http it allows to loopback addresses alone, through a
// transport of its own), so the server is served with a certificate made
// for the test and the client's transport trusts it. Inside a synctest
// bubble, retry waits take exact virtual time.

const (
	azureEndpoint   = "https://mock.test/"
	azureAPIVersion = "2024-10-21"
	azureDeployment = "chat-prod"
)

// azureConfig deploys gpt-4o as chat-prod with 60 rpm enforced per second
// (burst 1s: one request at once, then one a second).
const azureConfig = `
api_keys: [` + sdkKey + `]
latency: {per_token: 5ms}
output: {tokens: {fixed: 12}}
azure:
  deployments:
    chat-prod: {model: gpt-4o, limits: {rpm: 60, tpm: 100000, burst: 1s}}
    mini: {model: gpt-4o-mini}
`

// azureAttempt is one HTTP attempt as the client saw it.
type azureAttempt struct {
	at      time.Time
	url     string
	header  http.Header // the request's
	status  int
	resp    http.Header
	errBody string // the body of an error answer
}

// azureTape records every attempt, reading error bodies (and restoring
// them for the SDK).
type azureTape struct {
	next http.RoundTripper
	mu   sync.Mutex
	log  []azureAttempt
}

func (t *azureTape) RoundTrip(req *http.Request) (*http.Response, error) {
	a := azureAttempt{at: time.Now(), url: req.URL.String(), header: req.Header.Clone()}
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		a.status, a.resp = resp.StatusCode, resp.Header.Clone()
		if resp.StatusCode >= 400 {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			a.errBody = string(b)
			resp.Body = io.NopCloser(bytes.NewReader(b))
		}
	}
	t.mu.Lock()
	t.log = append(t.log, a)
	t.mu.Unlock()
	return resp, err
}

func (t *azureTape) attempts() []azureAttempt {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.log
	t.log = nil
	return a
}

// azureHarness is the mock served over TLS on an in-memory listener.
type azureHarness struct {
	srv  *mock.Server
	hc   *http.Client
	tape *azureTape
}

func startAzure(t *testing.T, yaml string) *azureHarness {
	t.Helper()
	cfg, err := mock.ParseConfig([]byte(yaml), "azure_test.yaml")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	cert, pool := testCertificate(t, "mock.test")
	ln := memnet.New()
	tln := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	served := make(chan struct{})
	go func() {
		srv.Serve(tln)
		close(served)
	}()
	tr := &http.Transport{DialContext: ln.Dial, TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "mock.test"}}
	tp := &azureTape{next: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
		ln.Close()
		<-served
	})
	return &azureHarness{srv: srv, hc: &http.Client{Transport: tp}, tape: tp}
}

// testCertificate is a self-signed certificate for host and the pool that
// trusts it.
func testCertificate(t *testing.T, host string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// client is openai-go configured for Azure as its documentation shows:
// azure.WithEndpoint and azure.WithAPIKey, nothing else changed.
func (h *azureHarness) client(opts ...ooption.RequestOption) openai.Client {
	return openai.NewClient(append([]ooption.RequestOption{
		azure.WithEndpoint(azureEndpoint, azureAPIVersion),
		azure.WithAPIKey(sdkKey),
		ooption.WithHTTPClient(h.hc),
	}, opts...)...)
}

func userMsg(s string) []openai.ChatCompletionMessageParamUnion {
	return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(s)}
}

// checkAzureRequest checks that an attempt went to path with the
// api-version and the api-key header, as openai-go's azure package sends
// them.
func checkAzureRequest(t *testing.T, a azureAttempt, path string) {
	t.Helper()
	want := "https://mock.test" + path + "?api-version=" + azureAPIVersion
	if a.url != want {
		t.Errorf("URL = %s, want %s", a.url, want)
	}
	if got := a.header.Get("Api-Key"); got != sdkKey {
		t.Errorf("api-key = %q, want the key", got)
	}
	if got := a.header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none with azure.WithAPIKey", got)
	}
}

func TestAzureGoSDKChat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startAzure(t, azureConfig)
		c := h.client()
		cc, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: azureDeployment, Messages: userMsg("Hello")})
		if err != nil {
			t.Fatal(err)
		}
		att := h.tape.attempts()
		if len(att) != 1 || att[0].status != 200 {
			t.Fatalf("attempts %+v, want one 200", att)
		}
		checkAzureRequest(t, att[0], "/openai/deployments/chat-prod/chat/completions")
		// The model of the answer is the deployment's, not its name.
		if cc.Model != "gpt-4o" || cc.Usage.CompletionTokens != 12 || cc.Choices[0].Message.Content == "" {
			t.Errorf("completion: model %q, %d tokens, content %q; want gpt-4o, 12, text", cc.Model, cc.Usage.CompletionTokens, cc.Choices[0].Message.Content)
		}
		var raw struct {
			Prompt []struct {
				Index   int                        `json:"prompt_index"`
				Results map[string]json.RawMessage `json:"content_filter_results"`
			} `json:"prompt_filter_results"`
			Choices []struct {
				Results map[string]struct {
					Filtered bool   `json:"filtered"`
					Severity string `json:"severity"`
				} `json:"content_filter_results"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(cc.RawJSON()), &raw); err != nil {
			t.Fatal(err)
		}
		if len(raw.Prompt) != 1 || raw.Prompt[0].Index != 0 || len(raw.Prompt[0].Results) != 5 {
			t.Errorf("prompt_filter_results = %+v, want one prompt with 5 categories", raw.Prompt)
		}
		if r := raw.Choices[0].Results; len(r) != 4 || r["hate"].Severity != "safe" || r["violence"].Filtered {
			t.Errorf("choices[0].content_filter_results = %+v, want 4 safe categories", r)
		}
		// The deployment's limits in Azure's headers: limit and remaining.
		if got := att[0].resp.Get("X-Ratelimit-Limit-Requests"); got != "60" {
			t.Errorf("x-ratelimit-limit-requests = %q, want the deployment's 60", got)
		}
		if got := att[0].resp.Get("X-Ratelimit-Remaining-Requests"); got != "0" {
			t.Errorf("x-ratelimit-remaining-requests = %q, want 0 (burst 1s holds one request)", got)
		}
		if got := att[0].resp.Get("X-Ratelimit-Remaining-Tokens"); got != "1410" {
			t.Errorf("x-ratelimit-remaining-tokens = %q, want a second's bucket (100000/60 = 1666) less max_tokens 256", got)
		}
		if got := att[0].resp.Get("X-Ratelimit-Reset-Requests"); got != "" {
			t.Errorf("x-ratelimit-reset-requests = %q: Azure sends no reset headers", got)
		}
	})
}

func TestAzureGoSDKStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startAzure(t, azureConfig)
		c := h.client()
		stream := c.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
			Model: azureDeployment, Messages: userMsg("Hello"),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		var acc openai.ChatCompletionAccumulator
		var first string
		filtered, chunks := 0, 0
		for stream.Next() {
			ch := stream.Current()
			if chunks == 0 {
				first = ch.RawJSON()
			}
			chunks++
			acc.AddChunk(ch)
			if len(ch.Choices) > 0 && strings.Contains(ch.RawJSON(), `"content_filter_results":{"hate"`) {
				filtered++
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		checkAzureRequest(t, h.tape.attempts()[0], "/openai/deployments/chat-prod/chat/completions")
		// Azure's first event: the prompt's verdicts, no choices.
		if !strings.Contains(first, `"choices":[]`) || !strings.Contains(first, `"prompt_filter_results":[{"prompt_index":0`) {
			t.Errorf("first chunk = %s, want Azure's prompt_filter_results event", first)
		}
		if got := acc.Choices[0].Message.Content; mock.EstimateTokens(got) != 12 || acc.Usage.CompletionTokens != 12 {
			t.Errorf("accumulated %q (%d tokens), want 12 tokens", got, acc.Usage.CompletionTokens)
		}
		// Each of the 12 token deltas carries the verdicts.
		if filtered != 12 {
			t.Errorf("%d chunks with content_filter_results verdicts, want 12 (one per token)", filtered)
		}
	})
}

func TestAzureGoSDKToolsAndStructured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startAzure(t, azureConfig)
		c := h.client()
		cc, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model: "mini", Messages: userMsg("Weather in Paris?"),
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name: "get_weather", Parameters: mustMap(t, weatherSchema),
			})},
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
		})
		if err != nil {
			t.Fatal(err)
		}
		checkAzureRequest(t, h.tape.attempts()[0], "/openai/deployments/mini/chat/completions")
		if cc.Model != "gpt-4o-mini" || cc.Choices[0].FinishReason != "tool_calls" || len(cc.Choices[0].Message.ToolCalls) != 1 {
			t.Fatalf("model %q, finish %q, tool calls %+v", cc.Model, cc.Choices[0].FinishReason, cc.Choices[0].Message.ToolCalls)
		}
		call := cc.Choices[0].Message.ToolCalls[0]
		if call.Function.Name != "get_weather" {
			t.Errorf("tool %q, want get_weather", call.Function.Name)
		}
		checkValid(t, "arguments", weatherSchema, []byte(call.Function.Arguments))

		cc, err = c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model: "mini", Messages: userMsg("Extract the invoice."),
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "invoice", Strict: openai.Bool(true), Schema: mustMap(t, extractSchema)},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		checkValid(t, "structured output", extractSchema, []byte(cc.Choices[0].Message.Content))
		if !strings.Contains(cc.RawJSON(), `"prompt_filter_results"`) {
			t.Error("structured output: no prompt_filter_results")
		}
	})
}

// TestAzureGoSDK429 exhausts the deployment's rpm: Azure's 429 carries
// retry-after (whole seconds) and retry-after-ms, and openai-go waits the
// milliseconds (retry-after-ms first, requestconfig.go) and retries.
func TestAzureGoSDK429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startAzure(t, azureConfig)
		c := h.client()
		ctx := t.Context()
		params := openai.ChatCompletionNewParams{Model: azureDeployment, Messages: userMsg("Hello"), MaxCompletionTokens: openai.Int(12)}
		if _, err := c.Chat.Completions.New(ctx, params); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := c.Chat.Completions.New(ctx, params); err != nil {
			t.Fatalf("second request: %v (the SDK should retry the 429)", err)
		}
		att := h.tape.attempts()
		if len(att) != 3 || att[0].status != 200 || att[1].status != 429 || att[2].status != 200 {
			t.Fatalf("statuses %v, want 200, 429, 200", azureStatuses(att))
		}
		r := att[1]
		// The first request's 12 tokens took 60ms: the bucket refills its
		// one request 1s after the first was admitted, 940ms after the 429.
		if got := r.resp.Get("Retry-After-Ms"); got != "941" {
			t.Errorf("retry-after-ms = %q, want 941 (the wait, plus one ms)", got)
		}
		if got := r.resp.Get("Retry-After"); got != "1" {
			t.Errorf("retry-after = %q, want 1", got)
		}
		if wait := att[2].at.Sub(att[1].at); wait != 941*time.Millisecond {
			t.Errorf("the SDK retried after %v, want retry-after-ms's 941ms", wait)
		}
		if got := r.resp.Get("X-Ratelimit-Remaining-Requests"); got != "0" {
			t.Errorf("429 x-ratelimit-remaining-requests = %q, want 0", got)
		}
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal([]byte(r.errBody), &body); err != nil {
			t.Fatalf("429 body %q: %v", r.errBody, err)
		}
		want := "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 1 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."
		if body.Error.Code != "429" || body.Error.Message != want {
			t.Errorf("429 body = %+v, want code 429 and Azure's text", body.Error)
		}
		if took := time.Since(start); took != 941*time.Millisecond+60*time.Millisecond {
			t.Errorf("the retried call took %v, want 941ms + 60ms", took)
		}

		// Without retries the SDK surfaces the 429 as an *openai.Error.
		_, err := c.Chat.Completions.New(ctx, params, ooption.WithMaxRetries(0))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "429" {
			t.Fatalf("err = %v, want *openai.Error 429 with code \"429\"", err)
		}
	})
}

func azureStatuses(att []azureAttempt) []int {
	s := make([]int, len(att))
	for i, a := range att {
		s[i] = a.status
	}
	return s
}

// TestAzureGoSDKContentFilter injects the content filter's refusal: a 400
// content_filter, which the SDK does not retry.
func TestAzureGoSDKContentFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startAzure(t, azureConfig+"  content_filter: 1\n")
		c := h.client()
		_, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: azureDeployment, Messages: userMsg("Hello")})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "content_filter" || apiErr.Param != "prompt" {
			t.Fatalf("err = %v, want a 400 content_filter on param prompt", err)
		}
		att := h.tape.attempts()
		if len(att) != 1 {
			t.Fatalf("%d attempts, want 1: a 400 is not retried", len(att))
		}
		var body struct {
			Error struct {
				Status     int `json:"status"`
				Innererror struct {
					Code   string `json:"code"`
					Result map[string]struct {
						Filtered bool   `json:"filtered"`
						Severity string `json:"severity"`
					} `json:"content_filter_result"`
				} `json:"innererror"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(att[0].errBody), &body); err != nil {
			t.Fatal(err)
		}
		e := body.Error
		if e.Status != 400 || e.Innererror.Code != "ResponsibleAIPolicyViolation" || !e.Innererror.Result["hate"].Filtered || e.Innererror.Result["hate"].Severity != "high" {
			t.Errorf("error = %s, want innererror ResponsibleAIPolicyViolation with hate filtered", att[0].errBody)
		}
	})
}

// TestAzureGoSDKResponses calls the Responses API two ways: openai-go's
// azure package (/openai/responses?api-version=…, needing a 2025-03-01
// preview or later), and a plain client on the v1 path with a bearer key.
func TestAzureGoSDKResponses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startAzure(t, azureConfig)
		c := openai.NewClient(azure.WithEndpoint(azureEndpoint, "2025-04-01-preview"), azure.WithAPIKey(sdkKey), ooption.WithHTTPClient(h.hc))
		r, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")}})
		if err != nil {
			t.Fatal(err)
		}
		att := h.tape.attempts()
		if att[0].url != "https://mock.test/openai/responses?api-version=2025-04-01-preview" {
			t.Errorf("URL = %s", att[0].url)
		}
		if r.Model != "gpt-4o-mini" || r.OutputText() == "" || r.Status != "completed" {
			t.Errorf("response: model %q, status %q, text %q", r.Model, r.Status, r.OutputText())
		}

		v1 := openai.NewClient(ooption.WithBaseURL(azureEndpoint+"openai/v1/"), ooption.WithAPIKey(sdkKey), ooption.WithHTTPClient(h.hc))
		stream := v1.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{Model: azureDeployment, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")}})
		var text string
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "response.output_text.delta" {
				text += ev.Delta
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if mock.EstimateTokens(text) != 12 {
			t.Errorf("v1 stream text %q, want 12 tokens", text)
		}
		att = h.tape.attempts()
		if att[0].url != "https://mock.test/openai/v1/responses" || att[0].header.Get("Authorization") != "Bearer "+sdkKey {
			t.Errorf("v1: URL %s, Authorization %q", att[0].url, att[0].header.Get("Authorization"))
		}
		cc, err := v1.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "mini", Messages: userMsg("Hi")})
		if err != nil {
			t.Fatal(err)
		}
		if cc.Model != "gpt-4o-mini" || !strings.Contains(cc.RawJSON(), "prompt_filter_results") {
			t.Errorf("v1 chat: model %q, body %s", cc.Model, cc.RawJSON())
		}
	})
}
