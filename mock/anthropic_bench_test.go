package mock

import "testing"

// BenchmarkAnthropicWire is the cost of the Messages API's bytes alone: a
// 100-token answer's JSON body, and its stream's start, one delta per
// token and end, appended to a reused buffer as the server does. It
// isolates what the wire format adds from decoding, admission and the
// network, which dominate BenchmarkJSONThroughput.
func BenchmarkAnthropicWire(b *testing.B) {
	c := &call{model: "claude-sonnet-4-5", input: 12}
	r := &result{id: "msg_010jOKHVLkJ1023Enmg49dvj", n: 100, capped: true}
	var wr anthropic
	buf := make([]byte, 0, 1<<15)
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, _ := wr.body(buf[:0], c, r)
			b.SetBytes(int64(len(out)))
		}
	})
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := wr.streamStart(buf[:0], c, r)
			for i := range r.n {
				out = wr.streamDelta(out, c, r, i, i+1)
			}
			out = wr.streamEnd(out, c, r)
			b.SetBytes(int64(len(out)))
		}
	})
}
