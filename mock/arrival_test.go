package mock

import (
	"testing"
	"time"
)

// TestArrivalMono checks the conversion of a kernel's receive time (wall
// clock) into a monotonic arrival: taken at the read, never from a clock
// that went backwards or a time older than maxArrivalAge.
func TestArrivalMono(t *testing.T) {
	read := time.Now()
	wall := read.UnixNano()
	for _, tc := range []struct {
		name   string
		kernel int64
		want   time.Duration // before read; -1: unknown
	}{
		{"no receive time", 0, -1},
		{"30 ms before the read", wall - int64(30*time.Millisecond), 30 * time.Millisecond},
		{"at the read", wall, 0},
		{"after the read (a clock stepped back)", wall + int64(time.Millisecond), -1},
		{"older than maxArrivalAge", wall - int64(maxArrivalAge) - 1, -1},
	} {
		got := arrivalMono(tc.kernel, read)
		if tc.want < 0 {
			if got != 0 {
				t.Errorf("%s: %d, want 0 (unknown)", tc.name, got)
			}
			continue
		}
		if at := monoBase.Add(time.Duration(got - 1)); read.Sub(at) != tc.want {
			t.Errorf("%s: arrival %v before the read, want %v", tc.name, read.Sub(at), tc.want)
		}
	}
}
