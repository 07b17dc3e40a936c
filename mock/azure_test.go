package mock

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ratelab/ratelab/mock/internal/azure"
)

const azureTestConfig = `
api_keys: [k1]
latency: {per_token: 0s}
output: {tokens: {fixed: 3}}
azure:
  deployments:
    prod: {model: gpt-4o, limits: {tpm: 10000, rpm: 6}}
`

const azureChatBody = `{"messages":[{"role":"user","content":"Hi"}]}`

// TestAzureErrors checks Azure's own answers: api-version required and
// checked, deployments resolved, keys in api-key or a bearer token.
func TestAzureErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := ParseConfig([]byte(azureTestConfig), "azure.yaml")
		if err != nil {
			t.Fatal(err)
		}
		ts := startServer(t, cfg)
		defer ts.stop()
		const dep = "/openai/deployments/prod/chat/completions"
		tests := []struct {
			name, path, body string
			headers          []string
			status           int
			want             string // the whole body, compact
		}{
			{"no api-version", dep, azureChatBody, []string{"Api-Key", "k1"}, 404, `{"error":{"code":"404","message":"Resource not found"}}`},
			{"unknown api-version", dep + "?api-version=2099-01-01", azureChatBody, []string{"Api-Key", "k1"}, 404, `{"error":{"code":"404","message":"Resource not found"}}`},
			{"responses before 2025-03-01-preview", "/openai/responses?api-version=2024-10-21", `{"model":"prod","input":"Hi"}`, []string{"Api-Key", "k1"}, 404, `{"error":{"code":"404","message":"Resource not found"}}`},
			{"v1 with a dated version", "/openai/v1/chat/completions?api-version=2024-10-21", azureChatBody, []string{"Api-Key", "k1"}, 404, `{"error":{"code":"404","message":"Resource not found"}}`},
			{"unknown path", "/openai/deployments/prod/embeddings?api-version=2024-10-21", `{}`, []string{"Api-Key", "k1"}, 404, `{"error":{"code":"404","message":"Resource not found"}}`},
			{"wrong key", dep + "?api-version=2024-10-21", azureChatBody, []string{"Api-Key", "nope"}, 401, `{"error":{"code":"401","message":"` + azure.Unauthorized + `"}}`},
			{"no key", dep + "?api-version=2024-10-21", azureChatBody, nil, 401, `{"error":{"code":"401","message":"` + azure.Unauthorized + `"}}`},
			{"unknown deployment", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", azureChatBody, []string{"Api-Key", "k1"}, 404,
				`{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`},
			{"v1 unknown deployment", "/openai/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}]}`, []string{"Api-Key", "k1"}, 404,
				`{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`},
			{"invalid body", dep + "?api-version=2024-10-21", `{"messages":[]}`, []string{"Api-Key", "k1"}, 400,
				`{"error":{"message":"messages: at least one message is required","type":"invalid_request_error","param":"messages","code":"invalid_value"}}`},
		}
		for _, tt := range tests {
			r := ts.do(t, "POST", tt.path, tt.body, tt.headers...)
			if r.status != tt.status || compactJSON(t, r.body) != tt.want {
				t.Errorf("%s: %d %s, want %d %s", tt.name, r.status, r.body, tt.status, tt.want)
			}
		}

		// A bearer token (Microsoft Entra ID) is accepted as well; the
		// body's model is ignored on the deployment path.
		r := ts.do(t, "POST", dep+"?api-version=2024-10-21", `{"model":"ignored","messages":[{"role":"user","content":"Hi"}]}`, "Authorization", "Bearer k1")
		if r.status != 200 || r.json(t)["model"] != "gpt-4o" {
			t.Errorf("bearer: %d %s, want 200 from gpt-4o", r.status, r.body)
		}
		// Each deployment has its own limits: rpm 6 allows six requests a
		// minute, the seventh is Azure's 429 with retry-after-ms.
		for i := range 5 {
			if r := ts.do(t, "POST", dep+"?api-version=2024-02-01", azureChatBody, "Api-Key", "k1"); r.status != 200 {
				t.Fatalf("request %d: %d %s", i+2, r.status, r.body)
			}
		}
		r = ts.do(t, "POST", dep+"?api-version=2024-02-01", azureChatBody, "Api-Key", "k1")
		if r.status != 429 || r.header.Get("Retry-After") != "10" || r.header.Get("Retry-After-Ms") != "10001" {
			t.Fatalf("7th request: %d retry-after %q retry-after-ms %q %s, want 429 after 10s", r.status, r.header.Get("Retry-After"), r.header.Get("Retry-After-Ms"), r.body)
		}
		if !strings.Contains(string(r.body), "API version 2024-02-01 have exceeded call rate limit") {
			t.Errorf("429 body %s, want Azure's call-rate text with the api-version", r.body)
		}
		// The v1 path naming the deployment in its model field is charged
		// to the same deployment's limits.
		r = ts.do(t, "POST", "/openai/v1/chat/completions", `{"model":"prod","messages":[{"role":"user","content":"Hi"}]}`, "Api-Key", "k1")
		if r.status != 429 || !strings.Contains(string(r.body), "API version v1 have exceeded") {
			t.Errorf("v1 on the same deployment: %d %s, want its 429", r.status, r.body)
		}
	})
}

// TestAzureDefaultDeployments: with no deployments configured, every
// catalogue model is deployed under its own name.
func TestAzureDefaultDeployments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, Config{})
		defer ts.stop()
		r := ts.do(t, "POST", "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21", `{}`)
		if r.status != 400 {
			t.Errorf("empty body: %d %s, want 400", r.status, r.body)
		}
		r = ts.do(t, "POST", "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21", azureChatBody)
		if r.status != 200 || r.json(t)["model"] != "gpt-4o-mini" {
			t.Errorf("catalogue deployment: %d %s", r.status, r.body)
		}
		r = ts.do(t, "POST", "/openai/deployments/my-model/chat/completions?api-version=2024-10-21", azureChatBody)
		if r.status != 404 || !strings.Contains(string(r.body), "DeploymentNotFound") {
			t.Errorf("unknown name: %d %s, want DeploymentNotFound", r.status, r.body)
		}
	})
}

func TestAzureConfigErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"azure:\n  deployments:\n    prod: {limits: {tpm: 5}}\n", "azure.deployments.prod.model: field required"},
		{"azure:\n  deployments:\n    prod: {model: gpt-99}\n", `azure.deployments.prod.model: unknown model "gpt-99"`},
		{"azure:\n  deployments:\n    prod: {model: gpt-4o, limits: {tpm: -1}}\n", "azure.deployments.prod.limits.tpm: must not be negative"},
		{"azure:\n  deployments:\n    prod: {model: gpt-4o, tpm: 5}\n", `unknown key "tpm"`},
		{"azure:\n  deployments:\n    \"a b\": {model: gpt-4o}\n", "want a deployment name"},
		{"azure:\n  content_filter: 2\n", "azure.content_filter: must be a rate in [0, 1]"},
		{"azure:\n  deploymnts: {}\n", `unknown key "deploymnts"`},
	}
	for _, tt := range tests {
		_, err := ParseConfig([]byte(tt.src), "f.yaml")
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "f.yaml:") {
			t.Errorf("ParseConfig(%q) = %v, want f.yaml:LINE and %q", tt.src, err, tt.want)
		}
	}
	if _, err := ParseConfig([]byte("models: any\nazure:\n  deployments:\n    prod: {model: my-finetune}\n"), "f.yaml"); err != nil {
		t.Errorf("models: any accepts any deployment model: %v", err)
	}
}
