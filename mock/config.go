package mock

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path"
	"regexp"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// MaxBodyBytes is the largest request body the server reads; larger bodies
// get 413 request_too_large, as the Messages API answers above 32 MB.
const MaxBodyBytes = 32 << 20

// DefaultMaxHeaderBytes is Config.MaxHeaderBytes when it is 0.
const DefaultMaxHeaderBytes = 64 << 10

// DefaultDecodeBudget is Config.DecodeBudget when it is 0: four bodies of
// the largest size at once.
const DefaultDecodeBudget = 4 * MaxBodyBytes

// Config configures a Server. Its YAML form is the `server:` block of a
// scenario file and the file `mockllm --config` reads; the field tags are
// that schema.
//
// The zero Config is valid: an open server (no API keys) with no latency,
// output of max_tokens tokens, no limits and no faults. DefaultConfig is the
// zero Config with the default per-token latency of 5 ms, and a Config
// decoded from YAML starts from DefaultConfig, so keys left out of a file
// keep their default values.
type Config struct {
	// Profile names the provider profile this configuration starts from
	// (profiles/*.yaml, see Profiles): its limits, burst and rules, which
	// the keys given beside it override. Empty starts from DefaultConfig.
	Profile string `yaml:"profile,omitempty"`
	// Seed seeds the random source of jitter, output distributions and
	// fault injection, so a run can be replayed.
	Seed int64 `yaml:"seed"`
	// APIKeys are the accepted API keys. None means open: any request is
	// accepted and every request shares one anonymous set of limits.
	APIKeys []string `yaml:"api_keys"`
	// AWSSecretKeys maps an AWS access key id to its secret access key:
	// a Bedrock request signed with that key id has its SigV4 signature
	// verified for real (docs/bedrock.md: Authentication); other key ids
	// are checked for shape only.
	AWSSecretKeys map[string]string `yaml:"aws_secret_keys,omitempty"`
	// AdminToken, when set, must be sent as "Authorization: Bearer TOKEN"
	// or "X-Admin-Token: TOKEN" to use /_admin/. Empty leaves /_admin/ open.
	AdminToken string `yaml:"admin_token"`
	// MetricsToken, when set, must be sent as "Authorization: Bearer TOKEN"
	// to read /metrics (the admin token works too). Empty protects /metrics
	// with the AdminToken when there is one, and leaves it open otherwise.
	MetricsToken string `yaml:"metrics_token"`

	// MaxHeaderBytes caps the request line and headers of a request; larger
	// requests get 431 in the envelope of the API they were for. 0 means
	// DefaultMaxHeaderBytes (64 KiB); real APIs refuse far less than Go's
	// default of 1 MiB.
	MaxHeaderBytes int `yaml:"max_header_bytes,omitempty"`
	// DecodeBudget caps the request body bytes held by all requests being
	// read and decoded at once, so that many large bodies in parallel
	// cannot exhaust memory. A request waits for its share (its
	// Content-Length, or MaxBodyBytes when it sends none) up to
	// BodyTimeout, then gets 429 with retry-after. 0 means
	// DefaultDecodeBudget (128 MiB); it must be at least MaxBodyBytes.
	DecodeBudget int64 `yaml:"decode_budget,omitempty"`

	// Strict holds requests to what the real APIs accept: anthropic-version
	// is required, temperature and top_p must be in range, and an Anthropic
	// conversation must start with a user turn; otherwise 400 in the API's
	// envelope. Nil (the default) is on; `strict: false` relaxes the checks.
	Strict *bool `yaml:"strict,omitempty"`
	// Models says which model names are accepted (see Models): by default
	// each API's catalogue; `models: any` accepts every name.
	Models Models `yaml:"models,omitempty"`

	Latency Latency `yaml:"latency"`
	Output  Output  `yaml:"output"`
	Limits  Limits  `yaml:"limits"`
	// LimitsByModel holds the limits of per-model pools, by model pattern
	// (path.Match syntax, e.g. "claude-sonnet-4-*"): a request whose model
	// matches a pattern passes that pool's limits, per API key, as well as
	// Limits. The longest matching pattern is the request's pool.
	LimitsByModel map[string]Limits `yaml:"limits_by_model,omitempty"`
	// Organization is a pool of limits above the API keys, shared by all
	// of them (see Organization); off by default.
	Organization Organization `yaml:"organization,omitempty"`
	// LongContext holds separate limits for requests above a number of
	// input tokens (see LongContext); off by default.
	LongContext LongContext `yaml:"long_context,omitempty"`
	// Cache is the prompt cache model (see Cache).
	Cache Cache `yaml:"cache,omitempty"`
	// Quota caps what each API key may use in total (see Quota).
	Quota Quota `yaml:"quota,omitempty"`
	// Prices are what each model's tokens cost, by model pattern as
	// LimitsByModel (the longest matching pattern prices a request), for
	// Quota.USD; a model no pattern matches costs nothing.
	Prices map[string]Price `yaml:"prices,omitempty"`
	// Azure configures the Azure OpenAI endpoints: deployments and their
	// limits, the content filter (mock/internal/azure, docs/azure.md).
	Azure    Azure           `yaml:"azure,omitempty"`
	Capacity Capacity        `yaml:"capacity"`
	Faults   Faults          `yaml:"faults"`
	Schedule []ScheduleEntry `yaml:"schedule"`
	// Batches models the provider batch APIs (see Batches).
	Batches Batches `yaml:"batches,omitempty"`

	// Logger receives recovered panics and net/http's connection errors.
	// Nil discards them. It is not part of the YAML schema.
	Logger *slog.Logger `yaml:"-"`

	// Store, when set, holds the concurrency slots that replicas of the mock
	// share, so that together they enforce limits.max_concurrent per key
	// (see RedisStore). Nil keeps every limit in this server. It is not part
	// of the YAML schema.
	Store Store `yaml:"-"`
}

