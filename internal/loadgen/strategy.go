package loadgen

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// Row is one row of a scenario's strategies: a client strategy with its
// parameters, its retry policy and what its run is expected to show. The
// keys below are common to every kind; kind: picks the strategy, and the
// row's other keys decode straight into that kind's configuration (see
// Kinds).
type Row struct {
	// Name labels the row; unique within the scenario. Required.
	Name string `yaml:"name"`
	// Kind selects the strategy: one of Kinds. Required.
	Kind string `yaml:"kind"`

	// MaxRetries is the retry policy's retries per item (the SDKs'
	// max_retries); -1 retries until the item succeeds. Default 2.
	MaxRetries *int `yaml:"max_retries"`
	// Requeue releases the strategy's permit between attempts and puts the
	// item back in the queue, instead of retrying inside the held slot as an
	// SDK call inside `async with sem:` does.
	Requeue bool `yaml:"requeue"`
	// Seed seeds this strategy's retry jitter. Default: the scenario's seed.
	Seed int64 `yaml:"seed"`

	// Shared, when set, holds the strategy's limits in Redis, shared with
	// every process that names the same key (kinds in SharedKinds only).
	Shared *Shared `yaml:"shared"`

	// Expect lists what the run must show; loadgen run fails when any is not met.
	Expect Expect `yaml:"expect"`

	// Config is the kind's configuration, decoded from the row's other
	// keys by its yaml tags: a *strategies.SemaphoreConfig for semaphore, a
	// *strategies.AIMDConfig for aimd, and so on (nil when the kind is
	// unknown).
	Config any `yaml:"-"`

	// Sweep is what the row's sweep set, when the row is one of a sweep's
	// expansion (see Rows): each swept key and its value here, in the
	// file's order; nil otherwise.
	Sweep []Swept `yaml:"-"`

	keys map[string]int // keys the file set → their lines
	path string         // the row's path in the file, strategies[i]; "" when not from a file
}

// rowKeys are the keys every row has, whatever its kind.
var rowKeys = strict.Keys(strict.Fields(reflect.TypeFor[Row]()))

// UnmarshalStrict decodes a row: its common keys into r, the others into a
// new configuration of its kind.
func (r *Row) UnmarshalStrict(d *strict.Decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "want a mapping with name, kind and parameters, got %s", strict.DescribeNode(n))
		return
	}
	r.keys = make(map[string]int)
	kindName := ""
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		r.keys[kn.Value] = kn.Line
		if vn.Kind == yaml.AliasNode && vn.Alias != nil {
			vn = vn.Alias
		}
		if kn.Value == "kind" && vn.Kind == yaml.ScalarNode {
			kindName = vn.Value
		}
	}
	type plain Row // without this method
	targets := []any{(*plain)(r)}
	k, known := kinds[kindName]
	if known {
		r.Config = k.config()
		targets = append(targets, r.Config)
	}
	d.DecodeMapping(n, path, func(key string) string { return unknownKey(kindName, key) }, targets...)
}

// unknownKey is the message for a key that is neither common to rows nor a
// parameter of kind: "-" (say nothing) when the kind is unknown, since its
// parameters cannot be judged.
func unknownKey(kindName, key string) string {
	k, known := kinds[kindName]
	if !known {
		return "-" // the kind is reported; its parameters cannot be judged
	}
	for _, other := range kinds {
		if slices.Contains(other.params, key) {
			valid := "none"
			if len(k.params) > 0 {
				valid = strings.Join(k.params, ", ")
			}
			return fmt.Sprintf("not a parameter of kind %s (its parameters: %s)", kindName, valid)
		}
	}
	return fielderr.UnknownKey(key, append(slices.Clone(rowKeys), k.params...))
}

// Set reports whether the scenario file set key on r.
func (r *Row) Set(key string) bool {
	_, ok := r.keys[key]
	return ok
}

// Retries returns the row's max_retries after defaults.
func (r *Row) Retries() int {
	if r.MaxRetries == nil {
		return DefaultRetries
	}
	return *r.MaxRetries
}

// Params returns the parameters the file set, for reports: max_retries,
// requeue and shared, then the kind's, durations as strings and whole
// numbers as integers.
func (r *Row) Params() map[string]any {
	p := map[string]any{"max_retries": r.Retries()}
	if r.Requeue {
		p["requeue"] = true
	}
	if r.Shared != nil {
		p["shared"] = r.Shared.Key
	}
	if r.Config == nil {
		return p
	}
	v := reflect.ValueOf(r.Config).Elem()
	for key, idx := range strict.Fields(v.Type()) {
		if !r.Set(key) {
			continue
		}
		val := v.FieldByIndex(idx).Interface()
		switch x := val.(type) {
		case time.Duration:
			val = x.String()
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				val = int(x)
			}
		}
		p[key] = val
	}
	return p
}

// StateFile is an adaptive row's state_file, or "".
func (r *Row) StateFile() string {
	if c, ok := r.Config.(*adaptiveSettings); ok {
		return c.StateFile
	}
	return ""
}

