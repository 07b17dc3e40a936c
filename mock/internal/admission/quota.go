package admission

import (
	"fmt"
	"path"
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

// QuotaLimit is how a refusal by dimension dim of q words the quota: "100
// requests", "$0.02".
func QuotaLimit(q Quota, dim string) string {
	switch dim {
	case QuotaRequests:
		return fmt.Sprintf("%d %s", q.Requests, dim)
	case QuotaInputTokens:
		return fmt.Sprintf("%d %s", q.InputTokens, dim)
	case QuotaOutputTokens:
		return fmt.Sprintf("%d %s", q.OutputTokens, dim)
	case QuotaUSD:
		return fmt.Sprintf("$%.2f", q.USD)
	}
	return ""
}

// Exhausted names the first dimension of q that k has used up, or "".
func (k *Key) Exhausted(q Quota) string { return q.exhausted(k.used) }

// AddUSD adds usd to what k has spent toward Quota.USD.
func (k *Key) AddUSD(usd float64) { k.used.usd += usd }

// Used is what k has used toward its Quota.
func (k *Key) Used() QuotaUsed { return k.used.public() }

// ValidateQuota checks q, reporting each invalid value at path.KEY.
func ValidateQuota(q Quota, path string, check func(bool, string, string, ...any)) {
	for _, f := range []struct {
		key string
		v   int64
	}{{QuotaRequests, q.Requests}, {QuotaInputTokens, q.InputTokens}, {QuotaOutputTokens, q.OutputTokens}} {
		check(f.v >= 0, path+"."+f.key, "must not be negative, got %d", f.v)
	}
	check(q.USD >= 0 && q.USD <= MaxUSD, path+".usd", "must be in [0, %g], got %g", MaxUSD, q.USD)
}

// InputUSD is what a request's input costs at p: its uncached input, the
// write tokens (long of them for an hour, as cacheWriteLong splits a write
// the way the usage reports it) at the write price of their TTL, and the
// read tokens.
func (p Price) InputUSD(input, read, write, long int) float64 {
	hour := p.CacheWrite1h
	if hour == 0 {
		hour = p.CacheWrite
	}
	return (float64(max(input-read-write, 0))*p.Input + float64(write-long)*p.CacheWrite + float64(long)*hour +
		float64(read)*p.CacheRead) / 1e6
}

// OutputUSD is what n output tokens cost at p.
func (p Price) OutputUSD(n int) float64 { return float64(n) * p.Output / 1e6 }

// PriceOf returns the price of model: its longest matching pattern's.
func PriceOf(prices map[string]Price, model string) Price {
	if name := PoolFor(prices, model); name != "" {
		return prices[name]
	}
	return Price{}
}

// ValidatePrices checks prices, and that q.USD has some.
func ValidatePrices(prices map[string]Price, q Quota, check func(bool, string, string, ...any)) {
	for _, pat := range PoolPatterns(prices) {
		_, err := path.Match(pat, "")
		p := "prices." + pat
		check(err == nil && pat != "", p, "want a model pattern such as claude-sonnet-4-*, got %q", pat)
		pr := prices[pat]
		for _, f := range []struct {
			key string
			v   float64
		}{{"input", pr.Input}, {"output", pr.Output}, {"cache_write", pr.CacheWrite}, {"cache_write_1h", pr.CacheWrite1h}, {"cache_read", pr.CacheRead}, {"batch_input", pr.BatchInput}, {"batch_output", pr.BatchOutput}} {
			check(f.v >= 0 && f.v <= MaxUSD, p+"."+f.key, "must be in [0, %g] USD per million tokens, got %g", MaxUSD, f.v)
		}
	}
	check(q.USD == 0 || len(prices) > 0, "quota.usd", "needs prices: with none every request costs $0 and the cap is never reached")
}

// QuotaUsed is what one API key has used toward its Quota.
type QuotaUsed struct {
	Requests     int64   `json:"requests"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"` // at Config.Prices
}

func (u quotaUsage) public() QuotaUsed {
	return QuotaUsed{Requests: u.requests, InputTokens: u.input, OutputTokens: u.output, USD: u.usd}
}
