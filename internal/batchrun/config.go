package batchrun

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/provider"
)

// DefaultWorkers is Options.Workers when neither the flag nor the config
// sets it: the items in progress at once (admitted, waiting in the strategy
// or between attempts), not the concurrency the strategy allows.
const DefaultWorkers = 512

// DefaultStrategy is the strategy of a batch that names none: adaptive
// finds an unpublished limit and, through its state file, remembers it.
const DefaultStrategy = loadgen.KindAdaptive

// ErrUsage is what Run's configuration errors (flags, config, schema, key
// command) answer errors.Is for: the batch did not start.
var ErrUsage = errors.New("loadgen: batch: usage error")

// batchError is a batch's configuration error: its message, and the
// sentinel it stands for.
type batchError struct {
	msg  string
	kind error // ErrUsage or loadgen.ErrNoKey
}

func (e *batchError) Error() string        { return e.msg }
func (e *batchError) Is(target error) bool { return target == e.kind }

func usagef(format string, args ...any) error {
	return &batchError{msg: "batch: " + fmt.Sprintf(format, args...), kind: ErrUsage}
}

// scenarioOf is the batch's config file, or the defaults without one.
func scenarioOf(opt Options) (*loadgen.Scenario, error) {
	if opt.Config != nil {
		return opt.Config, nil
	}
	return loadgen.ParseBatchConfig("(flags)", []byte("{}"))
}

// chooseStrategy is the batch's strategy row (batchStrategy) with the
// --shared-* flags and --max-retries applied, named in rep.
func chooseStrategy(s *loadgen.Scenario, opt Options, rep *Report) (*loadgen.Row, error) {
	st, err := batchStrategy(s, opt)
	if err != nil {
		return nil, err
	}
	rep.Strategy, rep.Kind = st.Name, st.Kind
	if st, err = withSharedFlags(st, opt.Shared); err != nil {
		return nil, err
	}
	if st.Shared != nil {
		rep.Shared, rep.SharedRedis = st.Shared.Key, redact.URL(st.Shared.Redis)
	}
	if opt.MaxRetries != nil {
		st.MaxRetries = opt.MaxRetries
	}
	return st, nil
}

// batchStrategy chooses the batch's strategy: --strategy, else the
// config's only one (or the one --only names), else DefaultStrategy.
func batchStrategy(s *loadgen.Scenario, opt Options) (*loadgen.Row, error) {
	switch {
	case opt.Strategy != "":
		if opt.Only != "" {
			return nil, usagef("--strategy and --only: choose one")
		}
		return ParseStrategySpec(opt.Strategy)
	case opt.Only != "":
		i := slices.IndexFunc(s.Strategies, func(st loadgen.Row) bool { return st.Name == opt.Only })
		if i < 0 {
			return nil, usagef("--only: %v", s.CheckOnly([]string{opt.Only}))
		}
		return &s.Strategies[i], nil
	case len(s.Strategies) == 1:
		return &s.Strategies[0], nil
	case len(s.Strategies) > 1:
		names := make([]string, len(s.Strategies))
		for i, st := range s.Strategies {
			names[i] = strconv.Quote(st.Name)
		}
		return nil, usagef("%s has %d strategies (%s): choose one with --only NAME", s.File, len(names), strings.Join(names, ", "))
	}
	return ParseStrategySpec(DefaultStrategy)
}

// withSharedFlags returns st with the --shared-* flags applied over its
// shared: block (a copy when they change it), checked.
func withSharedFlags(st *loadgen.Row, f loadgen.Shared) (*loadgen.Row, error) {
	if f == (loadgen.Shared{}) {
		return st, nil
	}
	c := *st
	sh := loadgen.Shared{}
	if st.Shared != nil {
		sh = *st.Shared
	}
	if f.Redis != "" {
		sh.Redis = f.Redis
	}
	if f.Key != "" {
		sh.Key = f.Key
	}
	if f.LeaseTTL != 0 {
		sh.LeaseTTL = f.LeaseTTL
	}
	if f.Peers != 0 {
		sh.Peers = f.Peers
	}
	if f.OpTimeout != 0 {
		sh.OpTimeout = f.OpTimeout
	}
	c.Shared = &sh
	if probs := sh.Check(c.Kind); len(probs) > 0 {
		msgs := make([]string, len(probs))
		for i, p := range probs {
			flag := "--strategy"
			if p.Key != "" {
				flag = "--shared-" + strings.ReplaceAll(p.Key, "_", "-")
			}
			msgs[i] = flag + ": " + p.Msg
		}
		return nil, usagef("%s", strings.Join(msgs, "; "))
	}
	return &c, nil
}

