package loadgen

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/sharedlimit"
	"github.com/ratelab/ratelab/strategies"
)

// Shared is a strategy's shared: block: the strategy's limits are held in
// one Redis server and shared by every process that names the same Key (see
// package sharedlimit), instead of being this process's alone.
//
//	shared: {redis: "redis://127.0.0.1:6379/0", key: team-a, lease_ttl: 60s, peers: 4, op_timeout: 2s}
type Shared struct {
	// Redis is the server, redis://[user:password@]host:port/db or
	// rediss://… (TLS). Required.
	Redis string `yaml:"redis"`
	// Key names the shared limit: every process calling the provider with
	// one API key uses the same Key (a team name; never the API key).
	// Required; no '{' or '}'.
	Key string `yaml:"key"`
	// LeaseTTL is how long a concurrency slot of a crashed process stays
	// taken (sharedlimit.Config.LeaseTTL; default 60s).
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// Peers is the number of processes sharing the limit: while Redis is
	// lost, each admits 1/Peers of it (sharedlimit.Config.Peers).
	Peers int `yaml:"peers"`
	// OpTimeout bounds each Redis round trip (default 2s).
	OpTimeout time.Duration `yaml:"op_timeout"`
}

// SharedKinds are the strategy kinds whose limits a shared: block can hold
// in Redis. semaphore shares n as the concurrency limit; token-first shares
// n, tpm and token_burst; token-bucket shares rpm, tpm, request_burst and
// token_burst; adaptive shares the limit it learns (sharedlimit.Fleet: each
// process holds its share of one fleet limit, and one at a time probes above
// it; lease_ttl does not apply). The others have no limit to share
// (unbounded, the AIMD family) or one per provider (per-provider).
var SharedKinds = []string{KindSemaphore, KindTokenBucket, KindTokenFirst, KindAdaptive}

// SharedProblem is one problem with a shared: block: the key under shared
// ("" for the block as a whole) and the message.
type SharedProblem struct{ Key, Msg string }

// Check validates sh for a strategy of kind, returning its problems.
func (sh *Shared) Check(kind string) []SharedProblem {
	var out []SharedProblem
	bad := func(key, format string, args ...any) {
		out = append(out, SharedProblem{key, fmt.Sprintf(format, args...)})
	}
	if !slices.Contains(SharedKinds, kind) {
		bad("", "kind %s cannot share its limits through Redis (kinds that can: %s)", kind, strings.Join(SharedKinds, ", "))
		return out
	}
	switch {
	case sh.Redis == "":
		bad("redis", `required: the Redis server's URL (e.g. "redis://127.0.0.1:6379/0")`)
	default:
		if _, err := redis.ParseURL(sh.Redis); err != nil {
			bad("redis", "want redis://[user:password@]host:port/db or rediss://…, got %q: %v", redact.URL(sh.Redis), strings.TrimPrefix(err.Error(), "redis: "))
		}
	}
	switch {
	case sh.Key == "":
		bad("key", "required: the shared limit's name, the same in every process (e.g. team-a)")
	case strings.ContainsAny(sh.Key, "{}"):
		bad("key", "must not contain '{' or '}', got %q", sh.Key)
	}
	if sh.LeaseTTL != 0 && sh.LeaseTTL < 10*time.Millisecond {
		bad("lease_ttl", "must be at least 10ms (or 0 for 60s), got %s", sh.LeaseTTL)
	}
	if sh.Peers < 0 {
		bad("peers", "must not be negative, got %d", sh.Peers)
	}
	if sh.OpTimeout < 0 {
		bad("op_timeout", "must not be negative, got %s", sh.OpTimeout)
	}
	return out
}

// sharedConfig turns st's limits and its shared: block into a
// sharedlimit.Config.
func sharedConfig(st *Row) sharedlimit.Config {
	sh := st.Shared
	cfg := sharedlimit.Config{
		URL: sh.Redis, Key: sh.Key, LeaseTTL: sh.LeaseTTL, Peers: sh.Peers, OpTimeout: sh.OpTimeout,
	}
	switch c := st.Config.(type) {
	case *strategies.SemaphoreConfig:
		cfg.MaxConcurrent = c.Max
	case *strategies.TokenFirstConfig:
		cfg.MaxConcurrent, cfg.TPM, cfg.TokenBurst = c.MaxConcurrent, c.TPM, c.TokenBurst
	case *strategies.TokenBucketConfig:
		cfg.RPM, cfg.TPM = c.RPM, c.TPM
		cfg.RequestBurst, cfg.TokenBurst = c.RequestBurst, c.TokenBurst
	}
	return cfg
}

// openStrategy builds the strategy a scenario row describes, as newStrategy
// does, or, when the row has a shared: block, connects to its Redis and
// returns a sharedlimit strategy; its errors name the shared key and the
// Redis address (the caller names the strategy). close releases what the strategy holds
// (the Redis connection); call it once the run is over. An unreachable
// Redis is an error wrapping sharedlimit.ErrUnreachable.
func openStrategy(ctx context.Context, st *Row, obs strategies.Observer, sim clock.Clock) (s strategies.Strategy, close func(), err error) {
	if st.Shared == nil {
		s, err = newStrategy(st, obs, sim)
		return s, func() {}, err
	}
	if st.Kind == KindAdaptive {
		return openFleet(ctx, st, obs)
	}
	cfg := sharedConfig(st)
	cfg.Observer = obs
	sh, err := sharedlimit.New(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("shared limit %q at %s: %w", cfg.Key, redact.URL(cfg.URL), err)
	}
	return sh, func() { sh.Close() }, nil
}

// openFleet builds an adaptive strategy whose learned limit is shared, through
// the Redis of st's shared: block, with every process naming the same key.
func openFleet(ctx context.Context, st *Row, obs strategies.Observer) (strategies.Strategy, func(), error) {
	sh := st.Shared
	f, err := sharedlimit.NewFleet(ctx, sharedlimit.FleetConfig{URL: sh.Redis, Key: sh.Key, OpTimeout: sh.OpTimeout})
	if err != nil {
		return nil, nil, fmt.Errorf("shared limit %q at %s: %w", sh.Key, redact.URL(sh.Redis), err)
	}
	var opts []strategies.Option
	if obs != nil {
		opts = append(opts, strategies.WithObserver(obs))
	}
	return strategies.NewAdaptive(adaptiveConfig(st, f), opts...), func() { f.Close() }, nil
}