// Latency is the server's latency model. The first output token is due at
// TTFT + TTFTPerInputToken×input_tokens after admission, and token i at that
// instant plus i×PerToken; a non-streaming response is sent when its last
// token is due, so it takes as long as the same response streamed.
type Latency struct {
	// TTFT is the fixed part of the time to first token.
	TTFT time.Duration `yaml:"ttft"`
	// TTFTPerInputToken is added to the time to first token per input token.
	TTFTPerInputToken time.Duration `yaml:"ttft_per_input_token"`
	// PerToken is the time per output token (DefaultConfig: 5ms).
	PerToken time.Duration `yaml:"per_token"`
	// Jitter scales each request's latency by a factor drawn uniformly from
	// [1-Jitter, 1+Jitter] using the seeded source; 0.1 is ±10 %. It must be
	// in [0, 1).
	Jitter float64 `yaml:"jitter"`
}

// Output decides how many tokens a response has.
type Output struct {
	// Tokens is the output length; the zero value means max_tokens. The
	// length is always capped by the request's max_tokens.
	Tokens Distribution `yaml:"tokens"`
	// DefaultMaxTokens is the max_tokens of an OpenAI request that sets
	// neither max_completion_tokens nor max_tokens; 0 means 256.
	DefaultMaxTokens int `yaml:"default_max_tokens,omitempty"`
	// Text, when set, is every response's text instead of the filler, for
	// clients that parse what the model says (e.g. JSON they validate). Its
	// tokens are its characters taken four at a time, so it has
	// EstimateTokens(Text) of them; a response ends after the whole text
	// (stop reason end_turn / stop), or after max_tokens of it (max_tokens /
	// length). Tokens is not used.
	Text string `yaml:"text,omitempty"`
	// Length says where an answer drawn from Tokens = max_tokens ends:
	// "max_tokens" (the zero value "" too) after exactly max_tokens tokens,
	// stop reason max_tokens / length, as the rate-limit experiments need;
	// "natural" at a seeded length in [ceil(max_tokens/2), max_tokens-1],
	// stop reason end_turn / stop, as a real model's answers mostly end.
	// The library's zero value and loadgen's embedded mock keep exact
	// lengths; the mockllm command makes "" natural, for real clients.
	Length Length `yaml:"length,omitempty"`
	// ToolUse is the probability that a request offering tools with tool
	// choice auto is answered with a tool call; 0 (the default) answers
	// with text. A forced choice (Anthropic any or tool, OpenAI required or
	// a named function) always gets a tool call.
	ToolUse float64 `yaml:"tool_use,omitempty"`
}

// Length is Output.Length.
type Length string

// The values of Length.
const (
	LengthMaxTokens Length = "max_tokens"
	LengthNatural   Length = "natural"
)

