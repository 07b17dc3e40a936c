package sharedlimit

import (
	"context"
	"testing"

	"github.com/ratelab/ratelab/strategies"
)

// BenchmarkAcquireDone measures one call's overhead on the real server: an
// Acquire and a Done, each one script, with every limit on and room to
// spare, so nothing waits.
func BenchmarkAcquireDone(b *testing.B) {
	c := realClient(b)
	s := newShared(b, c, Config{Key: testKey(b, c), MaxConcurrent: 1000, RPM: 1e9, TPM: 1e12})
	ctx := context.Background()
	cost := strategies.Cost{InputTokens: 100, MaxTokens: 100}
	done := strategies.Outcome{Kind: strategies.Success, Usage: strategies.Usage{InputTokens: 100, OutputTokens: 50}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := s.Acquire(ctx, cost)
			if err != nil {
				b.Error(err)
				return
			}
			p.Done(done)
		}
	})
}
