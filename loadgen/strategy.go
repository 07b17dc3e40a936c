package loadgen

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Strategy is one row of a scenario: a client strategy with its parameters,
// its retry policy and what its run is expected to show. Only the parameters
// of its Kind may be set (see Kinds).
type Strategy struct {
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

	// N is the concurrency limit (semaphore; token-first's max_concurrent).
	N int `yaml:"n"`
	// Limits is the concurrency limit per provider (per-provider), e.g.
	// {anthropic: 10, openai: 30}; Default is the limit of a provider not
	// listed (0: unlimited).
	Limits  map[string]int `yaml:"limits"`
	Default int            `yaml:"default"`
	// RPM and TPM are published per-minute budgets (token-bucket; token-first
	// uses TPM). RequestBurst and TokenBurst are how much may start at once
	// after an idle spell (defaults 1 request and a minute's tokens).
	RPM          int `yaml:"rpm"`
	TPM          int `yaml:"tpm"`
	RequestBurst int `yaml:"request_burst"`
	TokenBurst   int `yaml:"token_burst"`

	// InitialDelay, MinDelay and MaxDelay bound aimd-delay's delay between
	// dispatches (defaults 6s, 10ms, 60s); Successes consecutive successes
	// multiply it by Decrease (defaults 3 and 0.9); a throttle multiplies it
	// by Increase (default 1.8) and pauses dispatch for Cooldown (10s).
	InitialDelay time.Duration `yaml:"initial_delay"`
	MinDelay     time.Duration `yaml:"min_delay"`
	MaxDelay     time.Duration `yaml:"max_delay"`
	Successes    int           `yaml:"successes"`
	Cooldown     time.Duration `yaml:"cooldown"`

	// Initial, Min and Max bound the concurrency window of aimd and adaptive
	// (aimd defaults 4, 1, 1000). Increase is aimd's growth per round trip
	// while the window is full (default 1), or aimd-delay's factor on a
	// throttle; Decrease is the factor on a throttle (aimd, adaptive) or
	// after a run of successes (aimd-delay), default 0.9.
	Initial  int     `yaml:"initial"`
	Min      int     `yaml:"min"`
	Max      int     `yaml:"max"`
	Increase float64 `yaml:"increase"`
	Decrease float64 `yaml:"decrease"`
	// ProbeAfter is how many round trips adaptive holds at its learned
	// limit before trying one call above it (default 3).
	ProbeAfter float64 `yaml:"probe_after"`
	// StateFile is where adaptive saves its learned limit after a run and
	// loads it from before the next (keyed by provider, URL and a key
	// fingerprint, never the key).
	StateFile string `yaml:"state_file"`

	// Shared, when set, holds the strategy's limits in Redis, shared with
	// every process that names the same key (kinds in SharedKinds only).
	Shared *Shared `yaml:"shared"`

	// Expect lists what the run must show; loadgen run fails when any is not met.
	Expect Expect `yaml:"expect"`

	keys map[string]int // keys the file set → their lines
}

// Strategy kinds.
const (
	KindUnbounded   = "unbounded"
	KindSemaphore   = "semaphore"
	KindPerProvider = "per-provider"
	KindTokenBucket = "token-bucket"
	KindTokenFirst  = "token-first"
	KindAIMDDelay   = "aimd-delay"
	KindAIMD        = "aimd"
	KindAdaptive    = "adaptive"
)

// commonKeys may be set on a strategy of any kind.
var commonKeys = []string{"name", "kind", "max_retries", "requeue", "seed", "expect"}

// Kinds maps each strategy kind to the parameters it accepts, beyond the
// common name, kind, max_retries, requeue, seed and expect.
var Kinds = map[string][]string{
	KindUnbounded:   {},
	KindSemaphore:   {"n"},
	KindPerProvider: {"limits", "default"},
	KindTokenBucket: {"rpm", "tpm", "request_burst", "token_burst"},
	KindTokenFirst:  {"n", "tpm", "token_burst"},
	KindAIMDDelay:   {"initial_delay", "min_delay", "max_delay", "successes", "decrease", "increase", "cooldown"},
	KindAIMD:        {"initial", "min", "max", "increase", "decrease"},
	KindAdaptive:    {"initial", "min", "max", "decrease", "probe_after", "state_file"},
}