// Distribution is a distribution of output token counts. Its YAML forms are
// `max_tokens` (the zero value: as many tokens as the request allows),
// `{fixed: N}`, `{uniform: [MIN, MAX]}` (inclusive), `{lognormal: {mean:
// TOKENS, sigma: S}}` and `{histogram: FILE}` (the counts observed in
// production, see Observations), drawn from the seeded source; every length
// is capped by the request's max_tokens.
type Distribution struct {
	Kind DistributionKind
	Min  int // the value of a fixed distribution; the lower bound of a uniform one
	Max  int // the upper bound of a uniform distribution
	// Mean (in tokens) and Sigma (the standard deviation of the length's
	// logarithm) are a lognormal distribution's.
	Mean, Sigma float64
	// Observed are a histogram distribution's observations.
	Observed *Observations
}

// DistributionKind names the shape of a Distribution.
type DistributionKind int

// The kinds of Distribution.
const (
	MaxTokens DistributionKind = iota // as many tokens as max_tokens
	Fixed                             // always Min
	Uniform                           // uniform in [Min, Max]
	LogNormal                         // lognormal of Mean and Sigma (dist.go)
	Histogram                         // drawn from Observed (dist.go)
)

// PoolFor returns the Config.LimitsByModel pattern whose pool model falls
// in, as the server picks it: the longest matching pattern, the first in
// lexical order among equals; "" for none. Clients that model the server
// (loadgen's oracle) ask it rather than repeat the rule.
func PoolFor(pools map[string]Limits, model string) string { return admission.PoolFor(pools, model) }

// The admission configuration is mock/internal/admission's, whose
// mechanism enforces it; these aliases are its names in the server schema
// (the same types, YAML keys and docs).
type (
	// Limits are the rate limits each API key has (admission.Limits).
	Limits = admission.Limits
	// LimitsPatch is a partial Limits: nil fields are left unchanged.
	LimitsPatch = admission.LimitsPatch
	// Acceleration is a ramp rule, a model of acceleration limits
	// (admission.Acceleration).
	Acceleration = admission.Acceleration
	// Capacity is the provider's capacity over all keys.
	Capacity = admission.Capacity
	// Organization is a pool of limits above the API keys
	// (admission.Organization).
	Organization = admission.Organization
	// LongContext is a separate set of limits for long-context requests
	// (admission.LongContext).
	LongContext = admission.LongContext
	// Cache is the prompt cache model (admission.Cache).
	Cache = admission.Cache
	// Quota caps what each API key may use in total (admission.Quota).
	Quota = admission.Quota
	// QuotaUsed is what one API key has used toward Config.Quota.
	QuotaUsed = admission.QuotaUsed
	// Price is what a model's tokens cost (admission.Price).
	Price = admission.Price
	// ScheduleEntry changes the limits at a time after the server's first
	// model request (admission.ScheduleEntry).
	ScheduleEntry = admission.ScheduleEntry
	// A Store holds the concurrency slots that replicas share
	// (admission.Store).
	Store = admission.Store
)

// Quota dimensions, as Stats.QuotaExceededBy and the metric's label name
// them.
const (
	QuotaRequests     = admission.QuotaRequests
	QuotaInputTokens  = admission.QuotaInputTokens
	QuotaOutputTokens = admission.QuotaOutputTokens
	QuotaUSD          = admission.QuotaUSD
)

// DefaultCacheMinTokens is Cache.MinTokens when it is 0.
const DefaultCacheMinTokens = admission.DefaultCacheMinTokens

// MaxBurst is the longest Limits.Burst: a day of refill.
const MaxBurst = admission.MaxBurst

// LimitAcceleration is the limit of a 429 from Limits.Acceleration.
const LimitAcceleration = admission.LimitAcceleration

// Limit names, as used in 429 messages, Stats.ThrottledBy and metrics.
const (
	LimitConcurrency = wire.LimitConcurrency
	LimitRPM         = wire.LimitRPM
	LimitITPM        = wire.LimitITPM
	LimitOTPM        = wire.LimitOTPM
	LimitTPM         = wire.LimitTPM
	LimitScript      = wire.LimitScript // a 429 injected by Faults.Script
	// LimitDecodeBudget is a 429 for a request body that waited
	// BodyTimeout for its share of Config.DecodeBudget.
	LimitDecodeBudget = wire.LimitDecodeBudget
)

