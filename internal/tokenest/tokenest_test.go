package tokenest

import "testing"

// TestEstimate: four code points a token, rounded up; a part is at least 1.
func TestEstimate(t *testing.T) {
	for _, tt := range []struct {
		in         string
		text, part int
	}{
		{"", 0, 1},
		{"Hello", 2, 2},
		{"abcd", 1, 1},
		{"héllo wörld", 3, 3}, // 11 code points, 13 bytes
	} {
		if got := Text(tt.in); got != tt.text {
			t.Errorf("Text(%q) = %d, want %d", tt.in, got, tt.text)
		}
		if got := Bytes([]byte(tt.in)); got != tt.text {
			t.Errorf("Bytes(%q) = %d, want %d", tt.in, got, tt.text)
		}
		if got := Part(tt.in); got != tt.part {
			t.Errorf("Part(%q) = %d, want %d", tt.in, got, tt.part)
		}
	}
}
