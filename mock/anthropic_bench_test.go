package mock

import (
	"testing"

	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// BenchmarkAnthropicWire is the cost of the Messages API's bytes alone: a
// 100-token answer's JSON body, and its stream's start, one delta per
// token and end, appended to a reused buffer as the server does. It
// isolates what the wire format adds from decoding, admission and the
// network, which dominate BenchmarkJSONThroughput.
func BenchmarkAnthropicWire(b *testing.B) {
	c := &wire.Call{Model: "claude-sonnet-4-5", Input: 12}
	r := &wire.Result{ID: "msg_010jOKHVLkJ1023Enmg49dvj", N: 100, Capped: true}
	var wr anthropic.Format
	buf := make([]byte, 0, 1<<15)
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, _ := wr.Body(buf[:0], c, r)
			b.SetBytes(int64(len(out)))
		}
	})
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := wr.StreamStart(buf[:0], c, r)
			for i := range r.N {
				out = wr.StreamDelta(out, c, r, i, i+1)
			}
			out = wr.StreamEnd(out, c, r)
			b.SetBytes(int64(len(out)))
		}
	})
}
