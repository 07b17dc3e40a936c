package loadgen

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/strict"
)

// Scenario is one experiment: a batch of items, the server it runs against
// and the strategies it compares. Its YAML form is documented in docs/scenarios.md; every
// field below is one top-level key. Parse fills in defaults, so a parsed
// Scenario's zero values mean what their comments say.
type Scenario struct {
	// File is the path the scenario was read from, used in messages.
	File string `yaml:"-"`

	// Name names the scenario in reports. Default: the file's base name.
	Name string `yaml:"name"`
	// Description is free text, shown in reports.
	Description string `yaml:"description"`
	// Seed seeds every random source of a run (retry jitter, mock jitter and
	// faults) that does not set its own. Default 1.
	Seed int64 `yaml:"seed"`
	// Items is the batch: a count, one item group, or a list of groups.
	Items Items `yaml:"items"`
	// Arrival, when set, makes items arrive over time at a rate (an open
	// loop, as an online service's traffic) instead of all at the start.
	Arrival *Arrival `yaml:"arrival"`
	// Request is what every item sends unless its group overrides it.
	Request Request `yaml:"request"`
	// Server configures the embedded mock (a mock.Config). Ignored when
	// Target is set.
	Server ServerConfig `yaml:"server"`
	// Target, when set, runs against a live server instead of the embedded mock.
	Target *Target `yaml:"target"`
	// Oracle is the ideal time the batch could take, for wall/oracle. Default:
	// derived from Server (see Oracle).
	Oracle *Oracle `yaml:"oracle"`
	// Workers bounds the engine's concurrent items (not the strategy's
	// limit: a strategy can only admit what workers offer it). Default: the
	// number of items, capped at DefaultMaxWorkers.
	Workers int `yaml:"workers"`
	// Timeline is the resolution of each strategy's timeline. Default 100ms.
	Timeline time.Duration `yaml:"timeline"`
	// Strategies are run in turn, each against a fresh server, in file
	// order; a row with a sweep is one row per value (see Rows).
	Strategies Rows `yaml:"strategies"`

	lines map[string]int // key path → line, for semantic errors
	batch bool           // parsed by ParseBatch: items and strategies optional
}

// DefaultMaxWorkers caps the default worker count, so that memory stays
// bounded by concurrency, not by the batch size.
const DefaultMaxWorkers = 2000

// Defaults applied by Parse.
const (
	DefaultSeed     = 1
	DefaultProvider = "anthropic"
	DefaultModel    = "claude-haiku-4-5"
	// DefaultOpenAIModel is the model of OpenAI's APIs when a scenario
	// names none: gpt-5.4-mini, since gpt-5-mini (the default before) is
	// deprecated with a shutdown date of 2026-12-11 (openai-go v3.99.0's
	// shared.ChatModelGPT5Mini). The mock still serves gpt-5-mini.
	DefaultOpenAIModel = "gpt-5.4-mini"
	DefaultMaxTokens   = 100
	DefaultAPIKey      = "ratelab-test-key"
	DefaultTimeline    = 100 * time.Millisecond
	DefaultRetries     = 2 // the official SDKs' default
)

// Request is the call every item makes, unless its item group overrides a field.
type Request struct {
	// Provider is the API to call: "anthropic" (default), "openai" (Chat
	// Completions) or "openai-responses" (the Responses API).
	Provider string `yaml:"provider"`
	// Model is sent as the request's model. Default claude-haiku-4-5.
	Model string `yaml:"model"`
	// MaxTokens is the request's max_tokens. Default 100.
	MaxTokens int `yaml:"max_tokens"`
	// Prompt is the user message; "{i}" is replaced by the item's index.
	// Default "Classify ticket {i}.".
	Prompt string `yaml:"prompt"`
	// PromptTokens, when set, replaces Prompt with filler text of about this
	// many tokens (under the mock's estimate), for token-budget experiments.
	PromptTokens int `yaml:"prompt_tokens"`
	// System is an optional system prompt.
	System string `yaml:"system"`
	// SystemTokens, when set, makes the system prompt filler text of this
	// many tokens (under the mock's estimate), the same for every item: a
	// long shared context, as a RAG batch sends.
	SystemTokens int `yaml:"system_tokens"`
	// SystemCache asks Anthropic to cache the system prompt: "5m" or "1h",
	// the cache_control TTL. Its client then learns from the responses
	// which part of each later call is a cache read, and the token-budget
	// strategies reserve only the rest. OpenAI caches by itself and
	// refuses it.
	SystemCache string `yaml:"system_cache"`
	// Stream requests a streamed (SSE) response.
	Stream bool `yaml:"stream"`
	// APIKey is the key sent to the embedded mock: a test value, never a real
	// key (real keys come from Target.APIKeyEnv). Default: the first of
	// server.api_keys, else "ratelab-test-key".
	APIKey string `yaml:"api_key"`
}