// Faults are injected failures. Rates are probabilities in [0, 1] drawn per
// attempt from the seeded source.
type Faults struct {
	Error500   float64 `yaml:"error_500"`  // 500 api_error / server_error
	Overloaded float64 `yaml:"overloaded"` // 529 overloaded_error / 503
	Slow       Slow    `yaml:"slow"`       // extra time to first token
	Reset      float64 `yaml:"reset"`      // the connection is closed before any response
	CutStream  float64 `yaml:"cut_stream"` // the response stops half-way and the connection is closed
	// StreamError ends a stream half-way with an error event
	// (overloaded_error); a non-streaming response gets a 529/503 instead.
	StreamError float64 `yaml:"stream_error"`
	// Malformed cuts a response's text to half its tokens, ending it
	// normally (end_turn / stop): with a JSON Output.Text, a model that
	// returned invalid JSON.
	Malformed float64 `yaml:"malformed"`
	// Script fails the first attempts of every request, in order: with
	// [{attempts: 2, status: 529}, {attempts: 1, status: 429}] attempts 0
	// and 1 get 529, attempt 2 gets 429 and attempt 3 goes through. The
	// attempt index is X-Stainless-Retry-Count, or else the number of
	// earlier attempts of the same logical call, grouped by API key and
	// Idempotency-Key as in CallStats; a request with neither header is
	// not scripted.
	Script []ScriptStep `yaml:"script"`
}

// Slow makes a fraction of attempts slower.
type Slow struct {
	Rate  float64       `yaml:"rate"`
	Extra time.Duration `yaml:"extra"`
}

// ScriptStep is one step of Faults.Script.
type ScriptStep struct {
	Attempts int `yaml:"attempts"` // how many attempts this step fails
	Status   int `yaml:"status"`   // the status they get, 400 to 599
	// RetryAfter is the retry-after header sent with them; 0 sends none.
	RetryAfter time.Duration `yaml:"retry_after,omitempty"`
}

// Models says which model names the server accepts. The zero value accepts
// the catalogue of each API (the models the official SDKs name; see
// KnownModels); Any accepts every name, and Extra adds names to both APIs'
// catalogues. A request for a model the server does not accept gets the
// API's own 404: not_found_error (Anthropic) or model_not_found (OpenAI).
//
// Its YAML forms are `models: known` (the default), `models: any` and a
// list of extra names, `models: [my-model, other-model]`.
type Models struct {
	Any   bool
	Extra []string
}

// UnmarshalYAML decodes `known`, `any` or a list of names.
func (m *Models) UnmarshalYAML(n *yaml.Node) error {
	bad := func(format string, args ...any) error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Value {
		case "known", "":
			*m = Models{}
			return nil
		case "any":
			*m = Models{Any: true}
			return nil
		}
		return bad("invalid models %q: want known, any or a list of model names", n.Value)
	case yaml.SequenceNode:
		var names []string
		if err := n.Decode(&names); err != nil {
			return bad("models: want a list of model names")
		}
		*m = Models{Extra: names}
		return nil
	}
	return bad("invalid models: want known, any or a list of model names")
}

// MarshalYAML encodes m in the form UnmarshalYAML reads.
func (m Models) MarshalYAML() (any, error) {
	switch {
	case m.Any:
		return "any", nil
	case len(m.Extra) > 0:
		return m.Extra, nil
	}
	return "known", nil
}

// Observations are an empirical distribution of output lengths: the token
// counts observed in production, each drawn as often as it was observed.
// Its YAML form names a file (Distribution's histogram: FILE) holding one
// observation a line, in one of two forms:
//
//	120        a token count, or a count and how many times it was seen:
//	120 3      (blank lines and lines starting with # are skipped)
//	{"index": 0, "usage": {"input_tokens": 12, "output_tokens": 120}, ...}
//	           a line of loadgen batch's results.jsonl: its usage's
//	           output_tokens (lines without any, failed items, are skipped)
type Observations struct {
	// File is where the observations were read from, as the configuration
	// named it.
	File string
	// Values are the distinct token counts, ascending, and Weights how many
	// times each was observed.
	Values  []int
	Weights []float64

	cum []float64 // running sums of Weights, for drawing
}

// LimitQuota is the limit of a 429 refused by Config.Quota, as the call
// accounting's throttled_by names it. A spend cap is not a rate limit:
// Stats counts it in QuotaExceeded, never in Throttled.
const LimitQuota = wire.LimitQuota

// MaxOutputTokens is the largest max_tokens a request may ask for.
const MaxOutputTokens = wire.MaxOutputTokens

// DefaultConfig returns the configuration of a plain mockllm: open, 5 ms
// per output token, output of max_tokens tokens, no limits, no faults.
func DefaultConfig() Config {
	return Config{Latency: Latency{PerToken: 5 * time.Millisecond}}
}

