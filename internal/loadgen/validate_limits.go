package loadgen

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/mock"
)

// ModelLimits are what a provider accepts for one model: the context window
// (input tokens plus max_tokens) and the largest max_tokens.
type ModelLimits struct {
	Context   int
	MaxOutput int
}

// modelLimits are the published limits of the models ratelab names by
// default, and providerLimits the largest any of a provider's current
// models accepts, for a model not listed (checked 2026-12):
//
//   - claude-haiku-4-5: 200K context, 64K output
//     (https://platform.claude.com/docs/en/models/haiku-4-5/overview);
//     Anthropic's largest: 1M context, 128K output (the model comparison
//     table of the same page: Claude Opus 5.5, Claude Fable 5.1).
//   - gpt-5.4-mini: 400,000 context, 128,000 output
//     (https://developers.openai.com/api/docs/models/gpt-5.4-mini), and
//     gpt-5-mini the same (.../models/gpt-5-mini; openai-go marks it
//     deprecated, shutdown 2026-12-11, but a scenario may still name it);
//     OpenAI's largest context: 1,047,576 (gpt-4.1,
//     https://developers.openai.com/api/docs/models/gpt-4.1), and output
//     128,000 (the gpt-5 family).
//
// A scenario is checked against them whatever its target, since it models
// calls to the real API; the embedded mock accepts at most
// mock.MaxOutputTokens and a body of mock.MaxBodyBytes, which these
// limits keep within.
var (
	modelLimits = map[string]ModelLimits{
		"claude-haiku-4-5": {Context: 200_000, MaxOutput: 64_000},
		"gpt-5.4-mini":     {Context: 400_000, MaxOutput: 128_000},
		"gpt-5-mini":       {Context: 400_000, MaxOutput: 128_000},
	}
	providerLimits = map[string]ModelLimits{
		"anthropic": {Context: 1_000_000, MaxOutput: 128_000},
		"openai":    {Context: 1_047_576, MaxOutput: 128_000},
		// The Responses API serves the same models.
		"openai-responses": {Context: 1_047_576, MaxOutput: 128_000},
		"azure-openai":     {Context: 1_047_576, MaxOutput: 128_000},
		// Bedrock serves Anthropic's models, among others.
		"bedrock": {Context: 1_000_000, MaxOutput: 128_000},
	}
	// minOutput is the smallest max_tokens a provider's API accepts: the
	// Responses API's max_output_tokens is at least 16 (CreateResponse in
	// openapi.json of github.com/openai/openai-openapi@f85dbe2).
	minOutput = map[string]int{"openai-responses": 16}
)

// LimitsOf returns what provider accepts for model: the model's published
// limits when ratelab knows them (a dated snapshot such as
// claude-haiku-4-5-20251001 is its alias's), else the largest of any of
// the provider's models; ok is false for an unknown provider.
func LimitsOf(provider, model string) (l ModelLimits, known, ok bool) {
	for name, ml := range modelLimits {
		if model == name || strings.HasPrefix(model, name+"-2") {
			return ml, true, true
		}
	}
	l, ok = providerLimits[provider]
	return l, false, ok
}

// requestOverhead bounds the bytes of a request body besides its prompt
// and system text: the model, max_tokens, roles, keys and JSON escapes of a
// short prompt.
const requestOverhead = 4 << 10

