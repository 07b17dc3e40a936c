package mock_test

import (
	"slices"
	"testing"

	"github.com/ratelab/ratelab/mock"
)

// BenchmarkCallAccounting measures what the call accounting (calls.go)
// costs: two mocks with the configuration of BenchmarkJSONThroughput, one
// with the accounting turned off, hammered over loopback in alternating
// rounds. ratio_on_vs_off is requests/s with the accounting over requests/s
// without; median_pair_ratio the median over adjacent pairs of rounds
// (target ≥ 0.95).
func BenchmarkCallAccounting(b *testing.B) {
	const (
		perRound = 250
		rounds   = 16
		cfg      = `
seed: 1
api_keys: [bench-key]
latency: {ttft: 0s, ttft_per_input_token: 0s, per_token: 0s}
limits: {max_concurrent: 100000, rpm: 1000000000, itpm: 1000000000, otpm: 1000000000, tpm: 1000000000, retry_after: 1s}
capacity: {max_concurrent: 100000}
`
	)
	tg := throughputTargets[0]
	b.ReportAllocs()
	onURL, onSrv, stopOn := startMockTCP(b, cfg)
	defer stopOn()
	offURL, offSrv, stopOff := startMockTCP(b, cfg)
	defer stopOff()
	mock.DisableCallAccounting(offSrv)
	onC, offC := newBenchClient(), newBenchClient()
	defer onC.CloseIdleConnections()
	defer offC.CloseIdleConnections()
	hammer(b, onC, onURL+tg.path, tg, perRound)
	hammer(b, offC, offURL+tg.path, tg, perRound)

	var on, off load
	var pairs []float64 // each adjacent pair of rounds' ratio
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			var a, o load
			if (i+r)%2 == 0 {
				a = hammer(b, onC, onURL+tg.path, tg, perRound)
				o = hammer(b, offC, offURL+tg.path, tg, perRound)
			} else {
				o = hammer(b, offC, offURL+tg.path, tg, perRound)
				a = hammer(b, onC, onURL+tg.path, tg, perRound)
			}
			on.add(a)
			off.add(o)
			pairs = append(pairs, o.took.Seconds()/a.took.Seconds())
		}
	}
	b.StopTimer()
	n := float64(b.N * rounds * perRound)
	onRate, offRate := n/on.took.Seconds(), n/off.took.Seconds()
	b.ReportMetric(onRate, "on_req/s")
	b.ReportMetric(offRate, "off_req/s")
	b.ReportMetric(onRate/offRate, "ratio_on_vs_off")
	// The median of the pairs' ratios resists the machine's bursts of
	// load better than the ratio of the sums.
	slices.Sort(pairs)
	b.ReportMetric(pairs[len(pairs)/2], "median_pair_ratio")
	if c := onSrv.Calls(); c.Completed == 0 {
		b.Fatalf("the accounting counted no call")
	}
	if c := offSrv.Calls(); c.Attempts != 0 {
		b.Fatalf("the disabled accounting counted %d attempts", c.Attempts)
	}
}
