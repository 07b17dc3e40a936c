package loadgen

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// Default models per provider, for item groups that name none.
var defaultModels = map[string]string{
	"anthropic": DefaultModel,
	"openai":    DefaultOpenAIModel,
	// The Responses API serves the same models.
	"openai-responses": DefaultOpenAIModel,
	// Azure OpenAI: the deployment, which the mock (without azure:
	// deployments) serves under each model's own name.
	"azure-openai": DefaultOpenAIModel,
	// Bedrock's id of the Anthropic default, a foundation model id the
	// mock maps onto claude-haiku-4-5-20251001 (docs/bedrock.md).
	"bedrock": DefaultBedrockModel,
	// Google (docs/gemini.md): a Gemini model on AI Studio and Vertex AI,
	// Claude on Vertex AI by its Vertex name.
	"gemini":           DefaultGeminiModel,
	"vertex":           DefaultGeminiModel,
	"vertex-anthropic": DefaultVertexAnthropicModel,
}

// DefaultBedrockModel is provider bedrock's default model.
const DefaultBedrockModel = "anthropic.claude-haiku-4-5-20251001-v1:0"

// The default models of the Google providers: gemini-2.5-flash, the model
// google.golang.org/genai's own examples and tests name most, and
// claude-haiku-4-5 (DefaultModel) as Vertex AI names it, with its date.
const (
	DefaultGeminiModel          = "gemini-2.5-flash"
	DefaultVertexAnthropicModel = "claude-haiku-4-5@20251001"
)

// source returns the scenario's items as an engine source that builds each
// item only when a worker takes it, so memory does not grow with the batch:
// a file group's lines are read as they are taken. Each item's metadata
// names the strategy, for results.jsonl.
func source(groups []ItemGroup, meta json.RawMessage) engine.Source {
	return func(yield func(engine.Item, error) bool) {
		i := 0
		emit := func(it engine.Item) bool {
			it.Index, it.Metadata = i, meta
			i++
			return yield(it, nil)
		}
		for _, g := range groups {
			system := g.systemText() // shared by every item of the group
			if g.lines != nil {
				stopped := false
				err := batch.ReadInput(g.lines.path, func(_ int, in *batch.Line, ie *batch.InputError) bool {
					if ie != nil {
						return true // validate reported it; a line the file gained since is skipped
					}
					stopped = !emit(g.lineItem(in, system))
					return !stopped
				})
				if err != nil && !stopped {
					yield(engine.Item{}, err)
				}
				if err != nil || stopped {
					return
				}
				continue
			}
			filler := ""
			if g.PromptTokens > 0 {
				filler = g.promptText(0) // shared by every item of the group
			}
			for range g.Count {
				prompt := filler
				if prompt == "" {
					prompt = g.promptText(i)
				}
				if !emit(g.item([]provider.Message{{Role: "user", Content: prompt}}, system, g.MaxTokens)) {
					return
				}
			}
		}
	}
}

// item is an item of group g.
func (g ItemGroup) item(msgs []provider.Message, system string, maxTokens int) engine.Item {
	r := provider.Request{
		Model:     g.Model,
		System:    system,
		Messages:  msgs,
		MaxTokens: maxTokens,
		Stream:    *g.Stream,
	}
	if system != "" {
		r.SystemCache = g.SystemCache
	}
	return engine.Item{Request: r}
}

// lineItem is the item of one line of a file group: the line's prompt or
// messages, and its system and max_tokens, else the group's (its system
// prompt's text is system).
func (g ItemGroup) lineItem(in *batch.Line, system string) engine.Item {
	msgs := in.Messages
	if in.Prompt != "" {
		msgs = []provider.Message{{Role: "user", Content: in.Prompt}}
	}
	system = cmp.Or(in.System, system)
	maxTokens := in.MaxTokens
	if maxTokens == 0 {
		maxTokens = g.MaxTokens
	}
	it := g.item(msgs, system, maxTokens)
	it.ID = in.ID
	return it
}

