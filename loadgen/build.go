package loadgen

import (
	"fmt"

	"github.com/ratelab/ratelab/strategies"
)

// newStrategy builds the strategy a scenario row describes, reporting its
// state changes to obs (which may be nil).
func newStrategy(st *Strategy, obs strategies.Observer) (strategies.Strategy, error) {
	var opts []strategies.Option
	if obs != nil {
		opts = append(opts, strategies.WithObserver(obs))
	}
	switch st.Kind {
	case KindUnbounded:
		return strategies.NewUnbounded(opts...), nil
	case KindSemaphore:
		return strategies.NewSemaphore(strategies.SemaphoreConfig{Max: st.N}, opts...), nil
	case KindPerProvider:
		return strategies.NewPerProvider(strategies.PerProviderConfig{Limits: st.Limits, Default: st.Default}, opts...), nil
	case KindTokenBucket:
		return strategies.NewTokenBucket(strategies.TokenBucketConfig{
			RPM: float64(st.RPM), TPM: float64(st.TPM),
			RequestBurst: st.RequestBurst, TokenBurst: st.TokenBurst,
		}, opts...), nil
	case KindTokenFirst:
		return strategies.NewTokenFirst(strategies.TokenFirstConfig{
			TPM: float64(st.TPM), TokenBurst: st.TokenBurst, MaxConcurrent: st.N,
		}, opts...), nil
	case KindAIMDDelay:
		return strategies.NewAIMDDelay(strategies.AIMDDelayConfig{
			Initial: st.InitialDelay, Min: st.MinDelay, Max: st.MaxDelay,
			Successes: st.Successes, Decrease: st.Decrease, Increase: st.Increase, Cooldown: st.Cooldown,
		}, opts...), nil
	case KindAIMD:
		return strategies.NewAIMD(strategies.AIMDConfig{
			Initial: st.Initial, Min: st.Min, Max: st.Max, Increase: st.Increase, Decrease: st.Decrease,
		}, opts...), nil
	case KindAdaptive:
		return newAdaptive(st, opts)
	}
	return nil, fmt.Errorf("loadgen: unknown strategy kind %q", st.Kind)
}

// newPolicy returns the row's retry policy.
func newPolicy(st *Strategy, scenarioSeed int64) *strategies.RetryPolicy {
	seed := st.Seed
	if seed == 0 {
		seed = scenarioSeed
	}
	return &strategies.RetryPolicy{MaxRetries: st.Retries(), Requeue: st.Requeue, Seed: seed}
}