// kindNames returns the kinds, sorted, for messages.
func kindNames() []string {
	names := make([]string, 0, len(Kinds))
	for k := range Kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (s *Strategy) unmarshalNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "want a mapping with name, kind and parameters, got %s", describeNode(n))
		return
	}
	// Decode a copy through the plain struct path (Strategy's own
	// unmarshalNode would recurse), then keep which keys were set.
	type plain Strategy
	p := (*plain)(s)
	d.decodeStruct(n, reflectValue(p), path)
	s.keys = make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		s.keys[n.Content[i].Value] = n.Content[i].Line
	}
}

// Set reports whether the scenario file set key on s.
func (s *Strategy) Set(key string) bool {
	_, ok := s.keys[key]
	return ok
}

// Retries returns the strategy's max_retries after defaults.
func (s *Strategy) Retries() int {
	if s.MaxRetries == nil {
		return DefaultRetries
	}
	return *s.MaxRetries
}

// Params returns the parameters the file set, for reports.
func (s *Strategy) Params() map[string]any {
	p := map[string]any{"max_retries": s.Retries()}
	if s.Requeue {
		p["requeue"] = true
	}
	if s.Shared != nil {
		p["shared"] = s.Shared.Key
	}
	// The kind's parameters the file set, found by their yaml tags, so a
	// new parameter needs no second list here.
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		k, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if !slices.Contains(Kinds[s.Kind], k) || !s.Set(k) {
			continue
		}
		val := v.Field(i).Interface()
		if d, ok := val.(time.Duration); ok {
			val = d.String()
		}
		p[k] = val
	}
	return p
}