// ItemGroup is a run of items sharing a request. Fields left zero inherit
// from the scenario's Request.
type ItemGroup struct {
	Count int `yaml:"count"`
	// File, instead of Count, is a file in loadgen batch's input format
	// (relative to the scenario): one item a line, with its own prompt or
	// messages, system and max_tokens (the group's when the line has none).
	File         string `yaml:"file"`
	Provider     string `yaml:"provider"`
	Model        string `yaml:"model"`
	MaxTokens    int    `yaml:"max_tokens"`
	Prompt       string `yaml:"prompt"`
	PromptTokens int    `yaml:"prompt_tokens"`
	System       string `yaml:"system"`
	SystemTokens int    `yaml:"system_tokens"`
	SystemCache  string `yaml:"system_cache"`
	Stream       *bool  `yaml:"stream"`
	APIKey       string `yaml:"api_key"`

	lines *inputFile // File's figures, once read (items.go)
}

// Items is the batch. In YAML it is a count (items: 200), one group
// (items: {count: 200, max_tokens: 50}) or a list of groups, whose items run
// in file order (the first group's items, then the second's).
type Items struct {
	Groups []ItemGroup
}

// Count returns the total number of items.
func (it Items) Count() int {
	n := 0
	for _, g := range it.Groups {
		n += g.Count
	}
	return n
}

// UnmarshalStrict decodes a count, one group or a list of groups.
func (it *Items) UnmarshalStrict(d *strict.Decoder, n *yaml.Node, path string) {
	switch {
	case strict.IsNull(n):
	case n.Kind == yaml.ScalarNode:
		var g ItemGroup
		d.Decode(n, &g.Count, path)
		it.Groups = []ItemGroup{g}
	case n.Kind == yaml.MappingNode:
		var g ItemGroup
		d.Decode(n, &g, path)
		it.Groups = []ItemGroup{g}
	case n.Kind == yaml.SequenceNode:
		it.Groups = make([]ItemGroup, len(n.Content))
		for i, gn := range n.Content {
			d.Decode(gn, &it.Groups[i], fielderr.Index(path, i))
		}
	default:
		d.Errorf(n, path, "want a count, a mapping or a list of mappings, got %s", strict.DescribeNode(n))
	}
}

// Target is a live server to run against instead of the embedded mock.
type Target struct {
	// URL is the base URL, e.g. http://127.0.0.1:8080 or https://api.anthropic.com.
	URL string `yaml:"url"`
	// Provider overrides request.provider for every item.
	Provider string `yaml:"provider"`
	// APIKeyEnv names the environment variable holding the key. The key is
	// read from there only, and never printed. Empty means no key (a mock
	// running without api_keys).
	APIKeyEnv string `yaml:"api_key_env"`
}

// Oracle is the ideal a strategy is measured against: the time an omniscient
// client would take, ceil(items / Limit) × CallTime per key (see
// Scenario.OracleSeconds).
type Oracle struct {
	// CallTime is one call's duration without queueing. Default: the mock's
	// ttft + ttft_per_input_token·prompt tokens + max_tokens·per_token.
	CallTime time.Duration `yaml:"call_time"`
	// Limit is the server's concurrency limit. Default: the mock's
	// limits.max_concurrent.
	Limit int `yaml:"limit"`
}

// Load reads and parses the scenario file at path. A file larger than
// 4 MiB is refused before it is parsed.
func Load(path string) (*Scenario, error) {
	data, err := strict.ReadFile(path)
	if err != nil {
		return nil, Errors{err.(*Error)}
	}
	return Parse(path, data)
}

// Parse decodes a scenario strictly, applies defaults and validates it. file
// names the source in errors. The error, if any, is an Errors listing every
// problem with its file, line and key.
func Parse(file string, data []byte) (*Scenario, error) {
	return parse(&Scenario{File: file}, data)
}

