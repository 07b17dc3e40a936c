package mock

import (
	"path"
	"slices"
	"time"
)

// Per-model pools: Anthropic applies its limits per model class ("Claude
// Sonnet 4.x" is one pool over Sonnet 4.6 and 4.5;
// https://docs.claude.com/en/api/rate-limits), and OpenAI per model.
// Config.LimitsByModel maps a model pattern to the limits of its pool; a
// request whose model matches a pattern passes that pool's limits (each
// API key has its own instance of each pool) as well as the key's Limits.

// poolFor returns the pattern of pools (LimitsByModel, Prices) that model
// falls in: the longest matching pattern, the first in lexical order among
// equals; "" for none.
func poolFor[V any](pools map[string]V, model string) string {
	best := ""
	for p := range pools {
		if ok, _ := path.Match(p, model); !ok {
			continue
		}
		if best == "" || len(p) > len(best) || len(p) == len(best) && p < best {
			best = p
		}
	}
	return best
}

// pool returns key limiter k's instance of the pool called pattern.
func (k *keyLimiter) pool(pattern string) *keyLimiter {
	if k.pools == nil {
		k.pools = make(map[string]*keyLimiter)
	}
	p, ok := k.pools[pattern]
	if !ok {
		p = newKeyLimiter()
		k.pools[pattern] = p
	}
	return p
}

// admitPooled is admit under the key's limits l and, when pool is not
// nil, the pool's limits pl: both must admit the request, and neither is
// charged unless both do.
func (k *keyLimiter) admitPooled(now time.Time, l Limits, pool *keyLimiter, pl Limits, id uint64, d demand) (verdict, bool) {
	if pool == nil {
		return k.admit(now, l, id, d), false
	}
	pool.sync(now, pl)
	if v := pool.check(now, pl, d); !v.ok {
		if pl.RetryAfter > 0 {
			v.retryAfter, v.wait = pl.RetryAfter, pl.RetryAfter
		}
		return v, true
	}
	v := k.admit(now, l, id, d)
	if v.ok {
		pool.admit(now, pl, id, d)
	}
	return v, false
}

// poolPatterns returns the patterns of pools, sorted, for validation
// messages in a stable order.
func poolPatterns[V any](pools map[string]V) []string {
	ps := make([]string, 0, len(pools))
	for p := range pools {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}