// problems reports the validation problems of one row, under its path.
type problems struct {
	d    *strict.Decoder
	path string // strategies[i]
	row  *Row
}

func (p *problems) bad(key, format string, args ...any) {
	p.d.Invalidf(fielderr.Join(p.path, key), format, args...)
}

// failed reports whether the row's key failed to decode.
func (p *problems) failed(key string) bool { return p.d.Failed(fielderr.Join(p.path, key)) }

// nonNegative reports every negative number of a kind's configuration: no
// parameter of any kind may be negative. It runs after the kind's own
// checks, which word a negative value their way where it matters.
func (p *problems) nonNegative(cfg any) {
	v := reflect.ValueOf(cfg).Elem()
	fields := strict.Fields(v.Type())
	for _, key := range strict.Keys(fields) {
		f := v.FieldByIndex(fields[key])
		switch {
		case f.Type() == reflect.TypeFor[time.Duration]() && f.Int() < 0:
			p.bad(key, "must not be negative, got %s", time.Duration(f.Int()))
		case f.CanInt() && f.Int() < 0:
			p.bad(key, "must not be negative, got %d", f.Int())
		case f.CanFloat() && f.Float() < 0:
			p.bad(key, "must not be negative, got %g", f.Float())
		}
	}
}

// decrease checks the factor of aimd, aimd-delay and adaptive.
func (p *problems) decrease(v float64) {
	if p.row.Set("decrease") && (v <= 0 || v >= 1) {
		p.bad("decrease", "must be between 0 and 1 exclusive, got %g", v)
	}
}

func checkSemaphore(c *strategies.SemaphoreConfig, p *problems) {
	switch {
	case c.Max < 0:
		p.bad("n", "must not be negative, got %d", c.Max)
	case c.Max == 0:
		p.bad("n", "required: the semaphore's size, a positive number")
	}
}

func checkPerProvider(c *strategies.PerProviderConfig, p *problems) {
	if len(c.Limits) == 0 {
		p.bad("limits", "required: a limit per provider, e.g. {anthropic: 10, openai: 30}")
	}
	provs := make([]string, 0, len(c.Limits))
	for prov := range c.Limits {
		provs = append(provs, prov)
	}
	sort.Strings(provs)
	for _, prov := range provs {
		if !validProvider(prov) {
			p.bad("limits."+prov, "unknown provider %q (want %s)", prov, providerList())
		} else if n := c.Limits[prov]; n <= 0 {
			p.bad("limits."+prov, "must be positive, got %d", n)
		}
	}
}

func checkTokenBucket(c *strategies.TokenBucketConfig, p *problems) {
	if c.RPM == 0 && c.TPM == 0 && !p.failed("rpm") && !p.failed("tpm") {
		p.bad("kind", "token-bucket needs rpm or tpm")
	}
}

func checkTokenFirst(c *strategies.TokenFirstConfig, p *problems) {
	if c.TPM == 0 {
		p.bad("tpm", "required: the tokens-per-minute budget token-first reserves from")
	}
}

func checkAIMDDelay(c *strategies.AIMDDelayConfig, p *problems) {
	p.decrease(c.Decrease)
	if p.row.Set("increase") && c.Increase <= 1 {
		p.bad("increase", "must be greater than 1 (the delay's factor on a throttle), got %g", c.Increase)
	}
	if c.Min > 0 && c.Max > 0 && c.Min > c.Max {
		p.bad("min_delay", "min_delay %s is above max_delay %s", c.Min, c.Max)
	}
}

func checkAIMD(c *strategies.AIMDConfig, p *problems) {
	p.decrease(c.Decrease)
	if p.row.Set("increase") && c.Increase <= 0 {
		p.bad("increase", "must be positive, got %g", c.Increase)
	}
	if c.Min > 0 && c.Max > 0 && c.Min > c.Max {
		p.bad("min", "min %d is above max %d", c.Min, c.Max)
	}
}

func checkAdaptive(c *adaptiveSettings, p *problems) {
	p.decrease(c.Decrease)
	if c.Min > 0 && c.Max > 0 && c.Min > c.Max {
		p.bad("min", "min %d is above max %d", c.Min, c.Max)
	}
}