// inputFile is what a file group's lines add up to, read once when the
// scenario is parsed (the lines themselves are read again as a run takes
// them): for the oracle, the mean input tokens and max_tokens, counted as
// the mock counts them; for the request limits, the largest line.
type inputFile struct {
	path      string // as opened: relative to the scenario's directory
	count     int
	inTokens  int64 // prompts and systems, over the lines
	noSystem  int   // lines without a system prompt: they get the group's
	maxSum    int64 // the max_tokens of the lines that set one
	noMax     int   // lines without max_tokens: they get the group's
	bigTokens int   // the largest line's input tokens, system included
	bigBytes  int   // and its bytes, escaped at worst
	bigSystem bool  // whether that line has its own system prompt
}

// readItemFiles reads every file group's lines, reporting the file's
// problems at the group's file key (the first, and how many more) and
// setting the group's count to its lines.
func (s *Scenario) readItemFiles(d *strict.Decoder) {
	for i := range s.Items.Groups {
		g := &s.Items.Groups[i]
		if g.File == "" {
			continue
		}
		p := "items"
		if len(s.Items.Groups) > 1 {
			p = fielderr.Index("items", i)
		}
		key := func(k string) string { return fielderr.Join(p, k) }
		if g.Count != 0 {
			d.Invalidf(key("count"), "set count or file, not both (a file has one item a line)")
		}
		if g.Prompt != "" || g.PromptTokens != 0 {
			d.Invalidf(key("file"), "a file's lines have their own prompts; remove the group's prompt and prompt_tokens")
		}
		for j, st := range s.Strategies {
			if st.Kind == KindCommand {
				d.Invalidf(key("file"), "a command row's program is given generated items (strategies[%d]); use items: N with it", j)
				break
			}
		}
		path := g.File
		if !filepath.IsAbs(path) && s.File != "" {
			path = filepath.Join(filepath.Dir(s.File), path)
		}
		f := &inputFile{path: path}
		var first *batch.InputError
		problems := 0
		err := batch.ReadInput(path, func(_ int, in *batch.Line, ie *batch.InputError) bool {
			if ie != nil {
				if first == nil {
					first = ie
				}
				problems++
				return true
			}
			f.add(in)
			return true
		})
		switch {
		case err != nil:
			d.Invalidf(key("file"), "%s", strings.TrimPrefix(err.Error(), "input: "))
		case first != nil:
			more := ""
			switch {
			case problems == 2:
				more = fmt.Sprintf(" (and 1 more problem; loadgen batch --input %s lists it)", g.File)
			case problems > 2:
				more = fmt.Sprintf(" (and %d more problems; loadgen batch --input %s lists them)", problems-1, g.File)
			}
			d.Invalidf(key("file"), "%v%s", first, more)
		case f.count == 0:
			d.Invalidf(key("file"), "%s has no items (want one JSON object a line, as loadgen batch reads)", g.File)
		default:
			g.Count, g.lines = f.count, f
		}
	}
}

// add counts one line.
func (f *inputFile) add(in *batch.Line) {
	f.count++
	tokens, size := 0, 0
	if in.Prompt != "" {
		tokens, size = max(1, mock.EstimateTokens(in.Prompt)), len(in.Prompt)
	}
	for _, m := range in.Messages {
		tokens += max(1, mock.EstimateTokens(m.Content))
		size += len(m.Content)
	}
	if in.System != "" {
		tokens += max(1, mock.EstimateTokens(in.System))
		size += len(in.System)
	} else {
		f.noSystem++
	}
	f.inTokens += int64(tokens)
	if in.MaxTokens > 0 {
		f.maxSum += int64(in.MaxTokens)
	} else {
		f.noMax++
	}
	if tokens > f.bigTokens {
		f.bigTokens, f.bigBytes, f.bigSystem = tokens, 6*size, in.System != ""
	}
}