// UnmarshalStrict decodes a Config over DefaultConfig, so that keys a file
// leaves out keep their defaults (see package internal/strict, the one
// decoder of every ratelab configuration).
func (c *Config) UnmarshalStrict(d *strict.Decoder, n *yaml.Node, path string) {
	type plain Config // without this method
	p := plain(profileBase(d, n, path))
	d.Decode(n, &p, path)
	*c = Config(p)
}

// UnmarshalYAML decodes a Config embedded in a document decoded by yaml.v3,
// strictly and over DefaultConfig, with the messages of ParseConfig (less
// the file name, which yaml.v3 does not know).
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	d := strict.NewDecoder("")
	d.Decode(n, c, "")
	return d.Err()
}

// UnmarshalStrict decodes `max_tokens`, `{fixed: N}`, `{uniform: [MIN, MAX]}`,
// `{lognormal: {mean, sigma}}` or `{histogram: FILE}`.
func (dist *Distribution) UnmarshalStrict(d *strict.Decoder, n *yaml.Node, path string) {
	const want = "want max_tokens, {fixed: N}, {uniform: [MIN, MAX]}, {lognormal: {mean: TOKENS, sigma: S}} or {histogram: FILE}"
	switch {
	case strict.IsNull(n):
		return
	case n.Kind == yaml.ScalarNode:
		if n.Value != "max_tokens" {
			d.Errorf(n, path, "invalid output distribution %q: %s", n.Value, want)
			return
		}
		*dist = Distribution{}
		return
	case n.Kind == yaml.MappingNode && len(n.Content) == 2:
		key, val := n.Content[0].Value, n.Content[1]
		switch key {
		case "fixed":
			var v int
			d.Decode(val, &v, fielderr.Join(path, key))
			*dist = Distribution{Kind: Fixed, Min: v}
			return
		case "uniform":
			var v []int
			d.Decode(val, &v, fielderr.Join(path, key))
			if len(v) != 2 {
				d.Errorf(val, fielderr.Join(path, key), "want [MIN, MAX], got %s", strict.DescribeNode(val))
				return
			}
			*dist = Distribution{Kind: Uniform, Min: v[0], Max: v[1]}
			return
		case "lognormal", "histogram":
			dist.decodeSampled(d, key, val, path)
			return
		}
		d.Errorf(n.Content[0], path, "unknown output distribution %q: %s", key, want)
		return
	}
	d.Errorf(n, path, "invalid output distribution: %s, got %s", want, strict.DescribeNode(n))
}

// UnmarshalYAML decodes a Distribution as UnmarshalStrict does, for yaml.v3.
func (dist *Distribution) UnmarshalYAML(n *yaml.Node) error {
	d := strict.NewDecoder("")
	d.Decode(n, dist, "")
	return d.Err()
}

// MarshalYAML encodes d in the form UnmarshalYAML reads.
func (d Distribution) MarshalYAML() (any, error) {
	switch d.Kind {
	case Fixed:
		return map[string]int{"fixed": d.Min}, nil
	case Uniform:
		return map[string][]int{"uniform": {d.Min, d.Max}}, nil
	case LogNormal:
		return map[string]map[string]float64{"lognormal": {"mean": d.Mean, "sigma": d.Sigma}}, nil
	case Histogram:
		return map[string]string{"histogram": d.Observed.File}, nil
	}
	return "max_tokens", nil
}

// String returns the YAML form of d.
func (d Distribution) String() string {
	switch d.Kind {
	case Fixed:
		return fmt.Sprintf("{fixed: %d}", d.Min)
	case Uniform:
		return fmt.Sprintf("{uniform: [%d, %d]}", d.Min, d.Max)
	case LogNormal:
		return fmt.Sprintf("{lognormal: {mean: %v, sigma: %v}}", d.Mean, d.Sigma)
	case Histogram:
		return fmt.Sprintf("{histogram: %s}", d.Observed.File)
	}
	return "max_tokens"
}