// validate checks the scenario's meaning once its syntax is known good.
func (s *Scenario) validate() Errors {
	var errs Errors
	bad := func(path, format string, args ...any) {
		errs = append(errs, &Error{File: s.File, Line: s.line(path), Key: path, Msg: fmt.Sprintf(format, args...)})
	}

	// Items and requests.
	if len(s.Items.Groups) == 0 && !s.batch {
		bad("items", "required: the number of items (e.g. items: 200) or item groups")
	}
	for i, g := range s.Items.Groups {
		p := "items"
		if len(s.Items.Groups) > 1 {
			p = fmt.Sprintf("items[%d]", i)
		}
		if g.Count <= 0 {
			bad(joinPath(p, "count"), "must be positive, got %d", g.Count)
		}
		if g.Provider != "" && !validProvider(g.Provider) {
			bad(joinPath(p, "provider"), "unknown provider %q (want anthropic or openai)", g.Provider)
		}
		if g.MaxTokens < 0 {
			bad(joinPath(p, "max_tokens"), "must not be negative, got %d", g.MaxTokens)
		}
		if g.PromptTokens < 0 {
			bad(joinPath(p, "prompt_tokens"), "must not be negative, got %d", g.PromptTokens)
		}
		if g.Prompt != "" && g.PromptTokens != 0 {
			bad(joinPath(p, "prompt_tokens"), "set prompt or prompt_tokens, not both")
		}
	}
	if _, ok := s.lines["server"]; ok && s.Target != nil && !s.batch {
		bad("server", "has no effect with target: (the run goes to target.url, not the embedded mock); remove one of them")
	}
	r := s.Request
	if !validProvider(r.Provider) {
		bad("request.provider", "unknown provider %q (want anthropic or openai)", r.Provider)
	}
	if r.MaxTokens < 0 {
		bad("request.max_tokens", "must not be negative, got %d", r.MaxTokens)
	}
	if r.PromptTokens < 0 {
		bad("request.prompt_tokens", "must not be negative, got %d", r.PromptTokens)
	}
	if _, set := s.lines["request.prompt"]; set && r.PromptTokens != 0 {
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
			bad("target.provider", "unknown provider %q (want anthropic or openai)", t.Provider)
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
	for _, e := range validateServer(&s.Server) {
		bad(joinPath("server", e.key), "%s", e.msg)
	}

	// Strategies.
	if len(s.Strategies) == 0 && !s.batch {
		bad("strategies", "required: at least one strategy (e.g. - {name: semaphore-20, kind: semaphore, n: 20})")
	}
	names := make(map[string]int)
	for i := range s.Strategies {
		st := &s.Strategies[i]
		p := fmt.Sprintf("strategies[%d]", i)
		key := func(k string) string { return p + "." + k }
		if st.Name == "" {
			bad(key("name"), "required")
		} else if prev, dup := names[st.Name]; dup {
			bad(key("name"), "duplicate strategy name %q (also strategies[%d])", st.Name, prev)
		} else {
			names[st.Name] = i
		}
		allowed, ok := Kinds[st.Kind]
		switch {
		case st.Kind == "":
			bad(key("kind"), "required: one of %s", strings.Join(kindNames(), ", "))
			continue
		case !ok:
			bad(key("kind"), "unknown kind %q (want one of %s)", st.Kind, strings.Join(kindNames(), ", "))
			continue
		}
		for k := range st.keys {
			if k == "shared" {
				continue // checked below, with the kinds that take it
			}
			if !slices.Contains(commonKeys, k) && !slices.Contains(allowed, k) {
				valid := "none"
				if len(allowed) > 0 {
					valid = strings.Join(allowed, ", ")
				}
				bad(key(k), "not a parameter of kind %s (its parameters: %s)", st.Kind, valid)
			}
		}
		if st.Shared != nil {
			for _, pr := range st.Shared.check(st.Kind) {
				bad(joinPath(key("shared"), pr.key), "%s", pr.msg)
			}
		} else if st.Set("shared") {
			bad(key("shared"), "want a mapping {redis: URL, key: NAME, ...}, got null")
		}
		if st.MaxRetries != nil && *st.MaxRetries < -1 {
			bad(key("max_retries"), "must be -1 (retry until success) or more, got %d", *st.MaxRetries)
		}
		for _, f := range []struct {
			k string
			v int
		}{{"n", st.N}, {"default", st.Default}, {"rpm", st.RPM}, {"tpm", st.TPM}, {"request_burst", st.RequestBurst},
			{"token_burst", st.TokenBurst}, {"successes", st.Successes}, {"initial", st.Initial}, {"min", st.Min}, {"max", st.Max}} {
			if f.v < 0 {
				bad(key(f.k), "must not be negative, got %d", f.v)
			}
		}
		for _, f := range []struct {
			k string
			v time.Duration
		}{{"initial_delay", st.InitialDelay}, {"min_delay", st.MinDelay}, {"max_delay", st.MaxDelay}, {"cooldown", st.Cooldown}} {
			if f.v < 0 {
				bad(key(f.k), "must not be negative, got %s", f.v)
			}
		}
		if st.Set("decrease") && (st.Decrease <= 0 || st.Decrease >= 1) {
			bad(key("decrease"), "must be between 0 and 1 exclusive, got %g", st.Decrease)
		}
		switch {
		case st.Kind == KindAIMDDelay && st.Set("increase") && st.Increase <= 1:
			bad(key("increase"), "must be greater than 1 (the delay's factor on a throttle), got %g", st.Increase)
		case st.Kind == KindAIMD && st.Set("increase") && st.Increase <= 0:
			bad(key("increase"), "must be positive, got %g", st.Increase)
		}
		if st.ProbeAfter < 0 {
			bad(key("probe_after"), "must not be negative, got %g", st.ProbeAfter)
		}
		if st.Min > 0 && st.Max > 0 && st.Min > st.Max {
			bad(key("min"), "min %d is above max %d", st.Min, st.Max)
		}
		if st.MinDelay > 0 && st.MaxDelay > 0 && st.MinDelay > st.MaxDelay {
			bad(key("min_delay"), "min_delay %s is above max_delay %s", st.MinDelay, st.MaxDelay)
		}
		switch st.Kind {
		case KindSemaphore:
			if st.N <= 0 {
				bad(key("n"), "required: the semaphore's size, a positive number")
			}
		case KindPerProvider:
			if len(st.Limits) == 0 {
				bad(key("limits"), "required: a limit per provider, e.g. {anthropic: 10, openai: 30}")
			}
			for prov, n := range st.Limits {
				if !validProvider(prov) {
					bad(key("limits."+prov), "unknown provider %q (want anthropic or openai)", prov)
				} else if n <= 0 {
					bad(key("limits."+prov), "must be positive, got %d", n)
				}
			}
		case KindTokenBucket:
			if st.RPM == 0 && st.TPM == 0 {
				bad(key("kind"), "token-bucket needs rpm or tpm")
			}
		case KindTokenFirst:
			if st.TPM == 0 {
				bad(key("tpm"), "required: the tokens-per-minute budget token-first reserves from")
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, checkGroups(s)...)
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return errs
}

func validProvider(p string) bool { return p == "anthropic" || p == "openai" }