// meanInputTokens is a line's mean input tokens, lines without a system
// prompt given the group's, of sysTokens (0: none).
func (f *inputFile) meanInputTokens(sysTokens int) int {
	total := f.inTokens + int64(f.noSystem*sysTokens)
	return int(math.Round(float64(total) / float64(f.count)))
}

// largest is the largest line's input tokens and bytes (escaped at worst),
// a line without a system prompt given the group's, of sysTokens and
// sysBytes (0: none).
func (f *inputFile) largest(sysTokens, sysBytes int) (tokens, bytes int) {
	if !f.bigSystem {
		return f.bigTokens + sysTokens, f.bigBytes + sysBytes
	}
	return f.bigTokens, f.bigBytes
}

// meanMaxTokens is the group's mean max_tokens: a file's lines may set
// their own.
func (g ItemGroup) meanMaxTokens() int {
	if g.lines == nil {
		return g.MaxTokens
	}
	f := g.lines
	return int(math.Round(float64(f.maxSum+int64(f.noMax*g.MaxTokens)) / float64(f.count)))
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
	_ engine.ClientInto = (*router)(nil)
	_ engine.Coster     = (*router)(nil)
	// engineClient hands the engine a lone *provider.Client itself: its
	// calls' Cost must still be the client's (the prompt cache).
	_ engine.Coster     = (*provider.Client)(nil)
	_ engine.ClientInto = (*provider.Client)(nil)
)

// newRouter builds the clients for groups, all reaching baseURL through hc.
// Against a target (hc.srv nil) every client sends key, the one read from
// target.api_key_env, or none when that is empty; request.api_key is for
// the embedded mock only.
func newRouter(groups []ItemGroup, baseURL, key string, hc *target) (*router, error) {
	r := &router{byModel: make(map[string]*provider.Client)}
	clients := make(map[string]*provider.Client) // by provider and key
	for _, g := range groups {
		p, err := provider.ByName(g.Provider)
		if err != nil {
			return nil, err
		}
		k := g.APIKey
		if hc.srv == nil {
			k = key
		}
		id := g.Provider + "\x00" + k
		c, ok := clients[id]
		if !ok {
			c = &provider.Client{Provider: p, BaseURL: ProviderBase(g.Provider, baseURL), APIKey: k, HTTP: hc.http, Clock: hc.clock}
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

// ProviderBase adapts a server's base URL to a provider's convention: the
// OpenAI APIs' base includes /v1 (https://api.openai.com/v1), Anthropic's
// does not. A URL already ending in /v1 is left as it is.
func ProviderBase(prov, base string) string {
	base = strings.TrimSuffix(base, "/")
	p, err := provider.ByName(prov)
	if err == nil && strings.HasSuffix(p.DefaultBaseURL(), "/v1") && !strings.HasSuffix(base, "/v1") {
		return base + "/v1"
	}
	return base
}

func (r *router) client(req *provider.Request) *provider.Client {
	if r.only != nil {
		return r.only
	}
	return r.byModel[req.Model]
}

// engineClient is the engine.Client of r's calls: with one client, the
// client itself, so each call skips a frame (a kilobyte of each worker's
// stack: Do's results) and an indirection.
func (r *router) engineClient() engine.Client {
	if r.only != nil {
		return r.only
	}
	return r
}

// Do implements engine.Client.
func (r *router) Do(ctx context.Context, req provider.Request, attempt int) (provider.Response, strategies.Outcome) {
	return r.client(&req).Do(ctx, req, attempt)
}

// DoInto implements engine.ClientInto.
func (r *router) DoInto(ctx context.Context, req *provider.Request, attempt int, out *provider.Response, o *strategies.Outcome) {
	r.client(req).DoInto(ctx, req, attempt, out, o)
}

// Cost implements engine.Coster.
func (r *router) Cost(req provider.Request) strategies.Cost {
	return r.client(&req).Cost(req)
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