// validateLimits checks every item group's request against what the
// provider accepts (LimitsOf) and what the embedded mock accepts, without
// building a single prompt: a prompt_tokens of a hundred million would
// otherwise pass validation and then be built, gigabytes at a time.
//
// Problems go to d as validation problems, each path once (so a problem of
// the request every group shares is reported once).
func (s *Scenario) validateLimits(d *strict.Decoder) {
	bad := d.Invalidf
	groups := s.Groups()
	if len(groups) == 0 { // a batch's config: its request alone
		stream := s.Request.Stream
		r := s.Request
		groups = []ItemGroup{{Provider: r.Provider, Model: r.Model, MaxTokens: r.MaxTokens, Prompt: r.Prompt,
			PromptTokens: r.PromptTokens, System: r.System, SystemTokens: r.SystemTokens, Stream: &stream}}
	}
	for i, g := range groups {
		// Where each value was set: the group's own key, else the request's.
		from := func(key string) string {
			if len(s.Items.Groups) > 0 {
				p := "items"
				if len(s.Items.Groups) > 1 {
					p = fmt.Sprintf("items[%d]", i)
				}
				if _, set := s.lines[p+"."+key]; set {
					return p + "." + key
				}
			}
			return "request." + key
		}
		lim, known, ok := LimitsOf(g.Provider, g.Model)
		if !ok || g.MaxTokens < 0 || g.PromptTokens < 0 {
			continue // reported by validate
		}
		whose, accept := fmt.Sprintf("%s models", g.Provider), "accept"
		if known {
			whose, accept = g.Model, "accepts"
		}
		out := g.MaxTokens // what the context window must hold besides the input
		if least := minOutput[g.Provider]; g.MaxTokens < least {
			bad(from("max_tokens"), "%d is less than the %s API accepts (at least %d output tokens); every call would be refused with 400 invalid_request_error",
				g.MaxTokens, g.Provider, least)
		} else if g.MaxTokens > lim.MaxOutput {
			bad(from("max_tokens"), "%s is more than %s %s (at most %s output tokens); every call would be refused with 400 invalid_request_error",
				reports.FormatInt(int64(g.MaxTokens)), whose, accept, reports.FormatInt(int64(lim.MaxOutput)))
			out = 0
		} else if s.Target == nil && g.MaxTokens > mock.MaxOutputTokens {
			bad(from("max_tokens"), "%s is more than the embedded mock accepts (at most %s)", reports.FormatInt(int64(g.MaxTokens)), reports.FormatInt(int64(mock.MaxOutputTokens)))
			out = 0
		}
		in, bytes := promptSize(g, s.Items.Count())
		key := "prompt"
		if g.PromptTokens > 0 {
			key = "prompt_tokens"
		}
		if sys, _ := g.systemSize(); g.SystemTokens > 0 && 2*sys > in {
			key = "system_tokens" // the larger part of the prompt
		}
		if in+out > lim.Context {
			plus := ""
			if out > 0 {
				plus = " plus max_tokens " + reports.FormatInt(int64(out))
			}
			bad(from(key), "about %s input tokens%s is more than the %s-token context window of %s; every call would be refused",
				reports.FormatInt(int64(in)), plus, reports.FormatInt(int64(lim.Context)), whose)
			continue
		}
		if bytes+requestOverhead > mock.MaxBodyBytes {
			bad(from(key), "a request of about %s bytes is more than the %s the API accepts (413 request_too_large)",
				reports.FormatInt(int64(bytes+requestOverhead)), reports.FormatInt(int64(mock.MaxBodyBytes)))
		}
	}
}

// promptSize returns the input tokens (as the mock and provider.EstimateTokens
// count them, without building a filler prompt) and the prompt and system
// bytes of the largest request of g, whose items are numbered below n.
func promptSize(g ItemGroup, n int) (tokens, bytes int) {
	sysTokens, sysBytes := g.systemSize()
	if g.lines != nil {
		return g.lines.largest(sysTokens, sysBytes)
	}
	if g.PromptTokens > 0 {
		tokens, bytes = g.PromptTokens, 4*g.PromptTokens // filler: four bytes a token
	} else {
		// "{i}" becomes an index of at most len(strconv.Itoa(n)) digits.
		k := strings.Count(g.Prompt, "{i}")
		grow := k * max(0, len(strconv.Itoa(max(n-1, 0)))-3)
		tokens = max(1, (utf8.RuneCountInString(g.Prompt)+grow+3)/4)
		bytes = 6*len(g.Prompt) + grow // every byte escaped at worst (\u00XX)
	}
	return tokens + sysTokens, bytes + sysBytes
}
