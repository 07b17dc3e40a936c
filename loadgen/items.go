package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// Default models per provider, for item groups that name none.
var defaultModels = map[string]string{
	"anthropic": DefaultModel,
	"openai":    "gpt-5-mini",
	// The Responses API serves the same models.
	"openai-responses": "gpt-5-mini",
}

// source returns the scenario's items as an engine source that builds each
// item only when a worker takes it, so memory does not grow with the batch.
// Each item's metadata names the strategy, for results.jsonl.
func source(groups []ItemGroup, meta json.RawMessage) engine.Source {
	total := 0
	fillers := make([]string, len(groups))
	for i, g := range groups {
		total += g.Count
		if g.PromptTokens > 0 {
			fillers[i] = g.promptText(0) // shared by every item of the group
		}
	}
	return engine.Generate(total, func(i int) engine.Item {
		gi, j := 0, i
		for gi < len(groups)-1 && j >= groups[gi].Count {
			j -= groups[gi].Count
			gi++
		}
		g := groups[gi]
		prompt := fillers[gi]
		if prompt == "" {
			prompt = g.promptText(i)
		}
		return engine.Item{
			Request: provider.Request{
				Model:     g.Model,
				System:    g.System,
				Messages:  []provider.Message{{Role: "user", Content: prompt}},
				MaxTokens: g.MaxTokens,
				Stream:    *g.Stream,
			},
			Metadata: meta,
		}
	})
}

// router is an engine.Client that sends each request to its group's
// provider client, chosen by model: a scenario's groups of different
// providers use different models, as a multi-provider batch does.
type router struct {
	byModel map[string]*providerClient
	only    *providerClient // when every group uses one client
}

type providerClient = provider.Client

// emptyRequest is a request used only to ask a client for its cost's key.
var emptyRequest provider.Request

var (
	_ engine.Client = (*router)(nil)
	_ engine.Coster = (*router)(nil)
)

// newRouter builds the clients for groups, all reaching baseURL through hc.
// key, when not empty, replaces each group's key (a target's key).
func newRouter(groups []ItemGroup, baseURL, key string, hc *target) (*router, error) {
	r := &router{byModel: make(map[string]*provider.Client)}
	clients := make(map[string]*provider.Client) // by provider and key
	for _, g := range groups {
		p, err := provider.ByName(g.Provider)
		if err != nil {
			return nil, err
		}
		k := g.APIKey
		if key != "" {
			k = key
		}
		id := g.Provider + "\x00" + k
		c, ok := clients[id]
		if !ok {
			c = &provider.Client{Provider: p, BaseURL: providerBase(g.Provider, baseURL), APIKey: k, HTTP: hc.http}
			clients[id] = c
		}
		if prev, ok := r.byModel[g.Model]; ok && prev != c {
			return nil, fmt.Errorf("item groups of different providers or keys share model %q; give each its own model", g.Model)
		}
		r.byModel[g.Model] = c
	}
	if len(clients) == 1 {
		for _, c := range clients {
			r.only = c
		}
	}
	return r, nil
}

// providerBase adapts a server's base URL to a provider's convention: the
// OpenAI APIs' base includes /v1 (https://api.openai.com/v1), Anthropic's
// does not. A URL already ending in /v1 is left as it is.
func providerBase(prov, base string) string {
	base = strings.TrimSuffix(base, "/")
	p, err := provider.ByName(prov)
	if err == nil && strings.HasSuffix(p.DefaultBaseURL(), "/v1") && !strings.HasSuffix(base, "/v1") {
		return base + "/v1"
	}
	return base
}

func (r *router) client(req provider.Request) *provider.Client {
	if r.only != nil {
		return r.only
	}
	return r.byModel[req.Model]
}

// Do implements engine.Client.
func (r *router) Do(ctx context.Context, req provider.Request, attempt int) (provider.Response, strategies.Outcome) {
	return r.client(req).Do(ctx, req, attempt)
}

// Cost implements engine.Coster.
func (r *router) Cost(req provider.Request) strategies.Cost {
	return r.client(req).Cost(req)
}

// checkGroups reports groups whose models would route ambiguously.
func checkGroups(s *Scenario) Errors {
	var errs Errors
	owner := make(map[string]string)
	for i, g := range s.Groups() {
		if s.Target == nil && len(s.Server.APIKeys) > 0 && !slices.Contains(s.Server.APIKeys, g.APIKey) {
			p := "request.api_key"
			if _, set := s.lines[fmt.Sprintf("items[%d].api_key", i)]; set {
				p = fmt.Sprintf("items[%d].api_key", i)
			}
			errs = append(errs, &Error{File: s.File, Line: s.line(p), Path: p,
				Message: fmt.Sprintf("%q is not one of server.api_keys, so the embedded mock would refuse every call", g.APIKey)})
		}
		id := g.Provider + "/" + g.APIKey
		if prev, ok := owner[g.Model]; ok && prev != id {
			p := fmt.Sprintf("items[%d].model", i)
			errs = append(errs, &Error{File: s.File, Line: s.line(p), Path: p,
				Message: fmt.Sprintf("model %q is used by another group with a different provider or api_key; the model routes each call, so give each its own", g.Model)})
		}
		owner[g.Model] = id
	}
	return errs
}

// strategyMeta is the metadata every item of a strategy carries into
// results.jsonl.
func strategyMeta(name string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Strategy string `json:"strategy"`
	}{name})
	return b
}
