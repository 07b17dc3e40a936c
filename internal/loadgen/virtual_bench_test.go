package loadgen

import (
	"testing"
)

// BenchmarkVirtualCalls measures loadgen run --virtual per call:
// testdata/million.yaml cut to b.N calls (at least 1,000).
func BenchmarkVirtualCalls(b *testing.B) {
	s, err := Load("testdata/million.yaml")
	if err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 1000)
	s.Items.Groups[0].Count = n
	s.Strategies[0].Expect = Expect{}
	b.ReportAllocs()
	b.ResetTimer()
	rep, err := Run(b.Context(), s, Options{Virtual: true})
	if err != nil {
		b.Fatal(err)
	}
	if r := rep.Results[0]; r.Completed != n {
		b.Fatalf("completed %d of %d", r.Completed, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/call")
}
