package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"time"

	"github.com/ratelab/ratelab/internal/tokenest"
)

// Cache TTLs: Anthropic's default and its "ttl": "1h"; OpenAI's, which
// its docs give as 5 to 10 minutes of inactivity.
const (
	cacheTTLShort = 5 * time.Minute
	CacheTTLLong  = time.Hour
)

// Prefix is a cacheable prefix of a request: its hash and its tokens.
type Prefix struct {
	Hash       uint64
	Tokens     int
	TTL        time.Duration
	breakpoint bool // Anthropic: a block here carries cache_control
}

// Prefixer builds a request's prefixes segment by segment, each hash
// chaining the one before it. The hashes live in this process only, so
// hash/maphash (AES-based, a seed per process) serves: byte-at-a-time
// FNV-1a over a request's 2.4 KB of tools was a tenth of its CPU.
type Prefixer struct {
	sum    uint64
	tokens int
	Out    []Prefix
}

var prefixSeed = maphash.MakeSeed()

// Add appends a segment of n tokens whose bytes are role and raw. With
// auto (OpenAI) every segment ends a candidate prefix; otherwise only one
// holding a cache_control block does.
func (p *Prefixer) Add(role string, raw []byte, n int, auto bool) {
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
		p.Out = append(p.Out, Prefix{Hash: p.sum, Tokens: p.tokens, TTL: cacheTTLShort})
		return
	}
	if ttl, ok := cacheControl(raw); ok {
		p.Out = append(p.Out, Prefix{Hash: p.sum, Tokens: p.tokens, TTL: ttl, breakpoint: true})
	}
}

// MinCachePrefix is the fewest input tokens for which an OpenAI request's
// prefixes are hashed at all; Cache.MinTokens may not be lower.
const MinCachePrefix = 128

// RequestPrefixes returns the cacheable prefixes of a request made of
// tools, a system prompt and messages, in that order, counting tokens as
// the decoders do (they have already checked every part).
func RequestPrefixes(tools, system json.RawMessage, msgs []Message, auto bool) []Prefix {
	var p Prefixer
	if len(tools) > 0 && string(tools) != "null" {
		p.Add("tools", tools, tokenest.Bytes(tools), auto)
	}
	if len(system) > 0 && string(system) != "null" {
		n, _ := ContentLen(system, -1)
		p.Add("system", system, MessageTokens(n), auto)
	}
	for i, m := range msgs {
		n := 0
		if len(m.Content) > 0 && string(m.Content) != "null" {
			n, _ = ContentLen(m.Content, i)
		}
		p.Add(m.Role, m.Content, MessageTokens(n), auto)
	}
	return p.Out
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
					d = CacheTTLLong
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

var CacheControlKey = []byte(`"cache_control"`)
