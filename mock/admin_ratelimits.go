package mock

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/openaichat"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// The providers' rate-limit admin endpoints, served from the configured
// limits (docs/calibrate.md, "The providers' rate-limit admin endpoints",
// has their shapes and sources):
//
//	GET /v1/organizations/rate_limits                        Anthropic's organisation rate limits
//	GET /v1/organization/projects/{project_id}/rate_limits   OpenAI's project rate limits
//
// Both need the admin key, which is the mock's admin_token: Anthropic's in
// x-api-key, OpenAI's as Authorization: Bearer. A model's entry holds the
// limits that apply to it: the key's (limits) and its pool's
// (limits_by_model), the lower of each. Only the limiter names the sources
// document are served: Anthropic's requests_per_minute and
// input_tokens_per_minute, OpenAI's max_requests_per_1_minute and
// max_tokens_per_1_minute; max_concurrent, otpm and Anthropic's combined
// tpm are in neither.
func (s *Server) adminRateLimitRoutes() []route {
	get := []string{http.MethodGet}
	return []route{
		{"/v1/organizations/rate_limits", get, http.HandlerFunc(s.anthropicRateLimits)},
		{"/v1/organization/projects/{project_id}/rate_limits", get, http.HandlerFunc(s.openaiRateLimits)},
	}
}

// adminKeyOK checks the admin key in header (or a bearer token; header ""
// for a bearer token only), answering
// 401 in wr's envelope when it is missing or wrong.
func (s *Server) adminKeyOK(w http.ResponseWriter, req *http.Request, wr wire.Format, header string) bool {
	tok := s.cfg.AdminToken
	if tok == "" {
		s.writeError(w, wr, http.StatusUnauthorized, wire.APIError{Msg: "this server has no admin key: the rate-limit admin endpoints need admin_token (mockllm --admin-token)"})
		return false
	}
	got, where := "", "Authorization: Bearer"
	if header != "" {
		got, where = req.Header.Get(header), header
	}
	if b, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok && got == "" {
		got = b
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(tok)) != 1 {
		s.writeError(w, wr, http.StatusUnauthorized, wire.APIError{Msg: "invalid admin key: the rate-limit admin endpoints need the admin key in " + where})
		return false
	}
	return true
}

// modelLimits are the limits one model's requests are held to.
type modelLimits struct{ rpm, itpm, tpm int }

// lower is the lower of two limits, 0 meaning none.
func lower(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// rateLimitGroups groups the models of catalog by the limits that apply to
// each, in the order of their first model's name.
func (s *Server) rateLimitGroups(catalog map[string]bool) ([]modelLimits, map[modelLimits][]string) {
	s.mu.Lock()
	key, pools := s.limits, s.pools
	s.mu.Unlock()
	var order []modelLimits
	groups := map[modelLimits][]string{}
	for _, m := range slices.Sorted(func(yield func(string) bool) {
		for m := range catalog {
			if !yield(m) {
				return
			}
		}
	}) {
		l := modelLimits{key.RPM, key.ITPM, key.TPM}
		if p := admission.PoolFor(pools, m); p != "" {
			pl := pools[p]
			l = modelLimits{lower(l.rpm, pl.RPM), lower(l.itpm, pl.ITPM), lower(l.tpm, pl.TPM)}
		}
		if _, ok := groups[l]; !ok {
			order = append(order, l)
		}
		groups[l] = append(groups[l], m)
	}
	return order, groups
}

type anthropicRateLimitValue struct {
	Type  string `json:"type"`
	Value int    `json:"value"`
}

type anthropicRateLimitGroup struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	DisplayName string `json:"display_name"`
}

type anthropicRateLimit struct {
	ID     string                    `json:"id"`
	Type   string                    `json:"type"`
	Group  anthropicRateLimitGroup   `json:"group"`
	Limits []anthropicRateLimitValue `json:"limits"`
	Models []string                  `json:"models"`
}

