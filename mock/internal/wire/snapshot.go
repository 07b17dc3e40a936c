package wire

import (
	"time"
)

// Limit names, as used in 429 messages, Stats.ThrottledBy and metrics.
const (
	LimitConcurrency = "max_concurrent"
	LimitRPM         = "rpm"
	LimitITPM        = "itpm"
	LimitOTPM        = "otpm"
	LimitTPM         = "tpm"
	LimitScript      = "script" // a 429 injected by Faults.Script
	// LimitDecodeBudget is a 429 for a request body that waited
	// BodyTimeout for its share of Config.DecodeBudget.
	LimitDecodeBudget = "decode_budget"
)

// Dimension is one rate-limit header group; limit 0 means absent.
type Dimension struct {
	Limit, Remaining int64
	Reset            time.Duration // until fully replenished
}

// Snapshot is the state the rate-limit headers report.
type Snapshot struct {
	Requests, Input, Output, Tokens Dimension
}

// Exhaust reports remaining 0 in the dimension of limit, if it has one.
func (s *Snapshot) Exhaust(limit string) {
	switch limit {
	case LimitRPM:
		s.Requests.Remaining = 0
	case LimitITPM:
		s.Input.Remaining = 0
	case LimitOTPM:
		s.Output.Remaining = 0
	case LimitTPM:
		s.Tokens.Remaining = 0
	}
}

// Merge reports pool's dimensions where it has them and k's elsewhere:
// the headers describe the limits that bind the request's model.
func (s Snapshot) Merge(pool Snapshot) Snapshot {
	pick := func(a, b Dimension) Dimension {
		if b.Limit > 0 {
			return b
		}
		return a
	}
	return Snapshot{
		Requests: pick(s.Requests, pool.Requests),
		Input:    pick(s.Input, pool.Input),
		Output:   pick(s.Output, pool.Output),
		Tokens:   pick(s.Tokens, pool.Tokens),
	}
}

// LimitQuota is the limit of a 429 refused by Config.Quota, as the call
// accounting's throttled_by names it. A spend cap is not a rate limit:
// Stats counts it in QuotaExceeded, never in Throttled.
const LimitQuota = "quota"
