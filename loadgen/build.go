package loadgen

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/strategies"
)

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

// kinds is the table of strategy kinds: a row's kind: picks one, and the
// row's other keys decode into its configuration struct (by its yaml tags,
// which are the kind's parameters), checked by its check function. Adding a
// kind is adding its configuration struct, checks and constructor here
// (configKind for a kind that is not a client strategy).
var kinds = map[string]kind{
	KindUnbounded: kindOf(func(*unboundedConfig, *problems) {}, func(_ unboundedConfig, opts ...strategies.Option) strategies.Strategy {
		return strategies.NewUnbounded(opts...)
	}),
	KindSemaphore:   kindOf(checkSemaphore, wrap(strategies.NewSemaphore)),
	KindPerProvider: kindOf(checkPerProvider, wrap(strategies.NewPerProvider)),
	KindTokenBucket: kindOf(checkTokenBucket, wrap(strategies.NewTokenBucket)),
	KindTokenFirst:  kindOf(checkTokenFirst, wrap(strategies.NewTokenFirst)),
	KindAIMDDelay:   kindOf(checkAIMDDelay, wrap(strategies.NewAIMDDelay)),
	KindAIMD:        kindOf(checkAIMD, wrap(strategies.NewAIMD)),
	KindAdaptive: kindOf(checkAdaptive, func(c adaptiveSettings, opts ...strategies.Option) strategies.Strategy {
		return strategies.NewAdaptive(c.AdaptiveConfig, opts...)
	}),
	KindCommand: runKind(checkCommandConfig, runCommand),
	// A row through the provider's batch API (batchapi_row.go).
	KindBatchAPI: runKind(checkBatchAPIConfig, runBatchAPIRow),
}

// unboundedConfig is the configuration of kind unbounded: nothing.
type unboundedConfig struct{}

// adaptiveSettings is the configuration of kind adaptive: the library's,
// and where the learned limit is kept between runs.
type adaptiveSettings struct {
	strategies.AdaptiveConfig `yaml:",inline"`
	// StateFile is where the learned limit is saved after a run and loaded
	// from before the next (keyed by provider, URL and a key fingerprint,
	// never the key).
	StateFile string `yaml:"state_file"`
}

// kind is one entry of kinds.
type kind struct {
	// params are the kind's parameters, in the configuration's field order.
	params []string
	// config returns a new zero configuration, a pointer to the struct.
	config func() any
	// check validates a decoded configuration, reporting through p.
	check func(cfg any, p *problems)
	// build makes the strategy; nil for a kind whose rows are not a client
	// strategy.
	build func(cfg any, opts []strategies.Option) strategies.Strategy
	// run runs a row of a kind that is not a client strategy, from its
	// decoded configuration (Row.Config); nil for a strategy kind, whose
	// rows the engine runs.
	run func(ctx context.Context, s *Scenario, st *Row, opt Options) (reports.Result, error)
}

// configKind makes a kind from its configuration type C, whose yaml tags
// are the kind's parameters, and its checks.
func configKind[C any](check func(*C, *problems)) kind {
	return kind{
		params: strict.Keys(strict.Fields(reflect.TypeFor[C]())),
		config: func() any { return new(C) },
		check:  func(cfg any, p *problems) { check(cfg.(*C), p) },
	}
}

// kindOf makes a strategy kind from its configuration type C, its checks
// and its constructor.
func kindOf[C any](check func(*C, *problems), build func(C, ...strategies.Option) strategies.Strategy) kind {
	k := configKind(check)
	k.build = func(cfg any, opts []strategies.Option) strategies.Strategy { return build(*cfg.(*C), opts...) }
	return k
}

// runKind makes a kind that is not a client strategy from its
// configuration type C, its checks and what runs its rows.
func runKind[C any](check func(*C, *problems), run func(context.Context, *Scenario, *Row, Options) (reports.Result, error)) kind {
	k := configKind(check)
	k.run = run
	return k
}

// wrap turns a constructor returning a concrete strategy into one returning
// the interface.
func wrap[C any, S strategies.Strategy](f func(C, ...strategies.Option) S) func(C, ...strategies.Option) strategies.Strategy {
	return func(c C, opts ...strategies.Option) strategies.Strategy { return f(c, opts...) }
}

// Kinds maps each strategy kind to the parameters it accepts, beyond the
// keys every row has (name, kind, max_retries, requeue, seed, shared,
// expect). It is derived from the kinds' configuration structs.
var Kinds = func() map[string][]string {
	out := make(map[string][]string, len(kinds))
	for name, k := range kinds {
		out[name] = k.params
	}
	return out
}()

// kindNames returns the kinds, sorted, for messages.
func kindNames() []string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// newStrategy builds the strategy a scenario row describes, reporting its
// state changes to obs (which may be nil), on the simulated clock sim (nil:
// real time).
func newStrategy(r *Row, obs strategies.Observer, sim clock.Clock) (strategies.Strategy, error) {
	k, ok := kinds[r.Kind]
	switch {
	case !ok || r.Config == nil:
		return nil, fmt.Errorf("loadgen: unknown strategy kind %q", r.Kind)
	case k.build == nil:
		return nil, fmt.Errorf("loadgen: kind %s is not a client strategy", r.Kind)
	}
	opts := []strategies.Option{strategies.WithClock(sim)}
	if obs != nil {
		opts = append(opts, strategies.WithObserver(obs))
	}
	return k.build(r.Config, opts), nil
}

// newPolicy returns the row's retry policy (it waits on the clock of the
// strategy it runs under).
func newPolicy(r *Row, scenarioSeed int64) *strategies.RetryPolicy {
	seed := r.Seed
	if seed == 0 {
		seed = scenarioSeed
	}
	return &strategies.RetryPolicy{MaxRetries: r.Retries(), Requeue: r.Requeue, Seed: seed}
}
