package loadgen

import (
	"testing"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/strategies"
)

// The mock labels keys in metrics and stats with the same fingerprint the
// client side uses in Cost.Key and state files (issue 9: one format). The
// mock may not import strategies, so this package, which imports both,
// holds them equal.
func TestFingerprintAgrees(t *testing.T) {
	for _, key := range []string{"sk-test", "sk-ant-api03-" + "x", DefaultAPIKey, ""} {
		if m, s := mock.Fingerprint(key), strategies.Fingerprint(key); m != s {
			t.Errorf("key %q: mock.Fingerprint = %q, strategies.Fingerprint = %q", key, m, s)
		}
	}
	if got, want := mock.Fingerprint("sk-test"), "f3abf2a6cc4f"; got != want {
		t.Errorf("mock.Fingerprint(sk-test) = %q, want %q", got, want)
	}
}
