// Package ssetext reads the text of an Anthropic Messages event stream as the
// stream-pacing benchmarks need it: how many characters of text, in how many
// text events, and when the last expected character arrived.
//
// It is shared by mock's in-process benchmark and bench/compare's
// cross-process one, so that both measure lateness the same way.
package ssetext

import (
	"bufio"
	"bytes"
	"io"
	"time"
)

// Read reads r to its end and returns the characters of text its
// text_delta events carried, the number of those events, and when the
// want-th character had arrived (zero if it never did). Read errors end
// the stream: the character count tells a short one.
func Read(r io.Reader, want int) (chars, events int, full time.Time) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadSlice('\n')
		if _, text, ok := bytes.Cut(line, []byte(`"text_delta","text":"`)); ok {
			if j := bytes.IndexByte(text, '"'); j >= 0 {
				chars += j
				events++
				if chars >= want && full.IsZero() {
					full = time.Now()
				}
			}
		}
		if err != nil {
			return chars, events, full
		}
	}
}
