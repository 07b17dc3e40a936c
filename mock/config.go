package mock

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxBodyBytes is the largest request body the server reads; larger bodies
// get 413 request_too_large, as the Messages API answers above 32 MB.
const MaxBodyBytes = 32 << 20

// MaxOutputTokens is the largest max_tokens a request may ask for.
const MaxOutputTokens = 128000

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
	// Seed seeds the random source of jitter, output distributions and
	// fault injection, so a run can be replayed.
	Seed int64 `yaml:"seed"`
	// APIKeys are the accepted API keys. None means open: any request is
	// accepted and every request shares one anonymous set of limits.
	APIKeys []string `yaml:"api_keys"`
	// AdminToken, when set, must be sent as "Authorization: Bearer TOKEN"
	// or "X-Admin-Token: TOKEN" to use /_admin/. Empty leaves /_admin/ open.
	AdminToken string `yaml:"admin_token"`

	Latency  Latency         `yaml:"latency"`
	Output   Output          `yaml:"output"`
	Limits   Limits          `yaml:"limits"`
	Capacity Capacity        `yaml:"capacity"`
	Faults   Faults          `yaml:"faults"`
	Schedule []ScheduleEntry `yaml:"schedule"`

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
}

// Distribution is a distribution of output token counts. Its YAML forms are
// `max_tokens` (the zero value: as many tokens as the request allows),
// `{fixed: N}` and `{uniform: [MIN, MAX]}` (inclusive, drawn from the seeded
// source).
type Distribution struct {
	Kind DistributionKind
	Min  int // the value of a fixed distribution; the lower bound of a uniform one
	Max  int // the upper bound of a uniform distribution
}

// DistributionKind names the shape of a Distribution.
type DistributionKind int

// The kinds of Distribution.
const (
	MaxTokens DistributionKind = iota // as many tokens as max_tokens
	Fixed                             // always Min
	Uniform                           // uniform in [Min, Max]
)

// Limits are the rate limits each API key has. A zero limit is unlimited.
type Limits struct {
	// MaxConcurrent caps the requests in flight.
	MaxConcurrent int `yaml:"max_concurrent"`
	// RPM caps requests per minute (a token bucket of RPM requests that
	// refills continuously at RPM per minute).
	RPM int `yaml:"rpm"`
	// ITPM caps input tokens per minute (Anthropic).
	ITPM int `yaml:"itpm"`
	// OTPM caps output tokens per minute (Anthropic). A request reserves
	// its max_tokens at admission and the reservation is settled to the
	// tokens actually produced when the response ends.
	OTPM int `yaml:"otpm"`
	// TPM caps tokens per minute (OpenAI): each request is charged
	// max(max_tokens, input tokens) at admission, and not refunded.
	TPM int `yaml:"tpm"`
	// RetryAfter is the retry-after sent with a 429. Zero computes it from
	// the limit that was hit: the time until its bucket has room, or until
	// the key's earliest in-flight request is due to end, in whole seconds
	// rounded up.
	RetryAfter time.Duration `yaml:"retry_after"`
	// CountRejected makes rejected attempts use up the requests-per-minute
	// budget too, as OpenAI documents. An attempt rejected because that
	// budget is empty takes nothing: the bucket never goes negative.
	CountRejected bool `yaml:"count_rejected"`
}

// Capacity is the provider's capacity over all keys.
type Capacity struct {
	// MaxConcurrent caps the requests in flight over all keys; beyond it the
	// answer is 529 overloaded_error (Anthropic) or 503 (OpenAI). 0 is
	// unlimited.
	MaxConcurrent int `yaml:"max_concurrent"`
}

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
	// earlier attempts with the same Idempotency-Key; a request with
	// neither header is not scripted.
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

// ScheduleEntry changes the limits At a time after the server's first model
// request (after New or the last Reset), without resetting limiter state.
// Only the keys present in Limits change.
type ScheduleEntry struct {
	At     time.Duration `yaml:"at"`
	Limits LimitsPatch   `yaml:"limits"`
}

// LimitsPatch is a partial Limits: nil fields are left unchanged.
type LimitsPatch struct {
	MaxConcurrent *int           `yaml:"max_concurrent,omitempty"`
	RPM           *int           `yaml:"rpm,omitempty"`
	ITPM          *int           `yaml:"itpm,omitempty"`
	OTPM          *int           `yaml:"otpm,omitempty"`
	TPM           *int           `yaml:"tpm,omitempty"`
	RetryAfter    *time.Duration `yaml:"retry_after,omitempty"`
	CountRejected *bool          `yaml:"count_rejected,omitempty"`
}

