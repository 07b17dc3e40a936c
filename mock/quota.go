package mock

import (
	"fmt"
	"path"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// quotaUsage is what one key has used toward its Quota.
type quotaUsage struct {
	requests, input, output int64
	usd                     float64
}

// exhausted names the first dimension of q that u has used up, or "".
func (q Quota) exhausted(u quotaUsage) string {
	switch {
	case q.Requests > 0 && u.requests >= q.Requests:
		return QuotaRequests
	case q.InputTokens > 0 && u.input >= q.InputTokens:
		return QuotaInputTokens
	case q.OutputTokens > 0 && u.output >= q.OutputTokens:
		return QuotaOutputTokens
	case q.USD > 0 && u.usd >= q.USD:
		return QuotaUSD
	}
	return ""
}

// quotaMessage is the error message of a request refused by dimension dim
// of q, in the words of the API of wr.
func quotaMessage(wr wire.Format, q Quota, dim string) string {
	var limit string
	switch dim {
	case QuotaRequests:
		limit = fmt.Sprintf("%d %s", q.Requests, dim)
	case QuotaInputTokens:
		limit = fmt.Sprintf("%d %s", q.InputTokens, dim)
	case QuotaOutputTokens:
		limit = fmt.Sprintf("%d %s", q.OutputTokens, dim)
	case QuotaUSD:
		limit = fmt.Sprintf("$%.2f", q.USD)
	}
	return wr.Spec().QuotaMessage(limit, dim)
}

func validateQuota(q Quota, path string, check func(bool, string, string, ...any)) {
	for _, f := range []struct {
		key string
		v   int64
	}{{QuotaRequests, q.Requests}, {QuotaInputTokens, q.InputTokens}, {QuotaOutputTokens, q.OutputTokens}} {
		check(f.v >= 0, path+"."+f.key, "must not be negative, got %d", f.v)
	}
	check(q.USD >= 0 && q.USD <= maxUSD, path+".usd", "must be in [0, %g], got %g", maxUSD, q.USD)
}

// inputUSD is what a request's input costs at p: its uncached input, the
// write tokens (long of them for an hour, as cacheWriteLong splits a write
// the way the usage reports it) at the write price of their TTL, and the
// read tokens.
func (p Price) inputUSD(input, read, write, long int) float64 {
	hour := p.CacheWrite1h
	if hour == 0 {
		hour = p.CacheWrite
	}
	return (float64(max(input-read-write, 0))*p.Input + float64(write-long)*p.CacheWrite + float64(long)*hour +
		float64(read)*p.CacheRead) / 1e6
}

// outputUSD is what n output tokens cost at p.
func (p Price) outputUSD(n int) float64 { return float64(n) * p.Output / 1e6 }

// priceOf returns the price of model: its longest matching pattern's.
func priceOf(prices map[string]Price, model string) Price {
	if name := poolFor(prices, model); name != "" {
		return prices[name]
	}
	return Price{}
}

func validatePrices(prices map[string]Price, q Quota, check func(bool, string, string, ...any)) {
	for _, pat := range poolPatterns(prices) {
		_, err := path.Match(pat, "")
		p := "prices." + pat
		check(err == nil && pat != "", p, "want a model pattern such as claude-sonnet-4-*, got %q", pat)
		pr := prices[pat]
		for _, f := range []struct {
			key string
			v   float64
		}{{"input", pr.Input}, {"output", pr.Output}, {"cache_write", pr.CacheWrite}, {"cache_write_1h", pr.CacheWrite1h}, {"cache_read", pr.CacheRead}, {"batch_input", pr.BatchInput}, {"batch_output", pr.BatchOutput}} {
			check(f.v >= 0 && f.v <= maxUSD, p+"."+f.key, "must be in [0, %g] USD per million tokens, got %g", maxUSD, f.v)
		}
	}
	check(q.USD == 0 || len(prices) > 0, "quota.usd", "needs prices: with none every request costs $0 and the cap is never reached")
}

// Quota returns the per-key quota in force.
func (s *Server) Quota() Quota {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quota
}

// SetQuota replaces the per-key quota at runtime. What each key has used
// so far is kept: raising a spent quota lets its key through again.
func (s *Server) SetQuota(q Quota) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quota = q
}

// QuotaUsed is what one API key has used toward Config.Quota.
type QuotaUsed struct {
	Requests     int64   `json:"requests"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"` // at Config.Prices
}

func (u quotaUsage) public() QuotaUsed {
	return QuotaUsed{Requests: u.requests, InputTokens: u.input, OutputTokens: u.output, USD: u.usd}
}