// Validate reports every invalid value of c, each naming its key's path
// (e.g. limits.rpm: must not be negative, got -1), one a line. ParseConfig
// and a scenario's server: block add the file and the line.
func (c Config) Validate() error {
	var errs strict.Errors
	check := func(ok bool, path, format string, args ...any) {
		if !ok {
			errs = append(errs, &strict.Error{Path: path, Message: fmt.Sprintf(format, args...)})
		}
	}
	nonNeg := func(path string, v int) { check(v >= 0, path, "must not be negative, got %d", v) }
	nonNegD := func(path string, v time.Duration) {
		check(v >= 0, path, "must not be negative, got %v", v)
		check(v <= MaxLatency, path, "%v is above the longest duration the mock can plan, %v", v, MaxLatency)
	}
	rate := func(path string, v float64) { check(v >= 0 && v <= 1, path, "must be a rate in [0, 1], got %v", v) }

	check(c.MaxHeaderBytes == 0 || c.MaxHeaderBytes >= 1024 && c.MaxHeaderBytes <= 64<<20, "max_header_bytes",
		"must be 0 (the default, %d) or in [1024, %d], got %d", DefaultMaxHeaderBytes, 64<<20, c.MaxHeaderBytes)
	check(c.DecodeBudget == 0 || c.DecodeBudget >= MaxBodyBytes, "decode_budget",
		"must be 0 (the default, %d) or at least the largest body, %d, got %d", int64(DefaultDecodeBudget), MaxBodyBytes, c.DecodeBudget)
	for i, m := range c.Models.Extra {
		check(m != "", fmt.Sprintf("models[%d]", i), "must not be empty")
	}
	for i, k := range c.APIKeys {
		check(k != "", fmt.Sprintf("api_keys[%d]", i), "must not be empty")
	}
	for id, secret := range c.AWSSecretKeys {
		check(id != "" && secret != "", "aws_secret_keys."+id, "want a non-empty access key id and secret")
	}
	nonNegD("latency.ttft", c.Latency.TTFT)
	nonNegD("latency.ttft_per_input_token", c.Latency.TTFTPerInputToken)
	nonNegD("latency.per_token", c.Latency.PerToken)
	check(c.Latency.Jitter >= 0 && c.Latency.Jitter < 1, "latency.jitter", "must be in [0, 1), got %v", c.Latency.Jitter)
	validateLatencyBounds(c.Latency, c.Faults.Slow.Extra, check)
	switch d := c.Output.Tokens; d.Kind {
	case Fixed:
		check(d.Min >= 1, "output.tokens", "fixed must be at least 1, got %d", d.Min)
	case Uniform:
		check(d.Min >= 1 && d.Max >= d.Min, "output.tokens", "uniform needs 1 <= MIN <= MAX, got [%d, %d]", d.Min, d.Max)
	case LogNormal, Histogram:
		validateSampled(d, check)
	}
	check(c.Output.Length == "" || c.Output.Length == LengthMaxTokens || c.Output.Length == LengthNatural,
		"output.length", "want max_tokens or natural, got %q", c.Output.Length)
	rate("output.tool_use", c.Output.ToolUse)
	check(c.Output.DefaultMaxTokens >= 0 && c.Output.DefaultMaxTokens <= wire.MaxOutputTokens,
		"output.default_max_tokens", "must be in [0, %d], got %d", wire.MaxOutputTokens, c.Output.DefaultMaxTokens)
	admission.ValidateLimits(c.Limits, "limits", MaxLatency, check)
	for _, p := range admission.PoolPatterns(c.LimitsByModel) {
		_, err := path.Match(p, "")
		check(err == nil && p != "", "limits_by_model."+p, "want a model pattern such as claude-sonnet-4-*, got %q", p)
		admission.ValidateLimits(c.LimitsByModel[p], "limits_by_model."+p, MaxLatency, check)
	}
	admission.ValidateLimits(c.Organization.Limits, "organization.limits", MaxLatency, check)
	admission.ValidateLongContext(c.LongContext, "long_context", MaxInputTokens, MaxLatency, check)
	admission.ValidateQuota(c.Quota, "quota", check)
	validateAzure(c.Azure, c.Models, check)
	admission.ValidatePrices(c.Prices, c.Quota, check)
	validateBatches(c.Batches, check)
	check(c.Cache.MinTokens == 0 || c.Cache.MinTokens >= wire.MinCachePrefix && c.Cache.MinTokens <= MaxInputTokens, "cache.min_tokens",
		"must be 0 (the default, %d) or in [%d, %d], got %d", DefaultCacheMinTokens, wire.MinCachePrefix, MaxInputTokens, c.Cache.MinTokens)
	nonNeg("capacity.max_concurrent", c.Capacity.MaxConcurrent)
	f := c.Faults
	rate("faults.error_500", f.Error500)
	rate("faults.overloaded", f.Overloaded)
	rate("faults.slow.rate", f.Slow.Rate)
	nonNegD("faults.slow.extra", f.Slow.Extra)
	rate("faults.reset", f.Reset)
	rate("faults.cut_stream", f.CutStream)
	rate("faults.stream_error", f.StreamError)
	rate("faults.malformed", f.Malformed)
	for i, s := range f.Script {
		p := fmt.Sprintf("faults.script[%d]", i)
		check(s.Attempts >= 1, p+".attempts", "must be at least 1, got %d", s.Attempts)
		check(s.Status >= 400 && s.Status <= 599, p+".status", "must be an error status in [400, 599], got %d", s.Status)
		nonNegD(p+".retry_after", s.RetryAfter)
	}
	for i, e := range c.Schedule {
		p := fmt.Sprintf("schedule[%d]", i)
		nonNegD(p+".at", e.At)
		if i > 0 {
			check(e.At >= c.Schedule[i-1].At, p+".at", "must not be before the previous entry's %v, got %v", c.Schedule[i-1].At, e.At)
		}
		admission.ValidateLimits(e.Limits.Apply(Limits{}), p+".limits", MaxLatency, check)
	}
	return errs.Err()
}

