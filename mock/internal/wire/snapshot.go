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
	// LimitAcceleration is a 429 of the acceleration ramp (traffic that
	// grew too fast within its limits): OpenAI's formats answer it as
	// slow_down.
	LimitAcceleration = "acceleration"
	// LimitDecodeBudget is a 429 for a request body that waited
	// BodyTimeout for its share of Config.DecodeBudget.
	LimitDecodeBudget = "decode_budget"
)

// Dimension is one rate-limit header group; limit 0 means absent.
type Dimension struct {
	Limit, Remaining int64
	Reset            time.Duration // until fully replenished
}

// Snapshot is the state the rate-limit headers report: admission's
// snapshot of the buckets (mock/internal/admission), as the core hands it
// to a format.
type Snapshot struct {
	Requests, Input, Output, Tokens Dimension
}

// LimitQuota is the limit of a 429 refused by Config.Quota, as the call
// accounting's throttled_by names it. A spend cap is not a rate limit:
// Stats counts it in QuotaExceeded, never in Throttled.
const LimitQuota = "quota"
