package reports

import (
	"fmt"

	"github.com/ratelab/ratelab/measure"
)

// Arrivals is how an open-loop row went (a scenario with arrival: items
// arriving over time at a rate, instead of all at the start): the offered
// rate, the goodput the strategy achieved and how long items queued.
type Arrivals struct {
	// Process is poisson or constant; RatePerSecond the mean arrival rate.
	Process       string  `json:"process"`
	RatePerSecond float64 `json:"rate_per_second"`
	// ArrivalSeconds is when the last item arrived, since the first.
	ArrivalSeconds float64 `json:"arrival_seconds"`
	// GoodputPerSecond is completed items per second of the row's wall time.
	GoodputPerSecond float64 `json:"goodput_per_second"`
	// QueueingDelay is, per item, the time from its arrival to the start
	// of its first attempt (waiting for a worker, a slot or a budget), s.
	QueueingDelay measure.Percentiles `json:"queueing_delay"`
}

// arrivalFacts describes a row's open-loop figures in one clause: "goodput
// 9.71/s of 20/s arriving; queueing delay p50 4.35s, p99 8.99s, max 9.01s".
func arrivalFacts(a Arrivals) string {
	q := a.QueueingDelay
	return fmt.Sprintf("goodput %s/s of %s/s arriving; queueing delay p50 %s, p99 %s, max %s",
		formatFixed(a.GoodputPerSecond, 2), formatRate(a.RatePerSecond),
		formatPercentile(q, q.P50), formatPercentile(q, q.P99), formatPercentile(q, q.Max))
}