// anthropicRateLimits is GET /v1/organizations/rate_limits: one
// model_group entry per set of models under the same limits, filtered by
// group_type and model, paged by limit and page (an opaque cursor).
func (s *Server) anthropicRateLimits(w http.ResponseWriter, req *http.Request) {
	wr := anthropic.Format{}
	if !s.adminKeyOK(w, req, wr, "X-Api-Key") {
		return
	}
	q := req.URL.Query()
	order, groups := s.rateLimitGroups(s.anthropicModels)
	var data []anthropicRateLimit
	for i, l := range order {
		var vals []anthropicRateLimitValue
		if l.rpm > 0 {
			vals = append(vals, anthropicRateLimitValue{"requests_per_minute", l.rpm})
		}
		if l.itpm > 0 {
			vals = append(vals, anthropicRateLimitValue{"input_tokens_per_minute", l.itpm})
		}
		if len(vals) == 0 {
			continue
		}
		models := groups[l]
		if m := q.Get("model"); m != "" && !slices.Contains(models, m) {
			continue
		}
		data = append(data, anthropicRateLimit{
			ID: fmt.Sprintf("rl_mock%02d", i+1), Type: "rate_limit",
			Group:  anthropicRateLimitGroup{ID: fmt.Sprintf("rlg_mock%02d", i+1), Type: "model_group", DisplayName: "mock " + models[0]},
			Limits: vals, Models: models,
		})
	}
	switch gt := q.Get("group_type"); gt {
	case "", "model_group":
	case "batch", "files", "skills", "token_count", "web_search":
		data = nil // the mock has limits for model groups only
	default:
		s.writeError(w, wr, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("group_type: %q is none of batch, files, model_group, skills, token_count, web_search", gt)})
		return
	}
	if m := q.Get("model"); m != "" && len(data) == 0 {
		s.writeError(w, wr, http.StatusNotFound, wire.APIError{Msg: fmt.Sprintf("model %q not found or has no rate limits for this organization", m)})
		return
	}
	start, n, ok := pageOf(w, s, wr, q.Get("page"), q.Get("limit"), len(data), 1000)
	if !ok {
		return
	}
	var next *string
	if start+n < len(data) {
		c := "page_" + strconv.Itoa(start+n)
		next = &c
	}
	if data == nil {
		data = []anthropicRateLimit{}
	}
	wire.WriteJSONBody(w, http.StatusOK, struct {
		Data     []anthropicRateLimit `json:"data"`
		NextPage *string              `json:"next_page"`
	}{data[start : start+n], next})
}

// pageOf reads a page cursor ("page_N", or "" for the start) and a limit
// (1 to most; "" for all) over total entries.
func pageOf(w http.ResponseWriter, s *Server, wr wire.Format, page, limit string, total, most int) (start, n int, ok bool) {
	if page != "" {
		v, err := strconv.Atoi(strings.TrimPrefix(page, "page_"))
		if err != nil || !strings.HasPrefix(page, "page_") || v < 0 || v > total {
			s.writeError(w, wr, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("page: %q is not a cursor this server returned", page)})
			return 0, 0, false
		}
		start = v
	}
	n = total - start
	if limit != "" {
		v, err := strconv.Atoi(limit)
		if err != nil || v < 1 || v > most {
			s.writeError(w, wr, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("limit: want 1 to %d, got %q", most, limit)})
			return 0, 0, false
		}
		n = min(n, v)
	}
	return start, n, true
}

type openaiRateLimit struct {
	Object   string `json:"object"`
	ID       string `json:"id"`
	Model    string `json:"model"`
	Requests int    `json:"max_requests_per_1_minute"`
	Tokens   int    `json:"max_tokens_per_1_minute"`
}

// openaiRateLimits is GET /v1/organization/projects/{project_id}/rate_limits:
// one project.rate_limit per model of the OpenAI catalog with both an rpm
// and a tpm (the schema requires both), paged by limit and after. Any
// project id is the mock's one project.
func (s *Server) openaiRateLimits(w http.ResponseWriter, req *http.Request) {
	wr := openaichat.Format{}
	if !s.adminKeyOK(w, req, wr, "") {
		return
	}
	q := req.URL.Query()
	order, groups := s.rateLimitGroups(s.openaiModels)
	var data []openaiRateLimit
	for _, l := range order {
		if l.rpm == 0 || l.tpm == 0 {
			continue
		}
		for _, m := range groups[l] {
			data = append(data, openaiRateLimit{Object: "project.rate_limit", ID: "rl-" + m, Model: m, Requests: l.rpm, Tokens: l.tpm})
		}
	}
	slices.SortFunc(data, func(a, b openaiRateLimit) int { return strings.Compare(a.ID, b.ID) })
	start := 0
	if after := q.Get("after"); after != "" {
		i := slices.IndexFunc(data, func(r openaiRateLimit) bool { return r.ID == after })
		if i < 0 {
			s.writeError(w, wr, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("after: no rate limit %q", after), Param: "after"})
			return
		}
		start = i + 1
	}
	n := len(data) - start
	limit := 100
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
			s.writeError(w, wr, http.StatusBadRequest, wire.APIError{Msg: fmt.Sprintf("limit: want 1 to 100, got %q", v), Param: "limit"})
			return
		}
	}
	n = min(n, limit)
	page := data[start : start+n]
	if page == nil {
		page = []openaiRateLimit{}
	}
	var first, last *string
	if n > 0 {
		first, last = &page[0].ID, &page[n-1].ID
	}
	wire.WriteJSONBody(w, http.StatusOK, struct {
		Object  string            `json:"object"`
		Data    []openaiRateLimit `json:"data"`
		FirstID *string           `json:"first_id"`
		LastID  *string           `json:"last_id"`
		HasMore bool              `json:"has_more"`
	}{"list", page, first, last, start+n < len(data)})
}