func parse(s *Scenario, data []byte) (*Scenario, error) {
	file := s.File
	root, err := strict.Parse(file, data)
	if err != nil {
		return nil, Errors{err.(*Error)}
	}
	if root == nil {
		return nil, Errors{{File: file, Message: "empty scenario"}}
	}
	if root.Kind != yaml.MappingNode {
		return nil, Errors{{File: file, Line: root.Line, Message: "a scenario must be a mapping of keys (name, items, request, server, strategies, …)"}}
	}
	d := strict.NewDecoder(file)
	s.Server = defaultServerConfig()
	d.Decode(root, s, "")
	s.lines = d.Lines()
	s.readItemFiles(d)
	s.applyDefaults()
	s.validate(d)
	if err := d.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// line returns the line of the value at path, or the nearest enclosing key's.
func (s *Scenario) line(path string) int {
	for path != "" {
		if l, ok := s.lines[path]; ok {
			return l
		}
		path = fielderr.Parent(path)
	}
	return 0
}

// applyDefaults fills in what the file left out.
func (s *Scenario) applyDefaults() {
	s.arrivalItems()
	if s.Name == "" {
		s.Name = baseName(s.File)
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	r := &s.Request
	if r.Provider == "" {
		r.Provider = DefaultProvider
	}
	if s.Target != nil && s.Target.Provider != "" {
		r.Provider = s.Target.Provider
	}
	if r.Model == "" {
		r.Model = defaultModels[r.Provider]
	}
	if r.MaxTokens == 0 {
		r.MaxTokens = DefaultMaxTokens
	}
	if r.Prompt == "" {
		r.Prompt = "Classify ticket {i}."
	}
	if r.APIKey == "" {
		r.APIKey = firstAPIKey(&s.Server)
	}
	if r.APIKey == "" {
		r.APIKey = DefaultAPIKey
	}
	if s.Timeline == 0 {
		s.Timeline = DefaultTimeline
	}
	if s.Workers == 0 {
		s.Workers = min(max(s.Items.Count(), 1), DefaultMaxWorkers)
	}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		if st.MaxRetries == nil {
			n := DefaultRetries
			st.MaxRetries = &n
		}
	}
}

// Groups returns the item groups with every inherited field resolved.
func (s *Scenario) Groups() []ItemGroup {
	out := make([]ItemGroup, len(s.Items.Groups))
	r := s.Request
	for i, g := range s.Items.Groups {
		if g.Provider == "" || s.Target != nil && s.Target.Provider != "" {
			g.Provider = r.Provider
		}
		if g.Model == "" && g.Provider == r.Provider {
			g.Model = r.Model
		} else if g.Model == "" {
			g.Model = defaultModels[g.Provider]
		}
		if g.MaxTokens == 0 {
			g.MaxTokens = r.MaxTokens
		}
		if g.Prompt == "" && g.PromptTokens == 0 {
			g.Prompt, g.PromptTokens = r.Prompt, r.PromptTokens
		}
		if g.System == "" && g.SystemTokens == 0 {
			g.System, g.SystemTokens = r.System, r.SystemTokens
		}
		if g.SystemCache == "" {
			g.SystemCache = r.SystemCache
		}
		if g.Stream == nil {
			stream := r.Stream
			g.Stream = &stream
		}
		if g.APIKey == "" {
			g.APIKey = r.APIKey
		}
		out[i] = g
	}
	return out
}

// baseName is the file's name without directory and extension.
func baseName(path string) string {
	b := filepath.Base(path)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

// SystemCacheTTLProblem says what is wrong with system_cache (or loadgen
// batch's --system-cache) ttl, or "" when it is empty or a TTL Anthropic
// takes.
func SystemCacheTTLProblem(ttl string) string {
	if ttl == "" || ttl == "5m" || ttl == "1h" {
		return ""
	}
	return fmt.Sprintf("want 5m or 1h (Anthropic's cache_control TTLs), got %q", ttl)
}

// SystemCacheProviderProblem says why system_cache is refused for
// provider prov, which is not Anthropic.
func SystemCacheProviderProblem(prov string) string {
	return fmt.Sprintf("is Anthropic's cache_control; %s caches a repeated prompt prefix of 1,024 tokens or more by itself", prov)
}

// validateSystem reports the problems of the request's and each group's
// system prompt keys through d: system_tokens negative or beside system,
// and a system_cache that is not a TTL Anthropic accepts, has no system
// prompt to cache, or is sent to OpenAI, which caches by itself.
func (s *Scenario) validateSystem(d *strict.Decoder) {
	bad := d.Invalidf
	check := func(p, system string, tokens int, cache string) {
		if tokens < 0 {
			bad(fielderr.Join(p, "system_tokens"), "must not be negative, got %d", tokens)
		}
		if system != "" && tokens != 0 {
			bad(fielderr.Join(p, "system_tokens"), "set system or system_tokens, not both")
		}
		if msg := SystemCacheTTLProblem(cache); msg != "" {
			bad(fielderr.Join(p, "system_cache"), "%s", msg)
		}
	}
	r := s.Request
	check("request", r.System, r.SystemTokens, r.SystemCache)
	groupPath := func(i int) string {
		if len(s.Items.Groups) > 1 {
			return fmt.Sprintf("items[%d]", i)
		}
		return "items"
	}
	for i, g := range s.Items.Groups {
		check(groupPath(i), g.System, g.SystemTokens, g.SystemCache)
	}
	for i, g := range s.Groups() {
		if g.SystemCache == "" {
			continue
		}
		p := "request.system_cache"
		if i < len(s.Items.Groups) && s.Items.Groups[i].SystemCache != "" {
			p = groupPath(i) + ".system_cache"
		}
		switch {
		case g.Provider != "anthropic":
			bad(p, "%s, so remove it", SystemCacheProviderProblem(g.Provider))
		case g.System == "" && g.SystemTokens == 0 && g.File == "" && !s.batch: // a batch's lines carry theirs
			bad(p, "has no system prompt to cache: set system or system_tokens")
		}
	}
}
