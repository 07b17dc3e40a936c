package admission

import (
	"path"
	"slices"
	"time"
)

// Per-model pools: Anthropic applies its limits per model class ("Claude
// Sonnet 4.x" is one pool over Sonnet 4.6 and 4.5; docs/mockllm.md,
// limits_by_model), and OpenAI per model.
// Config.LimitsByModel maps a model pattern to the limits of its pool; a
// request whose model matches a pattern passes that pool's limits (each
// API key has its own instance of each pool) as well as the key's Limits.

// PoolFor returns the pattern of pools (LimitsByModel, Prices) that model
// falls in: the longest matching pattern, the first in lexical order among
// equals; "" for none.
func PoolFor[V any](pools map[string]V, model string) string {
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

// Pool returns k's instance of the pool called pattern.
func (k *Key) Pool(pattern string) *Key {
	if k.pools == nil {
		k.pools = make(map[string]*Key)
	}
	p, ok := k.pools[pattern]
	if !ok {
		p = NewKey()
		k.pools[pattern] = p
	}
	return p
}

// Level is a set of limits a request passes besides its key's own: a
// per-model pool, the organization, the long-context limits. K is the
// instance charged, L its limits, Scope who they belong to in a 429's
// message ("" words it as the API key's).
type Level struct {
	K     *Key
	L     Limits
	Scope string
}

// Admit decides whether request id with demand d may start at now under
// the key's limits l and those of every level: all must admit it, and none
// is charged unless all do. The levels are checked first, in order, then
// the key, whose refusal alone charges anything (Limits.CountRejected).
// by is the index of the level that refused, -1 when the key did or when
// the request is admitted. A level's K may be nil: it is skipped.
func (k *Key) Admit(now time.Time, l Limits, id uint64, d Demand, levels ...Level) (v Verdict, by int) {
	for i, lv := range levels {
		if lv.K == nil {
			continue
		}
		lv.K.Sync(now, lv.L)
		if v := lv.K.check(now, lv.L, Demand{Input: d.Input, MaxTokens: d.MaxTokens, End: d.End}); !v.OK {
			if lv.L.RetryAfter > 0 {
				v.RetryAfter, v.Wait = lv.L.RetryAfter, lv.L.RetryAfter
			}
			v.Scope = lv.Scope
			return v, i
		}
	}
	if v = k.admit(now, l, id, d); !v.OK {
		return v, -1
	}
	for _, lv := range levels {
		if lv.K != nil {
			lv.K.admit(now, lv.L, id, Demand{Input: d.Input, MaxTokens: d.MaxTokens, End: d.End})
		}
	}
	return v, -1
}

// PoolPatterns returns the patterns of pools, sorted, for validation
// messages in a stable order.
func PoolPatterns[V any](pools map[string]V) []string {
	ps := make([]string, 0, len(pools))
	for p := range pools {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}
