package mock

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

func TestPoolFor(t *testing.T) {
	pools := map[string]Limits{"claude-*": {}, "claude-sonnet-*": {}, "gpt-4o*": {}, "gpt-4o-mini": {}}
	for model, want := range map[string]string{
		"claude-sonnet-4-5": "claude-sonnet-*",
		"claude-haiku-4-5":  "claude-*",
		"gpt-4o-mini":       "gpt-4o-mini",
		"gpt-4o":            "gpt-4o*",
		"gpt-5":             "",
	} {
		if got := poolFor(pools, model); got != want {
			t.Errorf("poolFor(%q) = %q, want %q", model, got, want)
		}
	}
}

// TestPooledAdmission replays requests of two models at named instants
// against a key allowed 3 requests a minute whose Sonnet pool allows 2: the
// pool refuses the third Sonnet request without charging the key, whose
// last request then goes to Haiku; the key refuses the next.
func TestPooledAdmission(t *testing.T) {
	key := Limits{RPM: 3}
	pools := map[string]Limits{"claude-sonnet-*": {RPM: 2}}
	k := newKeyLimiter()
	steps := []struct {
		at        time.Duration
		model     string
		wantLimit string
		byPool    bool
	}{
		{0, "claude-sonnet-4-5", "", false},
		{0, "claude-sonnet-4-0", "", false},
		{0, "claude-sonnet-4-5", wire.LimitRPM, true},
		{0, "claude-haiku-4-5", "", false},
		{0, "claude-haiku-4-5", wire.LimitRPM, false},
		{30 * time.Second, "claude-sonnet-4-5", "", false}, // both refilled: key 1.5, pool 1
		{30 * time.Second, "claude-sonnet-4-5", wire.LimitRPM, true},
	}
	for i, s := range steps {
		var pool *keyLimiter
		var pl Limits
		if name := poolFor(pools, s.model); name != "" {
			pool, pl = k.pool(name), pools[name]
		}
		v, byPool := k.admitPooled(at(s.at), key, pool, pl, uint64(i+1), demand{maxTokens: 1, end: at(s.at)})
		if v.ok != (s.wantLimit == "") || v.limit != s.wantLimit || byPool != s.byPool {
			t.Errorf("step %d (%s at %v): ok %v limit %q byPool %v, want limit %q byPool %v", i, s.model, s.at, v.ok, v.limit, byPool, s.wantLimit, s.byPool)
		}
	}
}

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
