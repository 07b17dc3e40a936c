package mock

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"time"
	"unicode/utf8"
)

// Prompt caching, as the two providers document it:
//
//   - Anthropic (https://docs.claude.com/en/docs/build-with-claude/prompt-caching):
//     a block with "cache_control": {"type": "ephemeral"} marks a
//     breakpoint; the prefix up to it (tools, then system, then messages) is
//     written to the cache by the first request
//     (cache_creation_input_tokens) and read by later requests with the
//     same prefix within its TTL (cache_read_input_tokens), 5 minutes or,
//     with "ttl": "1h", an hour, refreshed by every read. input_tokens is
//     what follows the last breakpoint. Per the rate-limits page
//     (https://docs.claude.com/en/api/rate-limits) cache reads do not count
//     toward ITPM for current models; writes do.
//   - OpenAI (https://platform.openai.com/docs/guides/prompt-caching):
//     automatic for prompts of at least 1,024 tokens; a repeated prefix is
//     reported as prompt_tokens_details.cached_tokens, in steps of 128
//     tokens from 1,024. Cached tokens still count toward TPM.
//
// The mock's prefixes end at whole segments: the tools, the system prompt,
// each message. A breakpoint inside a message caches that whole message.

// DefaultCacheMinTokens is Cache.MinTokens when it is 0: the shortest
// prefix cached, Anthropic's minimum for its Sonnet and Opus models and
// OpenAI's for automatic caching.
const DefaultCacheMinTokens = 1024

// Cache TTLs: Anthropic's default and its "ttl": "1h"; OpenAI's, which
// its docs give as 5 to 10 minutes of inactivity.
const (
	cacheTTLShort = 5 * time.Minute
	cacheTTLLong  = time.Hour
)

// Cache is the prompt cache model. The zero value caches as the providers
// do.
type Cache struct {
	// Off turns prompt caching off: every request pays for its whole
	// prompt and reports no cache tokens.
	Off bool `yaml:"off,omitempty"`
	// MinTokens is the shortest prefix that is cached; 0 means
	// DefaultCacheMinTokens (1,024). Anthropic's Haiku models need 2,048.
	MinTokens int `yaml:"min_tokens,omitempty"`
	// ReadsCountITPM makes cache reads count toward itpm, as they do for
	// the older Anthropic models its rate-limits page marks with †.
	ReadsCountITPM bool `yaml:"reads_count_itpm,omitempty"`
}

func (c Cache) minTokens() int {
	if c.MinTokens > 0 {
		return c.MinTokens
	}
	return DefaultCacheMinTokens
}

// prefix is a cacheable prefix of a request: its hash and its tokens.
type prefix struct {
	hash       uint64
	tokens     int
	ttl        time.Duration
	breakpoint bool // Anthropic: a block here carries cache_control
}

// prefixer builds a request's prefixes segment by segment, each hash
// chaining the one before it. The hashes live in this process only, so
// hash/maphash (AES-based, a seed per process) serves: byte-at-a-time
// FNV-1a over a request's 2.4 KB of tools was a tenth of its CPU.
type prefixer struct {
	sum    uint64
	tokens int
	out    []prefix
}

var prefixSeed = maphash.MakeSeed()

// add appends a segment of n tokens whose bytes are role and raw. With
// auto (OpenAI) every segment ends a candidate prefix; otherwise only one
// holding a cache_control block does.
func (p *prefixer) add(role string, raw []byte, n int, auto bool) {
	var h maphash.Hash
	h.SetSeed(prefixSeed)
	var prev [8]byte
	binary.LittleEndian.PutUint64(prev[:], p.sum)
	h.Write(prev[:])
	h.WriteString(role)
	h.WriteByte(0x1f) // between the role and the content
	h.Write(raw)
	p.sum = h.Sum64()
	p.tokens += n
	if auto {
		p.out = append(p.out, prefix{hash: p.sum, tokens: p.tokens, ttl: cacheTTLShort})
		return
	}
	if ttl, ok := cacheControl(raw); ok {
		p.out = append(p.out, prefix{hash: p.sum, tokens: p.tokens, ttl: ttl, breakpoint: true})
	}
}