// MaxLatency is the longest time the mock plans a response to take, from
// admission to its last token, jitter included: about 146 years, half of
// what a time.Duration holds, so that no product or sum in the latency
// model can overflow. A configuration that could exceed it is refused.
const MaxLatency = time.Duration(math.MaxInt64 / 2)

// MaxInputTokens bounds the input tokens of one request: a body of
// MaxBodyBytes holds at most a quarter of its bytes in tokens of text, plus
// one per message of at least 29 bytes, well below half its bytes.
const MaxInputTokens = MaxBodyBytes / 2

// validateLatencyBounds refuses latencies whose worst case (the longest
// input, max_tokens of MaxOutputTokens, the slow fault and the highest
// jitter factor, below 2) could overflow the latency model, naming the
// field whose product overflows. The check is on the largest request the
// mock accepts, so no request can overflow at run time.
func validateLatencyBounds(l Latency, slowExtra time.Duration, check func(bool, string, string, ...any)) {
	limit := MaxLatency / 2 // the jitter factor is below 2
	perInput := limit / MaxInputTokens
	perOutput := limit / wire.MaxOutputTokens
	okIn := l.TTFTPerInputToken <= perInput
	okOut := l.PerToken <= perOutput
	check(okIn, "latency.ttft_per_input_token",
		"%v × up to %d input tokens (a %d MB body) overflows the latency model; at most %v", l.TTFTPerInputToken, MaxInputTokens, MaxBodyBytes>>20, perInput)
	check(okOut, "latency.per_token",
		"%v × up to %d output tokens (max_tokens) overflows the latency model; at most %v", l.PerToken, wire.MaxOutputTokens, perOutput)
	if !okIn || !okOut || l.TTFT < 0 || l.TTFTPerInputToken < 0 || l.PerToken < 0 || slowExtra < 0 {
		return
	}
	// Each term is now at most limit; add them in uint64 so the sum
	// cannot wrap.
	total := uint64(min(l.TTFT, limit)) + uint64(min(slowExtra, limit)) + uint64(l.TTFTPerInputToken)*MaxInputTokens + uint64(l.PerToken)*wire.MaxOutputTokens
	check(total <= uint64(limit), "latency",
		"the worst case, ttft + ttft_per_input_token × %d + per_token × %d + faults.slow.extra, with jitter, exceeds %v; lower them",
		MaxInputTokens, wire.MaxOutputTokens, MaxLatency)
}

// LoadConfig reads and parses the YAML file at path; a file larger than
// 4 MiB is refused before it is parsed.
func LoadConfig(path string) (Config, error) {
	data, err := strict.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(data, path)
}

// ParseConfig parses a YAML configuration strictly and validates it. Keys
// left out keep their DefaultConfig values. Every unknown key, value of the
// wrong type and invalid value is reported at once, one a line, as
// "FILE:LINE: KEY: what is wrong"; filename is used only in messages.
func ParseConfig(data []byte, filename string) (Config, error) {
	return ParseConfigProfile(data, filename, "")
}

// LoadConfigProfile is LoadConfig starting from the provider profile
// called profile (mockllm --profile), unless that is empty.
func LoadConfigProfile(path, profile string) (Config, error) {
	data, err := strict.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return ParseConfigProfile(data, path, profile)
}

