package mock

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
)

// Over HTTP the headers describe the pool of the request's model.
func TestPoolsOverHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits = Limits{RPM: 100}
		cfg.LimitsByModel = map[string]Limits{"claude-sonnet-*": {RPM: 2, ITPM: 30000}}
		ts := startServer(t, cfg)
		defer ts.stop()
		body := func(model string) string {
			return strings.Replace(anthropicBody(5, false, "hi"), "claude-sonnet-4-5", model, 1)
		}
		var got []string
		for _, m := range []string{"claude-sonnet-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5", "claude-haiku-4-5"} {
			r := ts.do(t, "POST", "/v1/messages", body(m))
			got = append(got, fmt.Sprintf("%d %s/%s itpm %s", r.status,
				r.header.Get("Anthropic-Ratelimit-Requests-Remaining"), r.header.Get("Anthropic-Ratelimit-Requests-Limit"),
				r.header.Get("Anthropic-Ratelimit-Input-Tokens-Limit")))
		}
		want := "[200 1/2 itpm 30000 200 0/2 itpm 30000 429 0/2 itpm 30000 200 97/100 itpm ]"
		if fmt.Sprint(got) != want {
			t.Errorf("replies = %v\nwant      %s", got, want)
		}
	})
}
