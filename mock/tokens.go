package mock

import (
	"strings"

	"github.com/ratelab/ratelab/internal/tokenest"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// EstimateTokens is the mock's token estimate of a text: one token per four
// characters (Unicode code points), rounded up, so "" is 0 tokens and
// "Hello" is 2.
//
// A request's input tokens are the sum, over the system prompt and every
// message, of max(1, EstimateTokens(text)), where text is the message's
// string content or the concatenation of its text blocks (non-text blocks
// count the length of their JSON); tools count EstimateTokens of their JSON.
// /v1/messages/count_tokens and usage.input_tokens use the same rule. The
// output text of n tokens is Filler(n), whose estimate is exactly n.
func EstimateTokens(text string) int {
	return tokenest.Text(text)
}

// Filler returns the deterministic output text of n tokens, the one every
// response of n tokens carries.
func Filler(n int) string {
	var b strings.Builder
	b.Grow(4 * n)
	appendFiller(&b, 0, n)
	return b.String()
}

// appendFiller writes tokens [from, to) of the filler text.
func appendFiller(b *strings.Builder, from, to int) {
	for i := from; i < to; i++ {
		b.WriteString(wire.FillerWords[wire.FillerIndex(i)])
	}
}