// ParseConfigProfile is ParseConfig starting from the provider profile
// called profile, unless that is empty: the file's keys override the
// profile's, and a file naming another profile is refused.
func ParseConfigProfile(data []byte, filename, profile string) (Config, error) {
	root, err := strict.Parse(filename, data)
	if err != nil {
		return Config{}, err
	}
	if profile != "" {
		if root == nil {
			root = &yaml.Node{Kind: yaml.MappingNode}
		}
		if err := withProfile(root, profile); err != nil {
			return Config{}, fmt.Errorf("%s:%w", filename, err)
		}
	}
	cfg := DefaultConfig()
	d := strict.NewDecoder(filename)
	if root != nil {
		d.Decode(root, &cfg, "")
	}
	d.Place("", cfg.Validate())
	if err := d.Err(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Azure configures the Azure OpenAI endpoints (mock/internal/azure,
// docs/azure.md): the `azure:` block of the server schema.
type Azure struct {
	// Deployments maps a deployment name to its model and limits. None
	// (the default) deploys every model of the catalogue under its own
	// name, limited by the key's Limits only; with some, a request naming
	// another deployment gets 404 DeploymentNotFound.
	Deployments map[string]AzureDeployment `yaml:"deployments,omitempty"`
	// ContentFilter is the rate of requests refused by the content filter
	// (400 content_filter with innererror ResponsibleAIPolicyViolation),
	// drawn per request from a source seeded by Seed; 0 refuses none.
	ContentFilter float64 `yaml:"content_filter,omitempty"`
}

// AzureDeployment is one deployment.
type AzureDeployment struct {
	// Model is the model the deployment serves (a model of the catalogue,
	// or any with `models: any`): the model field of its answers.
	Model string `yaml:"model"`
	// Limits are the deployment's own limits, each API key having its own
	// instance (a key stands for one Azure resource): Azure gives each
	// deployment a tpm and an rpm (6 rpm per 1,000 tpm for most chat
	// models). They apply on top of the key's Limits and replace any
	// limits_by_model pool of the model.
	Limits Limits `yaml:"limits"`
}

// azureDeploymentName is what Azure accepts as a deployment name: 2 to 64
// letters, digits, '-', '_' and '.'.
var azureDeploymentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{1,63}$`)

// validateAzure checks the azure: block.
func validateAzure(a Azure, models Models, check func(bool, string, string, ...any)) {
	known := modelIndex(openaiCatalog, models.Extra)
	for _, name := range admission.PoolPatterns(a.Deployments) {
		p := "azure.deployments." + name
		d := a.Deployments[name]
		check(azureDeploymentName.MatchString(name), p, "want a deployment name of 2 to 64 letters, digits, '.', '_' or '-', got %q", name)
		switch {
		case d.Model == "":
			check(false, p+".model", "field required: the model the deployment serves, e.g. gpt-4o")
		case !models.Any && !known[d.Model]:
			check(false, p+".model", "unknown model %q: name one of KnownModels(\"openai\"), add it to models:, or set models: any", d.Model)
		}
		admission.ValidateLimits(d.Limits, p+".limits", MaxLatency, check)
	}
	check(a.ContentFilter >= 0 && a.ContentFilter <= 1, "azure.content_filter", "must be a rate in [0, 1], got %v", a.ContentFilter)
}

// formatEnv is what the formats' Route.Resolve read of the server: the
// catalogue check, the azure: block's deployments (each with limits names
// its own pool, whose limits are the second result) and its content
// filter, drawn from a source of its own (so that Azure requests do not
// change the draws of the server's other faults).
func (s *Server) formatEnv() (*wire.Env, map[string]Limits) {
	env := &wire.Env{
		Accepts: func(catalog, model string) bool {
			if s.cfg.Models.Any {
				return true
			}
			if catalog == wire.CatalogAnthropic {
				return s.anthropicModels[model]
			}
			return s.openaiModels[model]
		},
		Filtered: func() bool { return false },
	}
	a := s.cfg.Azure
	var pools map[string]Limits
	if len(a.Deployments) > 0 {
		env.Deployments = make(map[string]wire.Deployment, len(a.Deployments))
		pools = make(map[string]Limits)
	}
	for name, d := range a.Deployments {
		dep := wire.Deployment{Model: d.Model}
		if d.Limits != (Limits{}) {
			// Named apart from every model pattern: a pattern cannot
			// start with a NUL.
			dep.Pool = "\x00azure deployment " + name
			pools[dep.Pool] = d.Limits
		}
		env.Deployments[name] = dep
	}
	if rate := a.ContentFilter; rate > 0 {
		var mu sync.Mutex
		rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), 0xa2c7e))
		env.Filtered = func() bool {
			mu.Lock()
			defer mu.Unlock()
			return rng.Float64() < rate
		}
	}
	return env, pools
}
