package gemini

import (
	"testing"
	"time"
)

// TestFormatProtoDuration: a retryDelay is google.protobuf.Duration's JSON
// form, whole seconds or up to nine fractional digits.
func TestFormatProtoDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{1501 * time.Millisecond: "1.501s", 2 * time.Second: "2s", 250 * time.Millisecond: "0.25s"} {
		if got := formatProtoDuration(d); got != want {
			t.Errorf("formatProtoDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
