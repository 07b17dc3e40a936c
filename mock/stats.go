package mock

import (
	"maps"

	"github.com/ratelab/ratelab/internal/keyid"
)

// Fingerprint returns the fingerprint that stands for an API key in
// metrics labels, Stats.Keys and logs: the first 12 hex digits of the key's
// SHA-256. It identifies a key without revealing it; internal/keyid writes
// it once for the server and the client side.
func Fingerprint(key string) string {
	return keyid.Fingerprint(key)
}

// Stats are the server's counters since it started or was last Reset.
type Stats struct {
	Attempts  int64 `json:"attempts"`  // model requests received (messages and chat completions)
	Admitted  int64 `json:"admitted"`  // requests that passed every limit and got a response
	Throttled int64 `json:"throttled"` // 429s
	// ThrottledBy counts 429s by limit: max_concurrent, rpm, itpm, otpm,
	// tpm, script, decode_budget.
	ThrottledBy map[string]int64 `json:"throttled_by,omitempty"`
	// QuotaExceeded counts 429s of a spent Config.Quota (a spend cap, not
	// a rate limit: Throttled does not count them); QuotaExceededBy by
	// dimension: requests, input_tokens, output_tokens.
	QuotaExceeded   int64            `json:"quota_exceeded"`
	QuotaExceededBy map[string]int64 `json:"quota_exceeded_by,omitempty"`
	// Overloaded counts 529s (Anthropic) and 503s (OpenAI): capacity,
	// injected and scripted.
	Overloaded int64 `json:"overloaded"`
	// Errors counts other error answers: 400, 404 (unknown model), 413,
	// injected 500s and scripted statuses other than 429, 503 and 529.
	Errors int64 `json:"errors"`
	// Faults counts injected faults by name: script, reset, error_500,
	// overloaded, slow, cut_stream, stream_error.
	Faults map[string]int64 `json:"faults,omitempty"`
	// EarlyRetries counts retries that arrived before the retry-after their
	// call's previous attempt was given (Calls.EarlyRetries).
	EarlyRetries int64 `json:"early_retries"`
	InFlight     int   `json:"in_flight"`
	MaxInFlight  int   `json:"max_in_flight"`
	InputTokens  int64 `json:"input_tokens"`  // of admitted requests
	OutputTokens int64 `json:"output_tokens"` // produced, settled at the end of each response
	// Keys holds the same counters per API key, by Fingerprint of the key
	// ("anonymous" in open mode): the keys themselves never leave the
	// server.
	Keys map[string]KeyStats `json:"keys,omitempty"`
	// Calls groups the attempts into logical calls (see CallStats).
	Calls CallStats `json:"calls"`
}

// KeyStats are the counters of one API key.
type KeyStats struct {
	Attempts    int64            `json:"attempts"`
	Admitted    int64            `json:"admitted"`
	Throttled   int64            `json:"throttled"`
	ThrottledBy map[string]int64 `json:"throttled_by,omitempty"`
	// QuotaExceeded and QuotaExceededBy as in Stats; QuotaUsed is what the
	// key has used toward Config.Quota.
	QuotaExceeded   int64            `json:"quota_exceeded"`
	QuotaExceededBy map[string]int64 `json:"quota_exceeded_by,omitempty"`
	QuotaUsed       QuotaUsed        `json:"quota_used"`
	Overloaded      int64            `json:"overloaded"`
	Errors          int64            `json:"errors"`
	EarlyRetries    int64            `json:"early_retries"`
	InFlight        int              `json:"in_flight"`
	MaxInFlight     int              `json:"max_in_flight"`
	InputTokens     int64            `json:"input_tokens"`
	OutputTokens    int64            `json:"output_tokens"`
}

// limitCapacity names the overloads refused for Config.Capacity in
// mockllm_rejections_total.
const limitCapacity = "capacity"

