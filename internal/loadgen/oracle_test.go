package loadgen

import (
	"math"
	"strings"
	"testing"
)

// TestOracleHandComputed holds the oracle to ideals computed by hand, one
// limit shape a case.
func TestOracleHandComputed(t *testing.T) {
	const row = "strategies: [{name: s, kind: semaphore, n: 5}]\n"
	cases := []struct {
		name, yaml string
		want       float64
		why        string
	}{
		{"fixed cap", "items: 200\nrequest: {max_tokens: 100}\nserver: {limits: {max_concurrent: 20}}\n",
			5.0, "10 waves of 20 calls of 0.5 s"},
		{"cap falls and rises", "items: 600\nrequest: {max_tokens: 100}\nserver:\n  limits: {max_concurrent: 20}\n  schedule:\n    - {at: 5s, limits: {max_concurrent: 10}}\n    - {at: 15s, limits: {max_concurrent: 20}}\n",
			20.0, "200 calls in 0-5 s at 20, 200 in 5-15 s at 10, the last 200 in 5 s at 20"},
		{"cap drops 30 to 8", "items: 600\nrequest: {max_tokens: 40}\nserver:\n  limits: {max_concurrent: 30}\n  schedule: [{at: 2s, limits: {max_concurrent: 8}}]\n",
			9.6, "300 calls of 0.2 s by 2 s, then 38 waves of 8 (7.6 s)"},
		{"cap rises 5 to 20", "items: 100\nrequest: {max_tokens: 100}\nserver:\n  limits: {max_concurrent: 5}\n  schedule: [{at: 1s, limits: {max_concurrent: 20}}]\n",
			3.5, "2 waves of 5 by 1 s, then 90 calls in 5 waves of 20"},
		{"rpm with a burst of 1 s", "items: 10\nrequest: {max_tokens: 20}\nserver: {limits: {rpm: 60, burst: 1s}}\n",
			9.1, "one call a second from 0, the last (at 9 s) takes 0.1 s"},
		{"otpm", "items: 10\nrequest: {max_tokens: 300}\nserver: {limits: {otpm: 600}}\n",
			241.5, "2 calls of 300 tokens from the full bucket, 8 more 30 s apart, 1.5 s each"},
		{"a model pool goes first", "items:\n  - {count: 10, model: claude-haiku-4-5}\n  - {count: 10, model: claude-sonnet-4-5}\nrequest: {max_tokens: 100}\nserver:\n  limits: {max_concurrent: 10}\n  limits_by_model: {\"claude-sonnet-*\": {max_concurrent: 2}}\n",
			2.5, "5 waves of 2 sonnet calls; the 10 haiku calls fit beside them"},
		{"capacity over all keys", "items: 20\nrequest: {max_tokens: 100}\nserver: {capacity: {max_concurrent: 5}}\n",
			2.0, "4 waves of 5"},
		{"arrivals", "items: 50\narrival: {rate: 10/s, process: constant}\nrequest: {max_tokens: 100}\nserver: {limits: {max_concurrent: 20}}\n",
			5.4, "the last item arrives at 4.9 s and starts at once (5 in flight at most)"},
		{"a model pool's rpm", "items: 10\nrequest: {model: claude-sonnet-4-5, max_tokens: 20}\nserver:\n  limits: {max_concurrent: 10}\n  limits_by_model: {\"claude-sonnet-*\": {rpm: 60, burst: 1s}}\n",
			9.1, "the pool admits one call a second (a burst of 1 s at 60 rpm): the last starts at 9 s and takes 0.1 s"},
		{"organization cap over two keys", "items:\n  - {count: 20, api_key: a}\n  - {count: 20, api_key: b, model: claude-sonnet-4-5}\nrequest: {max_tokens: 100}\nserver:\n  api_keys: [a, b]\n  limits: {max_concurrent: 10}\n  organization: {limits: {max_concurrent: 8}}\n",
			2.5, "40 calls of 0.5 s, 8 at once over both keys: 5 waves (the keys' caps alone: 2 waves, 1.0 s)"},
		{"organization rpm over two keys", "items:\n  - {count: 5, api_key: a}\n  - {count: 5, api_key: b, model: claude-sonnet-4-5}\nrequest: {max_tokens: 20}\nserver:\n  api_keys: [a, b]\n  organization: {limits: {rpm: 60, burst: 1s}}\n",
			9.1, "one call a second over both keys: the tenth starts at 9 s and takes 0.1 s"},
		{"long context passes the key's cap, not its buckets", "items: 10\nrequest: {max_tokens: 100, prompt_tokens: 1000}\nserver:\n  limits: {max_concurrent: 4, rpm: 60, burst: 1s}\n  long_context: {threshold_tokens: 500, limits: {max_concurrent: 2}}\n",
			2.5, "every call is long (1,000 > 500 input tokens): 2 at once under the long-context cap, 5 waves of 0.5 s; the key's rpm (one a second: 9.5 s) does not charge them"},
		{"long context under the key's cap", "items: 10\nrequest: {max_tokens: 100, prompt_tokens: 1000}\nserver:\n  limits: {max_concurrent: 2}\n  long_context: {threshold_tokens: 500, limits: {max_concurrent: 5}}\n",
			2.5, "the key's max_concurrent still applies to long calls: 2 at once, 5 waves of 0.5 s (the long-context cap alone: 1.0 s)"},
		{"long context skips the organization", "items:\n  - {count: 8, prompt_tokens: 1000}\n  - {count: 8}\nrequest: {max_tokens: 100}\nserver:\n  limits: {max_concurrent: 10}\n  organization: {limits: {max_concurrent: 2}}\n  long_context: {threshold_tokens: 500, limits: {max_concurrent: 4}}\n",
			2.0, "the 8 short calls, 2 at once under the organization's cap: 4 waves, 2.0 s; beside them the 8 long ones, 4 at once: 1.0 s (had they counted against the organization: 16 at 2, 4.0 s)"},
		{"azure deployments", "items:\n  - {count: 12, model: dep-a}\n  - {count: 10, model: plain}\nrequest: {provider: azure-openai, max_tokens: 100}\nserver:\n  limits: {max_concurrent: 10}\n  limits_by_model: {gpt-4o-mini: {max_concurrent: 2}}\n  azure:\n    deployments:\n      dep-a: {model: gpt-4o-mini, limits: {max_concurrent: 3}}\n      plain: {model: gpt-4o-mini}\n",
			2.5, "dep-a's own cap of 3 replaces the model's pool: 12 calls in 4 waves, 2.0 s; plain has no limits, so gpt-4o-mini's pool of 2 binds it: 10 calls in 5 waves, 2.5 s; 3 + 2 fit the key's 10"},
		{"acceleration", "items: 600\nrequest: {max_tokens: 40}\nserver: {limits: {max_concurrent: 20, acceleration: {factor: 2, floor: 300}}}\n",
			63.0, "the floor's 300 start in seconds 0-2 (100 a second at 20 in flight of 0.2 s); second 60 may start 300 less seconds 1-2's 200, second 61 max(300, 2 × 200) less 200, second 62 2 × 300 less 200: 100 each, the last ending at 63.0 s"},
		{"acceleration with its floor alone", "items: 10\nrequest: {max_tokens: 20}\nserver: {limits: {acceleration: {factor: 1, floor: 4}}}\n",
			120.1, "4 start at 0 and fill their minute; at second 60 they are the minute before's and allow max(4, 1 × 4) = 4 more; the last 2 start at second 120 and take 0.1 s"},
		{"no limit", "items: 50\nrequest: {max_tokens: 100}\n", 0, "nothing bounds the run"},
		{"oracle.limit and call_time", "items: 25\noracle: {limit: 10, call_time: 1s}\nrequest: {max_tokens: 100}\nserver: {limits: {max_concurrent: 50}}\n",
			3.0, "the file's limit, not the mock's: 3 waves of 1 s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse("t.yaml", []byte("name: t\n"+c.yaml+row))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.OracleSeconds(); math.Abs(got-c.want) > 1e-6 {
				t.Errorf("OracleSeconds() = %.9f, want %g: %s", got, c.want, c.why)
			}
			if got := s.OracleAssumptions(); (len(got) > 0) != (c.want > 0) {
				t.Errorf("OracleAssumptions() = %q with an oracle of %g", got, c.want)
			}
		})
	}
}

// TestOracleTargetAssumptions checks that a target's oracle says it knows
// only the file's figures.
func TestOracleTargetAssumptions(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nitems: 25\ntarget: {url: 'http://127.0.0.1:1'}\noracle: {limit: 10, call_time: 1s}\nstrategies: [{name: s, kind: semaphore, n: 5}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.OracleSeconds(); got != 3 {
		t.Errorf("OracleSeconds() = %g, want 3 (3 waves of 10 calls of 1 s)", got)
	}
	if a := s.OracleAssumptions(); len(a) != 1 || !strings.Contains(a[0], "oracle.limit") {
		t.Errorf("OracleAssumptions() = %q, want the file's oracle named", a)
	}
}
