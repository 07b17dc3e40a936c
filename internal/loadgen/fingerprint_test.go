package loadgen

import (
	"testing"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// The mock labels keys in metrics and stats with the same fingerprint the
// client side uses in Cost.Key and state files (issue 9: one format): what
// provider.Client puts in Cost.Key (so what Adaptive and PerProvider key
// their state by, and loadgen's state files hold), strategies.Fingerprint
// (what a library user writes in a StateKey) and mock.Fingerprint are one
// string for one key. The mock may not import client code, so this package,
// which imports both, holds them equal.
func TestFingerprintAgrees(t *testing.T) {
	for _, key := range []string{"sk-test", "sk-ant-api03-" + "x", DefaultAPIKey, ""} {
		c := &provider.Client{Provider: provider.Anthropic{}, APIKey: key}
		client := c.Cost(provider.Request{MaxTokens: 1}).Key
		if m, s := mock.Fingerprint(key), strategies.Fingerprint(key); m != s || client != s {
			t.Errorf("key %q: mock.Fingerprint = %q, strategies.Fingerprint = %q, provider Cost.Key = %q; want one string", key, m, s, client)
		}
	}
	if got, want := mock.Fingerprint("sk-test"), "f3abf2a6cc4f"; got != want {
		t.Errorf("mock.Fingerprint(sk-test) = %q, want %q", got, want)
	}
}
