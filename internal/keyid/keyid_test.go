package keyid

import "testing"

// TestFingerprint pins the format: a state file or a Redis key written by
// one release is read by the next.
func TestFingerprint(t *testing.T) {
	for key, want := range map[string]string{"sk-test": "f3abf2a6cc4f", "": "e3b0c44298fc"} {
		if got := Fingerprint(key); got != want {
			t.Errorf("Fingerprint(%q) = %q, want %q", key, got, want)
		}
	}
}
