package admission

import "time"

// Prompt caching, as the two providers document it (sources in
// docs/mockllm.md, "Prompt caching"):
//
//   - Anthropic: a block with "cache_control": {"type": "ephemeral"} marks a
//     breakpoint; the prefix up to it (tools, then system, then messages) is
//     written to the cache by the first request
//     (cache_creation_input_tokens) and read by later requests with the
//     same prefix within its TTL (cache_read_input_tokens), 5 minutes or,
//     with "ttl": "1h", an hour, refreshed by every read. input_tokens is
//     what follows the last breakpoint. Per its rate-limits page
//     cache reads do not count
//     toward ITPM for current models; writes do.
//   - OpenAI: automatic for prompts of at least 1,024 tokens; a repeated prefix is
//     reported as prompt_tokens_details.cached_tokens, in steps of 128
//     tokens from 1,024. Cached tokens still count toward TPM.
//
// The mock's prefixes end at whole segments: the tools, the system prompt,
// each message. A breakpoint inside a message caches that whole message.

// Prefix is one cacheable prefix of a request: the hash of its bytes, its
// tokens, and how long a write of it lives.
type Prefix struct {
	Hash   uint64
	Tokens int
	TTL    time.Duration
}

// promptCache is one key's cache: when each cached prefix can first be
// read and when it expires.
type promptCache struct {
	entries map[uint64]cacheEntry
	sweep   int // the size above which expired entries are swept
}

// cacheEntry is one cached prefix. It can be read from ready on: a write
// is available once its response has begun (Anthropic: "the cache entry
// only becomes available after the first response begins"), so requests
// sent together all write.
type cacheEntry struct {
	ready, until time.Time
}

// CacheUse is what a request reads from and writes to the cache.
type CacheUse struct {
	Read, Write int
	store       []Prefix // written on admission
}

// CacheLookup decides what a request of input tokens reads from and writes
// to k's cache at now, without changing it: CacheCommit does, once the
// request is admitted. It has n prefixes, prefix(i) the i-th. auto is
// OpenAI's automatic caching; otherwise Anthropic's breakpoints.
func (k *Key) CacheLookup(now time.Time, cfg Cache, input, n int, prefix func(int) Prefix, auto bool) CacheUse {
	pc := &k.cache
	var u CacheUse
	if cfg.Off || n == 0 {
		return u
	}
	least := cfg.minTokens()
	if auto && input < least {
		return u
	}
	for i := range n {
		p := prefix(i)
		if p.Tokens < least {
			continue
		}
		if e, ok := pc.entries[p.Hash]; ok && !now.Before(e.ready) && now.Before(e.until) {
			u.Read = p.Tokens
		}
		u.store = append(u.store, p)
	}
	if auto {
		if u.Read > 0 {
			u.Read = least + (u.Read-least)/128*128
		}
		return u
	}
	if n := len(u.store); n > 0 {
		u.Write = max(0, u.store[n-1].Tokens-u.Read)
	}
	return u
}

// CacheCommit stores u's prefixes at now, readable from ready (when the
// response's first token is due), and so refreshes the one read.
func (k *Key) CacheCommit(now, ready time.Time, u CacheUse) {
	pc := &k.cache
	if len(u.store) == 0 {
		return
	}
	if pc.entries == nil {
		pc.entries, pc.sweep = make(map[uint64]cacheEntry), 1024
	}
	for _, p := range u.store {
		e, ok := pc.entries[p.Hash]
		if !ok || !now.Before(e.until) {
			e = cacheEntry{ready: ready} // new, or expired: written again
		}
		e.until = later(e.until, ready.Add(p.TTL))
		pc.entries[p.Hash] = e
	}
	if len(pc.entries) > pc.sweep {
		for h, e := range pc.entries {
			if !now.Before(e.until) {
				delete(pc.entries, h)
			}
		}
		pc.sweep = max(1024, 2*len(pc.entries))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
