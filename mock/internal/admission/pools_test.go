package admission

import (
	"testing"
	"time"
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
		if got := PoolFor(pools, model); got != want {
			t.Errorf("PoolFor(%q) = %q, want %q", model, got, want)
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
	k := NewKey()
	steps := []struct {
		at        time.Duration
		model     string
		wantLimit string
		byPool    bool
	}{
		{0, "claude-sonnet-4-5", "", false},
		{0, "claude-sonnet-4-0", "", false},
		{0, "claude-sonnet-4-5", LimitRPM, true},
		{0, "claude-haiku-4-5", "", false},
		{0, "claude-haiku-4-5", LimitRPM, false},
		{30 * time.Second, "claude-sonnet-4-5", "", false}, // both refilled: key 1.5, pool 1
		{30 * time.Second, "claude-sonnet-4-5", LimitRPM, true},
	}
	for i, s := range steps {
		var pool *Key
		var pl Limits
		if name := PoolFor(pools, s.model); name != "" {
			pool, pl = k.Pool(name), pools[name]
		}
		v, by := k.Admit(at(s.at), key, uint64(i+1), Demand{MaxTokens: 1, End: at(s.at)}, Level{K: pool, L: pl})
		byPool := by == 0
		if v.OK != (s.wantLimit == "") || v.Limit != s.wantLimit || byPool != s.byPool {
			t.Errorf("step %d (%s at %v): ok %v limit %q byPool %v, want limit %q byPool %v", i, s.model, s.at, v.OK, v.Limit, byPool, s.wantLimit, s.byPool)
		}
	}
}
