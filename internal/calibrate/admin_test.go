package calibrate_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/calibrate"
	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/mock"
)

// TestPublishedOpenAI reads the mock's OpenAI project rate limits and fits an OpenAI recording without rate-limit
// headers from them; an unknown model and a wrong key are errors naming
// the endpoint.
func TestPublishedOpenAI(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.AdminToken = "sk-admin"
	cfg.Limits = mock.Limits{RPM: 500, TPM: 30000}
	cfg.LimitsByModel = map[string]mock.Limits{"gpt-4o": {TPM: 20000}}
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	ctx := context.Background()
	req := calibrate.AdminRequest{Provider: "openai", BaseURL: ts.URL + "/v1", Key: "sk-admin", Project: "proj_1", Model: "gpt-4o"}
	p, err := calibrate.ReadPublished(ctx, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if p.RPM != 500 || p.TPM != 20000 || p.Model != "gpt-4o" || p.Source != "GET "+ts.URL+"/v1/organization/projects/proj_1/rate_limits" {
		t.Errorf("published %+v: want rpm 500, tpm 20000 (gpt-4o's pool) from the project's endpoint", p)
	}
	rec := parse(t, "oa.jsonl", header+line("/v1/chat/completions", 200, 1))
	fit, err := calibrate.RunPublished([]*record.File{rec}, p)
	if err != nil {
		t.Fatal(err)
	}
	report := strings.Join(fit.Lines, "\n")
	if fit.RPM != 500 || fit.TPM != 20000 || !strings.Contains(report, "limits.tpm: 20000   source: published (GET "+ts.URL+"/v1/organization/projects/proj_1/rate_limits, model gpt-4o); no header of it in the recording") ||
		!strings.Contains(report, "sources: published (") || strings.Contains(report, "not determined: rpm") {
		t.Errorf("fit rpm %d tpm %d:\n%s", fit.RPM, fit.TPM, report)
	}

	req.Model = "gpt-nope"
	if _, err := calibrate.ReadPublished(ctx, nil, req); err == nil || !strings.Contains(err.Error(), "no rate limit for model gpt-nope among") {
		t.Errorf("an unlisted model: %v", err)
	}
	req.Model, req.Key = "gpt-4o", "sk-user"
	if _, err := calibrate.ReadPublished(ctx, nil, req); err == nil || !strings.Contains(err.Error(), "/v1/organization/projects/proj_1/rate_limits?limit=100: 401") {
		t.Errorf("a wrong key: %v", err)
	}
	areq := calibrate.AdminRequest{Provider: "anthropic", BaseURL: ts.URL, Key: "sk-admin", Model: "claude-nope"}
	if _, err := calibrate.ReadPublished(ctx, nil, areq); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Anthropic, an unknown model: %v", err)
	}
}

// TestPublishedAnthropicBetaShape: an entry of the beta shape, with
// group_type in place of group (the beta SDK reference's
// OrganizationRateLimit), is read too; a limiter type other than the two
// documented ones is kept aside, not guessed.
func TestPublishedAnthropicBetaShape(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/organizations/rate_limits" || r.URL.Query().Get("model") != "claude-x" || r.Header.Get("X-Api-Key") != "k" {
			http.Error(w, "unexpected "+r.URL.String(), 400)
			return
		}
		io.WriteString(w, `{"data":[{"type":"rate_limit","id":"rl_1","group_type":"model_group","models":["claude-x"],
			"limits":[{"type":"requests_per_minute","value":50},{"type":"input_tokens_per_minute","value":30000},{"type":"something_per_minute","value":7}]}],"next_page":null}`)
	}))
	defer ts.Close()
	p, err := calibrate.ReadPublished(context.Background(), nil, calibrate.AdminRequest{Provider: "anthropic", BaseURL: ts.URL, Key: "k", Model: "claude-x"})
	if err != nil {
		t.Fatal(err)
	}
	if p.RPM != 50 || p.ITPM != 30000 || len(p.Unused) != 1 || p.Unused[0] != "something_per_minute=7" {
		t.Errorf("published %+v", p)
	}
}