// validate checks the scenario's meaning, reporting through d, the
// decoder that read it: a value that failed to decode is not judged again,
// and a key gets one message. It ends with the provider's and the mock's
// request limits (validateLimits), so every way a scenario is made —
// a file, or loadgen exec's — is held to them.
func (s *Scenario) validate(d *strict.Decoder) {
	bad := d.Invalidf

	// Items and requests.
	if len(s.Items.Groups) == 0 && !s.batch && (s.Arrival == nil || s.Arrival.Duration <= 0) {
		bad("items", "required: the number of items (e.g. items: 200) or item groups")
	}
	s.validateArrival(d)
	s.validateSystem(d)
	for i, g := range s.Items.Groups {
		p := "items"
		if len(s.Items.Groups) > 1 {
			p = fmt.Sprintf("items[%d]", i)
		}
		if g.Count <= 0 && g.File == "" {
			bad(fielderr.Join(p, "count"), "must be positive, got %d", g.Count)
		}
		if g.Provider != "" && !validProvider(g.Provider) {
			bad(fielderr.Join(p, "provider"), "unknown provider %q (want %s)", g.Provider, providerList())
		}
		if g.MaxTokens < 0 {
			bad(fielderr.Join(p, "max_tokens"), "must not be negative, got %d", g.MaxTokens)
		}
		if g.PromptTokens < 0 {
			bad(fielderr.Join(p, "prompt_tokens"), "must not be negative, got %d", g.PromptTokens)
		}
		if g.Prompt != "" && g.PromptTokens != 0 {
			bad(fielderr.Join(p, "prompt_tokens"), "set prompt or prompt_tokens, not both")
		}
	}
	if d.Set("server") && s.Target != nil && !s.batch {
		bad("server", "has no effect with target: (the run goes to target.url, not the embedded mock); remove one of them")
	}
	r := s.Request
	if !validProvider(r.Provider) {
		bad("request.provider", "unknown provider %q (want %s)", r.Provider, providerList())
	}
	if r.MaxTokens < 0 {
		bad("request.max_tokens", "must not be negative, got %d", r.MaxTokens)
	}
	if r.PromptTokens < 0 {
		bad("request.prompt_tokens", "must not be negative, got %d", r.PromptTokens)
	}
	if d.Set("request.prompt") && r.PromptTokens != 0 {
		bad("request.prompt_tokens", "set prompt or prompt_tokens, not both")
	}
	if s.Workers < 0 {
		bad("workers", "must not be negative, got %d", s.Workers)
	}
	if s.Timeline < 0 {
		bad("timeline", "must not be negative, got %s", s.Timeline)
	}
	if t := s.Target; t != nil {
		if t.URL == "" {
			bad("target.url", "required when target is set (e.g. http://127.0.0.1:8080)")
		} else if !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://") {
			bad("target.url", "must start with http:// or https://, got %q", t.URL)
		}
		if t.Provider != "" && !validProvider(t.Provider) {
			bad("target.provider", "unknown provider %q (want %s)", t.Provider, providerList())
		}
	}
	if o := s.Oracle; o != nil {
		if o.Limit < 0 {
			bad("oracle.limit", "must not be negative, got %d", o.Limit)
		}
		if o.CallTime < 0 {
			bad("oracle.call_time", "must not be negative, got %s", o.CallTime)
		}
	}
	d.Place("server", s.Server.Validate())

	// Strategies.
	if len(s.Strategies) == 0 && !s.batch {
		bad("strategies", "required: at least one strategy (e.g. - {name: semaphore-20, kind: semaphore, n: 20})")
	}
	names := make(map[string]string) // name → its row's path
	for i := range s.Strategies {
		st := &s.Strategies[i]
		p := st.path
		if p == "" {
			p = fielderr.Index("strategies", i)
		}
		key := func(k string) string { return p + "." + k }
		if st.Name == "" {
			bad(key("name"), "required")
		} else if prev, dup := names[st.Name]; dup {
			bad(key("name"), "duplicate strategy name %q (also %s)", st.Name, prev)
		} else {
			names[st.Name] = p
		}
		if st.MaxRetries != nil && *st.MaxRetries < -1 {
			bad(key("max_retries"), "must be -1 (retry until success) or more, got %d", *st.MaxRetries)
		}
		k, ok := kinds[st.Kind]
		switch {
		case st.Kind == "":
			bad(key("kind"), "required: one of %s", strings.Join(kindNames(), ", "))
			continue
		case !ok:
			bad(key("kind"), "unknown kind %q (want one of %s)", st.Kind, strings.Join(kindNames(), ", "))
			continue
		}
		s.checkCommand(st, func(k, format string, args ...any) { bad(key(k), format, args...) })
		s.checkMeasurable(st, func(k, format string, args ...any) { bad(key(k), format, args...) })
		if st.Shared != nil {
			for _, pr := range st.Shared.Check(st.Kind) {
				bad(fielderr.Join(key("shared"), pr.Key), "%s", pr.Msg)
			}
		} else if st.Set("shared") {
			bad(key("shared"), "want a mapping {redis: URL, key: NAME, ...}, got null")
		}
		if st.Config != nil {
			pr := &problems{d: d, path: p, row: st}
			k.check(st.Config, pr)
			pr.nonNegative(st.Config)
		}
	}
	if len(d.Errors()) == 0 {
		for _, e := range checkGroups(s) {
			bad(e.Path, "%s", e.Message)
		}
	}
	s.validateLimits(d)
}

// validProvider reports whether p names a provider of the provider
// package, exactly as spelled there.
func validProvider(p string) bool { return slices.Contains(provider.Names(), p) }

func providerList() string { return strings.Join(provider.Names(), ", ") }
