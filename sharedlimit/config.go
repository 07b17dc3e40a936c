package sharedlimit

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/strategies"
)

// Config configures a Shared strategy. Every process sharing a limit must
// use the same Key, limits, bursts and LeaseTTL.
type Config struct {
	// URL is the Redis server, as redis://[user:password@]host:port/db
	// (see redis.ParseURL). New dials it and Close closes the client. Set
	// exactly one of URL and Client.
	URL string `json:"redis" yaml:"redis"`
	// Client is a Redis client the caller owns (Close leaves it open).
	Client redis.UniversalClient `json:"-" yaml:"-"`

	// Key names the shared limit: the processes calling a provider with
	// one API key use one Key (a team name, or strategies.Fingerprint of
	// the API key; never the key itself). It may not contain '{' or '}'.
	Key string `json:"key" yaml:"key"`

	// MaxConcurrent is the most calls in flight at once across all
	// processes. 0 means concurrency is not limited.
	MaxConcurrent int `json:"max_concurrent" yaml:"max_concurrent"`
	// RPM is the requests-per-minute budget of all processes together. 0
	// means requests are not paced.
	RPM float64 `json:"rpm" yaml:"rpm"`
	// TPM is the tokens-per-minute budget of all processes together; each
	// call reserves its Cost.Tokens() and is settled to its reported usage
	// when it ends, as with strategies.TokenFirst. 0 means tokens are not
	// budgeted.
	TPM float64 `json:"tpm" yaml:"tpm"`
	// RequestBurst is how many requests may start at once after an idle
	// spell. 0 means 1: requests start evenly spaced, 60/RPM seconds apart.
	RequestBurst int `json:"request_burst" yaml:"request_burst"`
	// TokenBurst is the most tokens calls may reserve at once after an idle
	// spell. 0 means a minute's worth (TPM). A call costing more is refused
	// with an error wrapping strategies.ErrExceedsBudget.
	TokenBurst int `json:"token_burst" yaml:"token_burst"`

	// LeaseTTL is how long a concurrency slot stays taken after its
	// process stops renewing it: the time a crashed process's slots take to
	// come back. Leases are renewed every LeaseTTL/3 while their calls run,
	// so a call may outlast it; set it above a call's p99 latency anyway, so
	// that a call's slot outlives Redis hiccups of that length. 0 means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration `json:"lease_ttl" yaml:"lease_ttl"`

	// Peers is the number of processes expected to share the limit. While
	// Redis is lost, each process admits max(1, MaxConcurrent/n) calls at
	// once and RPM/n and TPM/n, where n is the larger of Peers and the
	// processes last seen sharing the limit (1 when both are unknown).
	Peers int `json:"peers" yaml:"peers"`

	// OpTimeout bounds each Redis round trip; one that takes longer counts
	// as Redis lost. 0 means 2 s.
	OpTimeout time.Duration `json:"op_timeout" yaml:"op_timeout"`

	// Logger receives the warnings when Redis is lost and the notice when it
	// is back. nil means slog.Default().
	Logger *slog.Logger `json:"-" yaml:"-"`
	// Observer receives the strategy's events: EventRedisLost,
	// EventRedisRecovered, EventLeaseLost and strategies.EventGateClose.
	// It is called synchronously and must not block or call back into the
	// strategy.
	Observer strategies.Observer `json:"-" yaml:"-"`
}

// DefaultLeaseTTL is the lease TTL when Config.LeaseTTL is 0.
const DefaultLeaseTTL = 60 * time.Second

const defaultOpTimeout = 2 * time.Second

// The events Shared reports besides strategies.EventGateClose.
const (
	// EventRedisLost: a Redis operation failed; Value is the local share of
	// MaxConcurrent admitted from now on (0 when concurrency is not
	// limited) and Reason the error.
	EventRedisLost strategies.EventType = "redis_lost"
	// EventRedisRecovered: Redis answers again and the shared limits apply;
	// Value is MaxConcurrent.
	EventRedisRecovered strategies.EventType = "redis_recovered"
	// EventLeaseLost: a running call's lease had expired when it was
	// renewed (the process stalled, or Redis lost its data), and was taken
	// again; the shared count may have exceeded the limit meanwhile. Reason
	// is the lease; Value the seconds it went unrenewed (the stall). Also
	// reported, with Reason "LEASE: granted after it expired; …" and Value
	// the seconds the grant took, when a slot's grant reached this process
	// after a third of LeaseTTL and its lease had gone (its slot given to
	// another): that call is not started, and waits for another slot.
	EventLeaseLost strategies.EventType = "lease_lost"
)

// withDefaults validates c and returns it with its zero fields defaulted.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	switch {
	case c.URL == "" && c.Client == nil:
		errs = append(errs, errors.New("sharedlimit: no redis: set redis (a URL) or Client"))
	case c.URL != "" && c.Client != nil:
		errs = append(errs, errors.New("sharedlimit: both redis (a URL) and Client are set; set one"))
	}
	if c.Key == "" {
		errs = append(errs, errors.New("sharedlimit: key is empty; name the shared limit"))
	} else if strings.ContainsAny(c.Key, "{}") {
		errs = append(errs, fmt.Errorf("sharedlimit: key %q contains '{' or '}'", c.Key))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"max_concurrent", float64(c.MaxConcurrent)},
		{"rpm", c.RPM},
		{"tpm", c.TPM},
		{"request_burst", float64(c.RequestBurst)},
		{"token_burst", float64(c.TokenBurst)},
		{"lease_ttl", float64(c.LeaseTTL)},
		{"peers", float64(c.Peers)},
		{"op_timeout", float64(c.OpTimeout)},
	} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("sharedlimit: %s is %v; want 0 or more", f.name, f.v))
		}
	}
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	if c.MaxConcurrent == 0 && c.RPM == 0 && c.TPM == 0 {
		return c, errors.New("sharedlimit: nothing to limit; set max_concurrent, rpm or tpm")
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.LeaseTTL < 10*time.Millisecond {
		return c, fmt.Errorf("sharedlimit: lease_ttl is %v; want at least 10ms", c.LeaseTTL)
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = defaultOpTimeout
	}
	if c.RequestBurst == 0 {
		c.RequestBurst = 1
	}
	if c.TokenBurst == 0 && c.TPM > 0 {
		c.TokenBurst = int(math.Ceil(c.TPM))
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