// counts are the request counters of one API key since the last Reset: the
// one place the server counts requests. Stats.Keys shows each key's, Stats
// sums them over the keys, and /metrics reads them at scrape time (with
// what earlier generations counted, folded into Server.past by Reset),
// so one request moves all three views by one. A new counter is a field
// here, summed in add and shown in keyStats, Stats or Collect.
type counts struct {
	attempts, admitted, throttled, overloaded, errors int64
	capacity                                          int64            // overloaded for Config.Capacity
	throttledBy                                       map[string]int64 // 429s by limit
	quotaExceeded                                     int64            // 429s of a spent Config.Quota, not in throttled
	quotaExceededBy                                   map[string]int64 // by dimension
	faults                                            map[string]int64 // injected faults by name
	inputTokens, outputTokens                         int64
	mergedEvents                                      int64 // stream events carrying late tokens together
	inFlight, maxInFlight                             int   // gauges: not summed by add
}

// add adds o's counters to c (not the in-flight gauges).
func (c *counts) add(o *counts) {
	c.attempts += o.attempts
	c.admitted += o.admitted
	c.throttled += o.throttled
	c.overloaded += o.overloaded
	c.errors += o.errors
	c.capacity += o.capacity
	c.inputTokens += o.inputTokens
	c.outputTokens += o.outputTokens
	c.mergedEvents += o.mergedEvents
	c.quotaExceeded += o.quotaExceeded
	addAll(&c.quotaExceededBy, o.quotaExceededBy)
	addAll(&c.throttledBy, o.throttledBy)
	addAll(&c.faults, o.faults)
}

func addAll(dst *map[string]int64, src map[string]int64) {
	for k, v := range src {
		if *dst == nil {
			*dst = make(map[string]int64, len(src))
		}
		(*dst)[k] += v
	}
}

func inc(m *map[string]int64, k string) {
	if *m == nil {
		*m = make(map[string]int64)
	}
	(*m)[k]++
}

// keyStats is the KeyStats view of c.
func (c *counts) keyStats() KeyStats {
	return KeyStats{
		Attempts:        c.attempts,
		Admitted:        c.admitted,
		Throttled:       c.throttled,
		ThrottledBy:     maps.Clone(c.throttledBy),
		QuotaExceeded:   c.quotaExceeded,
		QuotaExceededBy: maps.Clone(c.quotaExceededBy),
		Overloaded:      c.overloaded,
		Errors:          c.errors,
		InFlight:        c.inFlight,
		MaxInFlight:     c.maxInFlight,
		InputTokens:     c.inputTokens,
		OutputTokens:    c.outputTokens,
	}
}

// sumLocked is the counters of every key since the last Reset; with
// lifetime, plus what earlier generations counted. s.mu is held.
func (s *Server) sumLocked(lifetime bool) counts {
	var sum counts
	if lifetime {
		sum.add(&s.past)
	}
	for _, ks := range s.perKey {
		sum.add(&ks.counts)
	}
	return sum
}

// Stats returns a copy of the counters.
//
// Retry compliance comes from the call accounting (CallStats): a retry is an
// attempt that joins an earlier call of the same key and body (or
// Idempotency-Key), and it is early when it arrives before the retry-after
// the call's previous attempt was given.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := s.sumLocked(false)
	st := Stats{
		Attempts:        sum.attempts,
		Admitted:        sum.admitted,
		Throttled:       sum.throttled,
		ThrottledBy:     sum.throttledBy,
		Overloaded:      sum.overloaded,
		Errors:          sum.errors,
		Faults:          sum.faults,
		QuotaExceeded:   sum.quotaExceeded,
		QuotaExceededBy: sum.quotaExceededBy,
		InFlight:        s.inFlight,
		MaxInFlight:     s.maxInFlight,
		InputTokens:     sum.inputTokens,
		OutputTokens:    sum.outputTokens,
		Calls:           s.calls.snapshot(),
	}
	st.EarlyRetries = st.Calls.EarlyRetries
	st.Keys = make(map[string]KeyStats, len(s.perKey))
	for name, ks := range s.perKey {
		k := ks.counts.keyStats()
		k.QuotaUsed = ks.lim.Used()
		k.EarlyRetries = s.calls.earlyOf(name)
		st.Keys[s.keyLabel(name)] = k
	}
	return st
}
