package mock

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
)

// Over HTTP the refusal is a 429 naming the rule, counted as throttled by
// acceleration.
func TestAccelerationOverHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits = Limits{RPM: 1000, Acceleration: Acceleration{Factor: 1.5, Floor: 2}}
		ts := startServer(t, cfg)
		defer ts.stop()
		var got []int
		var last reply
		for range 3 {
			last = ts.do(t, "POST", "/v1/messages", anthropicBody(5, false, "hi"))
			got = append(got, last.status)
		}
		if fmt.Sprint(got) != "[200 200 429]" || last.header.Get("Retry-After") != "60" ||
			!strings.Contains(string(last.body), "rate limit exceeded: acceleration: this API key's traffic grew too fast: 2 requests started in the last minute after 0 in the minute before, and it may start max(2, 1.5 × 0) = 2") {
			t.Errorf("statuses %v, retry-after %q, body %s", got, last.header.Get("Retry-After"), last.body)
		}
		if r := last.header.Get("Anthropic-Ratelimit-Requests-Remaining"); r != "998" {
			t.Errorf("requests-remaining = %q on an acceleration 429, want 998: the rule has no header of its own", r)
		}
		if st := ts.Stats(); st.ThrottledBy[LimitAcceleration] != 1 {
			t.Errorf("throttled_by = %v, want acceleration: 1", st.ThrottledBy)
		}
	})
}
