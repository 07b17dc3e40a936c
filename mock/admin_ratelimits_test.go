package mock_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

func rateLimitServer(t *testing.T) string {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.AdminToken = "sk-admin"
	cfg.Limits = mock.Limits{RPM: 4000, ITPM: 400000, OTPM: 80000, TPM: 90000, MaxConcurrent: 9}
	cfg.LimitsByModel = map[string]mock.Limits{"claude-haiku-*": {RPM: 1000}, "gpt-4o-mini*": {TPM: 30000}}
	return mocktest.Start(t, cfg).URL
}

// TestAnthropicRateLimitsSDK: anthropic-sdk-go's Organization.RateLimits.List
// reads the mock's limits: a model's entry holds the lower of the key's and
// its pool's; the admin key is required.
func TestAnthropicRateLimitsSDK(t *testing.T) {
	url := rateLimitServer(t)
	ctx := context.Background()
	c := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("sk-admin"), aoption.WithMaxRetries(0))
	byModel := map[string]map[string]int64{}
	it := c.Organization.RateLimits.ListAutoPaging(ctx, anthropic.OrganizationRateLimitListParams{Limit: anthropic.Int(1)})
	entries := 0
	for it.Next() {
		e := it.Current()
		entries++
		if e.Type != "rate_limit" || e.Group.Type != "model_group" || e.Group.AsModelGroup().DisplayName == "" || len(e.Models) == 0 {
			t.Errorf("entry %+v", e)
		}
		vals := map[string]int64{}
		for _, l := range e.Limits {
			vals[l.Type] = l.Value
		}
		for _, m := range e.Models {
			byModel[m] = vals
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if entries != 2 {
		t.Errorf("%d entries (one a page), want 2: haiku's pool and the rest", entries)
	}
	want := map[string]map[string]int64{
		"claude-haiku-4-5":  {"requests_per_minute": 1000, "input_tokens_per_minute": 400000},
		"claude-sonnet-4-5": {"requests_per_minute": 4000, "input_tokens_per_minute": 400000},
	}
	for m, w := range want {
		if got := byModel[m]; len(got) != len(w) || got["requests_per_minute"] != w["requests_per_minute"] || got["input_tokens_per_minute"] != w["input_tokens_per_minute"] {
			t.Errorf("%s: %v, want %v", m, got, w)
		}
	}
	page, err := c.Organization.RateLimits.List(ctx, anthropic.OrganizationRateLimitListParams{Model: anthropic.String("claude-haiku-4-5")})
	if err != nil || len(page.Data) != 1 || !slices.Contains(page.Data[0].Models, "claude-haiku-4-5") {
		t.Errorf("?model=claude-haiku-4-5: %v %+v", err, page)
	}
	_, err = c.Organization.RateLimits.List(ctx, anthropic.OrganizationRateLimitListParams{Model: anthropic.String("claude-nope")})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("?model=claude-nope: %v, want 404", err)
	}
	bad := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("sk-user"), aoption.WithMaxRetries(0))
	if _, err := bad.Organization.RateLimits.List(ctx, anthropic.OrganizationRateLimitListParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || !strings.Contains(err.Error(), "authentication_error") {
		t.Errorf("a plain key: %v, want 401 authentication_error", err)
	}
}

// TestOpenAIProjectRateLimitsSDK: openai-go's
// Admin.Organization.Projects.RateLimits reads one entry per model with
// both an rpm and a tpm, paged by after.
func TestOpenAIProjectRateLimitsSDK(t *testing.T) {
	url := rateLimitServer(t)
	ctx := context.Background()
	c := openai.NewClient(ooption.WithBaseURL(url+"/v1"), ooption.WithAdminAPIKey("sk-admin"), ooption.WithMaxRetries(0))
	it := c.Admin.Organization.Projects.RateLimits.ListRateLimitsAutoPaging(ctx, "proj_mock", openai.AdminOrganizationProjectRateLimitListRateLimitsParams{Limit: openai.Int(3)})
	got := map[string][2]int64{}
	for it.Next() {
		r := it.Current()
		if r.Object != "project.rate_limit" || r.ID == "" {
			t.Errorf("entry %+v", r)
		}
		got[r.Model] = [2]int64{r.MaxRequestsPer1Minute, r.MaxTokensPer1Minute}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if got["gpt-4o-mini"] != [2]int64{4000, 30000} || got["gpt-4o"] != [2]int64{4000, 90000} || len(got) < 4 {
		t.Errorf("rate limits %v: want gpt-4o-mini at its pool's tpm 30000, gpt-4o at the key's 90000, and every model", got)
	}
	req, _ := http.NewRequest("GET", url+"/v1/organization/projects/proj_mock/rate_limits", nil)
	req.Header.Set("Authorization", "Bearer sk-user")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(b), "invalid admin key") {
		t.Errorf("a plain key: %d %s", resp.StatusCode, b)
	}
}