// cachesAutomatically reports whether wr's API caches a repeated prefix by
// itself (OpenAI's Chat Completions and Responses APIs) rather than at
// cache_control breakpoints (Anthropic's).
func cachesAutomatically(wr wire) bool {
	switch unwrapAzure(wr).(type) {
	case openai, responses:
		return true
	}
	return false
}

// minCachePrefix is the fewest input tokens for which an OpenAI request's
// prefixes are hashed at all; Cache.MinTokens may not be lower.
const minCachePrefix = 128

// requestPrefixes returns the cacheable prefixes of a request made of
// tools, a system prompt and messages, in that order, counting tokens as
// the decoders do (they have already checked every part).
func requestPrefixes(tools, system json.RawMessage, msgs []message, auto bool) []prefix {
	var p prefixer
	if len(tools) > 0 && string(tools) != "null" {
		p.add("tools", tools, (utf8.RuneCount(tools)+3)/4, auto)
	}
	if len(system) > 0 && string(system) != "null" {
		n, _ := contentLen(system, -1)
		p.add("system", system, messageTokens(n), auto)
	}
	for i, m := range msgs {
		n := 0
		if len(m.Content) > 0 && string(m.Content) != "null" {
			n, _ = contentLen(m.Content, i)
		}
		p.add(m.Role, m.Content, messageTokens(n), auto)
	}
	return p.out
}

// cacheControl reports whether raw holds a cache_control block, and the
// longest TTL such a block asks for.
func cacheControl(raw []byte) (time.Duration, bool) {
	if !bytes.Contains(raw, []byte(`"cache_control"`)) {
		return 0, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0, false
	}
	ttl, found := time.Duration(0), false
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if cc, ok := v["cache_control"].(map[string]any); ok {
				found = true
				d := cacheTTLShort
				if cc["ttl"] == "1h" {
					d = cacheTTLLong
				}
				ttl = max(ttl, d)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return ttl, found
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

// cacheUse is what a request reads from and writes to the cache.
type cacheUse struct {
	read, write int
	store       []prefix // written on admission
}

// lookup decides what request c reads and writes at now, without changing
// the cache: commit does, once the request is admitted. auto is OpenAI's
// automatic caching; otherwise Anthropic's breakpoints.
func (pc *promptCache) lookup(now time.Time, cfg Cache, c *call, auto bool) cacheUse {
	var u cacheUse
	if cfg.Off || len(c.prefixes) == 0 {
		return u
	}
	least := cfg.minTokens()
	if auto && c.input < least {
		return u
	}
	for _, p := range c.prefixes {
		if p.tokens < least {
			continue
		}
		if e, ok := pc.entries[p.hash]; ok && !now.Before(e.ready) && now.Before(e.until) {
			u.read = p.tokens
		}
		u.store = append(u.store, p)
	}
	if auto {
		if u.read > 0 {
			u.read = least + (u.read-least)/128*128
		}
		return u
	}
	if n := len(u.store); n > 0 {
		u.write = max(0, u.store[n-1].tokens-u.read)
	}
	return u
}

// commit stores u's prefixes at now, readable from ready (when the
// response's first token is due), and so refreshes the one read.
func (pc *promptCache) commit(now, ready time.Time, u cacheUse) {
	if len(u.store) == 0 {
		return
	}
	if pc.entries == nil {
		pc.entries, pc.sweep = make(map[uint64]cacheEntry), 1024
	}
	for _, p := range u.store {
		e, ok := pc.entries[p.hash]
		if !ok || !now.Before(e.until) {
			e = cacheEntry{ready: ready} // new, or expired: written again
		}
		e.until = later(e.until, ready.Add(p.ttl))
		pc.entries[p.hash] = e
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

var cacheControlKey = []byte(`"cache_control"`)
