package provider_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/provider/azureopenai"
	"github.com/ratelab/ratelab/strategies"
)

// TestAzureRequest: the deployment path, api-version and api-key, as the
// official SDKs' Azure clients send them.
func TestAzureRequest(t *testing.T) {
	r := provider.Request{Model: "my deployment", MaxTokens: 8, Messages: []provider.Message{{Role: "user", Content: "hi"}}}
	req, err := azureopenai.Format{}.NewRequest(context.Background(), "https://res.openai.azure.com/", "k", r, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := req.URL.String(), "https://res.openai.azure.com/openai/deployments/my%20deployment/chat/completions?api-version=2024-10-21"; got != want {
		t.Errorf("URL = %s, want %s", got, want)
	}
	if req.Header.Get("Api-Key") != "k" || req.Header.Get("Authorization") != "" || req.Header.Get("X-Stainless-Retry-Count") != "2" {
		t.Errorf("headers %v, want api-key k, no Authorization, retry count 2", req.Header)
	}
	req, _ = azureopenai.Format{APIVersion: "2025-04-01-preview"}.NewRequest(context.Background(), "https://res.openai.azure.com", "", r, 0)
	if req.URL.RawQuery != "api-version=2025-04-01-preview" || len(req.Header.Values("Api-Key")) != 0 {
		t.Errorf("query %q, api-key %v: want the configured version and no key", req.URL.RawQuery, req.Header.Values("Api-Key"))
	}
	if _, err := (azureopenai.Format{}).NewRequest(context.Background(), "", "k", r, 0); err == nil || !strings.Contains(err.Error(), "RESOURCE.openai.azure.com") {
		t.Errorf("no base URL: err = %v, want one asking for the endpoint", err)
	}
}

// TestAzureClassification: Azure's own answers, from the mock, classified
// as a strategy needs them: the deployment's 429 Throttled with
// retry-after-ms's exact wait, the content filter's 400 Failed and not
// retried, an unknown deployment Failed.
func TestAzureClassification(t *testing.T) {
	cfg := fastConfig()
	cfg.Azure = mock.Azure{Deployments: map[string]mock.AzureDeployment{"prod": {Model: "gpt-4o", Limits: mock.Limits{RPM: 1, Burst: 0}}}}
	srv := mocktest.Start(t, cfg)
	c := &provider.Client{Provider: azureopenai.Format{}, BaseURL: srv.URL, APIKey: mockKey, HTTP: srv.Client}
	r := request(false)
	r.Model = "prod"
	if _, o := c.Do(context.Background(), r, 0); o.Kind != strategies.Success {
		t.Fatalf("first: %+v", o)
	}
	_, o := c.Do(context.Background(), r, 0)
	if o.Kind != strategies.Throttled || o.Status != 429 || !o.HasRetryAfter || o.RetryAfter <= 59e9 || o.RetryAfter > 60e9+1e6 {
		t.Errorf("second: %+v, want Throttled with retry-after-ms ≈ 60s", o)
	}
	if !strings.Contains(o.Err.Error(), "exceeded call rate limit") {
		t.Errorf("second: error %v, want Azure's text", o.Err)
	}
	r.Model = "nope"
	if _, o := c.Do(context.Background(), r, 0); o.Kind != strategies.Failed || o.Status != 404 || !strings.Contains(o.Err.Error(), "DeploymentNotFound") {
		t.Errorf("unknown deployment: %+v, want Failed 404 DeploymentNotFound", o)
	}

	cfg.Azure.ContentFilter = 1
	srv = mocktest.Start(t, cfg)
	c.BaseURL, c.HTTP = srv.URL, srv.Client
	r.Model = "prod"
	_, o = c.Do(context.Background(), r, 0)
	if o.Kind != strategies.Failed || o.Status != 400 || !strings.Contains(o.Err.Error(), "content_filter") || (o.ShouldRetry != nil && *o.ShouldRetry) {
		t.Errorf("content filter: %+v, want Failed 400 content_filter, not retried", o)
	}
}
