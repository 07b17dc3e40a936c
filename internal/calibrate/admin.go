package calibrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Published are the limits a provider's rate-limit admin endpoint publishes
// for one model: the evidence that beats what a recording's headers imply.
// docs/calibrate.md has the endpoints' shapes and their sources.
type Published struct {
	Source string // the endpoint read, e.g. GET https://api.anthropic.com/v1/organizations/rate_limits?model=…
	Model  string // the model whose entry was used
	RPM    int
	ITPM   int // Anthropic's input_tokens_per_minute
	TPM    int // OpenAI's max_tokens_per_1_minute
	// Unused are the limiter types the entry had that calibrate does not
	// map (their meaning is not documented, or not a mock limit), as
	// "type=value".
	Unused []string
}

// AdminRequest says where and how to read the published limits.
type AdminRequest struct {
	Provider string // the recording's: anthropic, openai or openai-responses
	BaseURL  string // "" for the provider's own (https://api.anthropic.com, https://api.openai.com)
	Key      string // the admin key
	Project  string // OpenAI's project id (proj_…)
	Model    string // the recording's model
}

// ReadPublished reads the published limits of r.Model: Anthropic's
// GET /v1/organizations/rate_limits?model=M (x-api-key), or OpenAI's
// GET /v1/organization/projects/P/rate_limits (Authorization: Bearer),
// following its pages. Errors name the endpoint and what it answered.
func ReadPublished(ctx context.Context, c *http.Client, r AdminRequest) (*Published, error) {
	if c == nil {
		c = http.DefaultClient
	}
	if r.Key == "" {
		return nil, fmt.Errorf("--admin-key: empty")
	}
	if r.Model == "" {
		return nil, fmt.Errorf("the recording names no model: the admin endpoints publish limits per model")
	}
	switch r.Provider {
	case "anthropic":
		return readAnthropic(ctx, c, r)
	case "openai", "openai-responses":
		return readOpenAI(ctx, c, r)
	}
	return nil, fmt.Errorf("--admin-key: provider %q has no rate-limit admin endpoint calibrate reads", r.Provider)
}

func base(r AdminRequest, def string) string {
	if r.BaseURL == "" {
		return def
	}
	return strings.TrimSuffix(strings.TrimSuffix(r.BaseURL, "/"), "/v1")
}

// getJSON GETs u with h into v; a status other than 200 is an error
// quoting the body's start.
func getJSON(ctx context.Context, c *http.Client, u string, h http.Header, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header = h
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("GET %s: reading the body: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		s := strings.TrimSpace(string(b))
		if len(s) > 300 {
			s = s[:300] + "…"
		}
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, s)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: the answer is not the endpoint's JSON: %w", u, err)
	}
	return nil
}

func readAnthropic(ctx context.Context, c *http.Client, r AdminRequest) (*Published, error) {
	u := base(r, "https://api.anthropic.com") + "/v1/organizations/rate_limits?model=" + url.QueryEscape(r.Model)
	h := http.Header{"X-Api-Key": {r.Key}, "Anthropic-Version": {"2023-06-01"}}
	var page struct {
		Data []struct {
			Group struct {
				Type string `json:"type"`
			} `json:"group"`
			GroupType string `json:"group_type"` // an earlier shape's, in place of group.type
			Limits    []struct {
				Type  string `json:"type"`
				Value int    `json:"value"`
			} `json:"limits"`
			Models []string `json:"models"`
		} `json:"data"`
	}
	if err := getJSON(ctx, c, u, h, &page); err != nil {
		return nil, err
	}
	p := &Published{Source: "GET " + u, Model: r.Model}
	found := false
	for _, e := range page.Data {
		if e.Group.Type != "model_group" && e.GroupType != "model_group" {
			continue
		}
		found = true
		for _, l := range e.Limits {
			switch l.Type {
			case "requests_per_minute":
				p.RPM = l.Value
			case "input_tokens_per_minute":
				p.ITPM = l.Value
			default:
				p.Unused = append(p.Unused, fmt.Sprintf("%s=%d", l.Type, l.Value))
			}
		}
		break
	}
	if !found {
		return nil, fmt.Errorf("GET %s: no model_group entry for %s", u, r.Model)
	}
	return p, nil
}

func readOpenAI(ctx context.Context, c *http.Client, r AdminRequest) (*Published, error) {
	if r.Project == "" {
		return nil, fmt.Errorf("--admin-project: OpenAI publishes rate limits per project: give its id (proj_…)")
	}
	root := base(r, "https://api.openai.com") + "/v1/organization/projects/" + url.PathEscape(r.Project) + "/rate_limits"
	h := http.Header{"Authorization": {"Bearer " + r.Key}}
	type entry struct {
		ID       string `json:"id"`
		Model    string `json:"model"`
		Requests int    `json:"max_requests_per_1_minute"`
		Tokens   int    `json:"max_tokens_per_1_minute"`
	}
	var all []entry
	after := ""
	for pages := 0; ; pages++ {
		u := root + "?limit=100"
		if after != "" {
			u += "&after=" + url.QueryEscape(after)
		}
		var page struct {
			Data    []entry `json:"data"`
			HasMore bool    `json:"has_more"`
			LastID  *string `json:"last_id"`
		}
		if err := getJSON(ctx, c, u, h, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		if !page.HasMore || page.LastID == nil || *page.LastID == "" || pages > 100 {
			break
		}
		after = *page.LastID
	}
	// The recorded model may be a dated snapshot of a listed one
	// (gpt-4o-2024-08-06 of gpt-4o): the longest listed prefix.
	best := -1
	for i, e := range all {
		if e.Model == r.Model {
			best = i
			break
		}
		if strings.HasPrefix(r.Model, e.Model+"-") && (best < 0 || len(e.Model) > len(all[best].Model)) {
			best = i
		}
	}
	if best < 0 {
		return nil, fmt.Errorf("GET %s: no rate limit for model %s among %d", root, r.Model, len(all))
	}
	e := all[best]
	return &Published{Source: "GET " + root, Model: e.Model, RPM: e.Requests, TPM: e.Tokens}, nil
}
