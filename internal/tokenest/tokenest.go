// Package tokenest is the tree's one token estimate of a text: one token per
// four characters. The mock counts usage with it and the client budgets
// with it, so a token budget against the mock is exact.
package tokenest

import "unicode/utf8"

// Text returns the estimate of a text's tokens: one per four characters
// (Unicode code points), rounded up, so "" is 0 tokens and "Hello" is 2.
func Text(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}

// Bytes is Text of UTF-8 bytes (a request's raw JSON, say), without
// converting them to a string.
func Bytes(b []byte) int {
	return (utf8.RuneCount(b) + 3) / 4
}

// Part returns the estimate of one part of a request (the system prompt, a
// message): Text, but at least 1.
func Part(text string) int {
	return max(1, Text(text))
}