// Apply returns l with the fields p sets replaced.
func (p LimitsPatch) Apply(l Limits) Limits {
	set := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	set(&l.MaxConcurrent, p.MaxConcurrent)
	set(&l.RPM, p.RPM)
	set(&l.ITPM, p.ITPM)
	set(&l.OTPM, p.OTPM)
	set(&l.TPM, p.TPM)
	if p.RetryAfter != nil {
		l.RetryAfter = *p.RetryAfter
	}
	if p.CountRejected != nil {
		l.CountRejected = *p.CountRejected
	}
	return l
}

// DefaultConfig returns the configuration of a plain mockllm: open, 5 ms
// per output token, output of max_tokens tokens, no limits, no faults.
func DefaultConfig() Config {
	return Config{Latency: Latency{PerToken: 5 * time.Millisecond}}
}

// UnmarshalYAML decodes a Config over DefaultConfig, so that keys a file
// leaves out keep their defaults. It uses the decoder's own unmarshal
// function, so a strict decoder (KnownFields) stays strict.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	type plain Config
	p := plain(DefaultConfig())
	if err := unmarshal(&p); err != nil {
		return err
	}
	*c = Config(p)
	return nil
}

// UnmarshalYAML decodes `max_tokens`, `{fixed: N}` or `{uniform: [MIN, MAX]}`.
func (d *Distribution) UnmarshalYAML(n *yaml.Node) error {
	bad := func(format string, args ...any) error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
	}
	const want = "want max_tokens, {fixed: N} or {uniform: [MIN, MAX]}"
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value != "max_tokens" {
			return bad("invalid output distribution %q: %s", n.Value, want)
		}
		*d = Distribution{}
		return nil
	case yaml.MappingNode:
		if len(n.Content) != 2 {
			return bad("invalid output distribution: %s", want)
		}
		key, val := n.Content[0].Value, n.Content[1]
		switch key {
		case "fixed":
			var v int
			if err := val.Decode(&v); err != nil {
				return bad("fixed: want an integer")
			}
			*d = Distribution{Kind: Fixed, Min: v}
			return nil
		case "uniform":
			var v []int
			if err := val.Decode(&v); err != nil || len(v) != 2 {
				return bad("uniform: want [MIN, MAX]")
			}
			*d = Distribution{Kind: Uniform, Min: v[0], Max: v[1]}
			return nil
		}
		return bad("unknown output distribution %q: %s", key, want)
	}
	return bad("invalid output distribution: %s", want)
}

// MarshalYAML encodes d in the form UnmarshalYAML reads.
func (d Distribution) MarshalYAML() (any, error) {
	switch d.Kind {
	case Fixed:
		return map[string]int{"fixed": d.Min}, nil
	case Uniform:
		return map[string][]int{"uniform": {d.Min, d.Max}}, nil
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
	}
	return "max_tokens"
}

// fieldError is a validation error about one key of the schema.
type fieldError struct {
	path string // dotted YAML path, e.g. limits.rpm
	msg  string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

// Validate reports every invalid value of c, each naming its key (e.g.
// limits.rpm), joined with errors.Join.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, path, format string, args ...any) {
		if !ok {
			errs = append(errs, &fieldError{path, fmt.Sprintf(format, args...)})
		}
	}
	nonNeg := func(path string, v int) { check(v >= 0, path, "must not be negative, got %d", v) }
	nonNegD := func(path string, v time.Duration) { check(v >= 0, path, "must not be negative, got %v", v) }
	rate := func(path string, v float64) { check(v >= 0 && v <= 1, path, "must be a rate in [0, 1], got %v", v) }

	for i, k := range c.APIKeys {
		check(k != "", fmt.Sprintf("api_keys[%d]", i), "must not be empty")
	}
	nonNegD("latency.ttft", c.Latency.TTFT)
	nonNegD("latency.ttft_per_input_token", c.Latency.TTFTPerInputToken)
	nonNegD("latency.per_token", c.Latency.PerToken)
	check(c.Latency.Jitter >= 0 && c.Latency.Jitter < 1, "latency.jitter", "must be in [0, 1), got %v", c.Latency.Jitter)
	switch d := c.Output.Tokens; d.Kind {
	case Fixed:
		check(d.Min >= 1, "output.tokens", "fixed must be at least 1, got %d", d.Min)
	case Uniform:
		check(d.Min >= 1 && d.Max >= d.Min, "output.tokens", "uniform needs 1 <= MIN <= MAX, got [%d, %d]", d.Min, d.Max)
	}
	check(c.Output.DefaultMaxTokens >= 0 && c.Output.DefaultMaxTokens <= MaxOutputTokens,
		"output.default_max_tokens", "must be in [0, %d], got %d", MaxOutputTokens, c.Output.DefaultMaxTokens)
	validateLimits(c.Limits, "limits", check)
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
		validateLimits(e.Limits.Apply(Limits{}), p+".limits", check)
	}
	return errors.Join(errs...)
}