// ParseStrategySpec parses a strategy given on the command line, "KIND" or
// "KIND:KEY=VALUE,…", into a scenario Row named after it, checked as a
// scenario's strategy is. Re-queueing (requeue: true) is the default, as a
// batch wants: a slot is not held while an item waits out a retry-after.
func ParseStrategySpec(spec string) (*loadgen.Row, error) {
	kind, params, _ := strings.Cut(spec, ":")
	var doc strings.Builder
	fmt.Fprintf(&doc, "strategies:\n  - name: %s\n    kind: %s\n", strconv.Quote(spec), strconv.Quote(strings.TrimSpace(kind)))
	requeue := false
	if params != "" {
		for kv := range strings.SplitSeq(params, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || strings.ContainsAny(k, ":#{}[]\"'\n") || strings.ContainsAny(v, "#{}[]\n") {
				return nil, usagef("--strategy %q: want KIND or KIND:KEY=VALUE,… (e.g. semaphore:n=20), got %q", spec, kv)
			}
			requeue = requeue || k == "requeue"
			fmt.Fprintf(&doc, "    %s: %s\n", k, v)
		}
	}
	if !requeue {
		doc.WriteString("    requeue: true\n")
	}
	s, err := loadgen.ParseBatchConfig("--strategy", []byte(doc.String()))
	if err != nil {
		var errs loadgen.Errors
		if errors.As(err, &errs) {
			msgs := make([]string, len(errs))
			for i, e := range errs {
				key := strings.TrimPrefix(strings.TrimPrefix(e.Path, "strategies[0]"), ".")
				if key == "" || key == "name" {
					key = "kind"
				}
				msgs[i] = key + ": " + e.Message
			}
			return nil, usagef("--strategy %q: %s", spec, strings.Join(msgs, "; "))
		}
		return nil, usagef("--strategy %q: %v", spec, err)
	}
	return &s.Strategies[0], nil
}

// providerStrategies parses --provider-strategy's NAME=SPEC values: the
// strategy of the lines naming provider NAME in their metadata (by default
// an instance of the batch's own). def is the batch's provider, which
// --strategy names.
func providerStrategies(specs map[string]string, def string) (map[string]*loadgen.Row, error) {
	rows := make(map[string]*loadgen.Row, len(specs))
	for name, spec := range specs {
		if _, err := provider.ByName(name); err != nil {
			return nil, usagef("--provider-strategy %s=%s: unknown provider %q (want %s)", name, spec, name, strings.Join(provider.Names(), ", "))
		}
		if name == def {
			return nil, usagef("--provider-strategy %s=%s: %s is the batch's provider, whose strategy is --strategy", name, spec, name)
		}
		st, err := ParseStrategySpec(spec)
		if err != nil {
			return nil, usagef("--provider-strategy %s=%s: %s", name, spec, strings.TrimPrefix(err.Error(), "batch: "))
		}
		rows[name] = st
	}
	return rows, nil
}

// batchTarget resolves a batch's provider, model and system-prompt cache
// from its flags (opt) over its config file (s), for both loadgen batch
// and --via batch-api: a flag wins, a model set in the file counts only
// for the file's provider, and otherwise the provider's default model.
func batchTarget(s *loadgen.Scenario, opt Options) (p provider.Provider, model, systemCache string, err error) {
	prov := s.Request.Provider
	if opt.Provider != "" {
		prov = opt.Provider
	}
	if p, err = provider.ByName(prov); err != nil {
		return nil, "", "", usagef("--provider: unknown provider %q (want %s)", prov, strings.Join(provider.Names(), " or "))
	}
	model = opt.Model
	if model == "" {
		if s.Given("request.model") && prov == s.Request.Provider {
			model = s.Request.Model
		} else {
			model = loadgen.ModelOf(p.Name())
		}
	}
	systemCache = opt.SystemCache
	if systemCache == "" {
		systemCache = s.Request.SystemCache
	}
	if msg := loadgen.SystemCacheTTLProblem(systemCache); msg != "" {
		return nil, "", "", usagef("--system-cache: %s", msg)
	}
	return p, model, systemCache, nil
}

// maxTokens is --max-tokens, else the config's request.max_tokens when it
// sets one (0: the lines' own or batch's default).
func maxTokens(s *loadgen.Scenario, opt Options) int {
	if opt.MaxTokens == 0 && s.Given("request.max_tokens") {
		return s.Request.MaxTokens
	}
	return opt.MaxTokens
}

// workers is --workers, else the config's workers, else DefaultWorkers.
func workers(s *loadgen.Scenario, opt Options) int {
	w := opt.Workers
	if w == 0 && s.Given("workers") {
		w = s.Workers
	}
	if w <= 0 {
		w = DefaultWorkers
	}
	return w
}