func validateLimits(l Limits, path string, check func(bool, string, string, ...any)) {
	for _, f := range []struct {
		key string
		v   int
	}{{"max_concurrent", l.MaxConcurrent}, {"rpm", l.RPM}, {"itpm", l.ITPM}, {"otpm", l.OTPM}, {"tpm", l.TPM}} {
		check(f.v >= 0, path+"."+f.key, "must not be negative, got %d", f.v)
	}
	check(l.RetryAfter >= 0, path+".retry_after", "must not be negative, got %v", l.RetryAfter)
}

// LoadConfig reads and parses the YAML file at path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("mock: %w", err)
	}
	return ParseConfig(data, path)
}

// ParseConfig parses a YAML configuration strictly and validates it. Keys
// left out keep their DefaultConfig values. An unknown key, a value of the
// wrong type or an invalid value is an error of the form
// "FILE:LINE: KEY: what is wrong"; filename is used only in messages.
func ParseConfig(data []byte, filename string) (Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Config{}, fmt.Errorf("%s: %w", filename, err)
	}
	lines := keyLines(&root, "")
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, describeYAMLError(err, filename, lines)
	}
	if err := cfg.Validate(); err != nil {
		var errs []error
		for _, e := range unjoin(err) {
			var fe *fieldError
			if errors.As(e, &fe) {
				errs = append(errs, fmt.Errorf("%s:%d: %w", filename, lines.lineOf(fe.path), e))
			} else {
				errs = append(errs, fmt.Errorf("%s: %w", filename, e))
			}
		}
		return Config{}, errors.Join(errs...)
	}
	return cfg, nil
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// yamlPaths maps the dotted paths of a YAML document's keys to their lines
// and back, so that errors can name both.
type yamlPaths struct {
	byLine map[int]string
	byPath map[string]int
}

func (p yamlPaths) lineOf(path string) int {
	for {
		if l, ok := p.byPath[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 1
		}
		path = path[:i]
	}
}

// keyLines maps the keys of a YAML document, under the dotted prefix.
func keyLines(root *yaml.Node, prefix string) yamlPaths {
	p := yamlPaths{byLine: map[int]string{}, byPath: map[string]int{}}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				kp := k.Value
				if path != "" {
					kp = path + "." + k.Value
				}
				if _, ok := p.byLine[k.Line]; !ok {
					p.byLine[k.Line] = kp
				}
				if v.Line != k.Line {
					if _, ok := p.byLine[v.Line]; !ok && v.Kind == yaml.ScalarNode {
						p.byLine[v.Line] = kp
					}
				}
				p.byPath[kp] = k.Line
				walk(v, kp)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				ip := fmt.Sprintf("%s[%d]", path, i)
				p.byPath[ip] = c.Line
				if _, ok := p.byLine[c.Line]; !ok {
					p.byLine[c.Line] = ip
				}
				walk(c, ip)
			}
		}
	}
	walk(root, prefix)
	return p
}

var (
	yamlLineRe    = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlUnknownRe = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	yamlTypeRe    = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (\\S+)$")
)

// describeYAMLError rewrites yaml.v3's messages as "FILE:LINE: KEY: problem".
func describeYAMLError(err error, filename string, paths yamlPaths) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %w", filename, err)
	}
	errs := make([]error, 0, len(te.Errors))
	for _, msg := range te.Errors {
		m := yamlLineRe.FindStringSubmatch(msg)
		if m == nil {
			errs = append(errs, fmt.Errorf("%s: %s", filename, msg))
			continue
		}
		line, _ := strconv.Atoi(m[1])
		what := m[2]
		key := paths.byLine[line]
		if u := yamlUnknownRe.FindStringSubmatch(what); u != nil {
			errs = append(errs, fmt.Errorf("%s:%d: unknown key %q (at %s)", filename, line, u[1], key))
			continue
		}
		if t := yamlTypeRe.FindStringSubmatch(what); t != nil {
			what = fmt.Sprintf("invalid value %q: want %s", t[2], describeGoType(t[3]))
		}
		if key != "" {
			what = key + ": " + what
		}
		errs = append(errs, fmt.Errorf("%s:%d: %s", filename, line, what))
	}
	return errors.Join(errs...)
}

func describeGoType(t string) string {
	switch {
	case t == "time.Duration":
		return "a duration with a unit, e.g. 500ms or 1s"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	}
	return "a mapping"
}
