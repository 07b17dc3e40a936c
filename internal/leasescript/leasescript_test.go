package leasescript

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The prelude's functions, called one at a time: each script runs one of
// them on a limit of 2 slots, on miniredis's clock, which the test moves.
var (
	grantScript = redis.NewScript(Prelude + `
local got = grant(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]))
if got then return got end
return 0
`)
	renewScript = redis.NewScript(Prelude + `return renew(KEYS[1], tonumber(ARGV[1]), 2)`)
	epochScript = redis.NewScript(Prelude + `
local e = epoch(KEYS[1], KEYS[2], tonumber(ARGV[1]), 60000, ARGV[2] == '1')
return {tonumber(e), redis.call('PTTL', KEYS[2])}
`)
)

func TestLease(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.SetTime(t0)
	const ttl = 10 * time.Second
	grant := func(lease string, ahead int) int64 {
		n, err := grantScript.Run(ctx, c, []string{"l"}, 2, ttl.Microseconds(), lease, ahead).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	steps := []struct {
		at    time.Duration
		lease string
		ahead int
		want  int64 // leases in use with it; 0 refused
	}{
		{0, "a", 0, 1},
		{0, "b", 1, 0}, // one holder served first: 1 + 1 is the limit
		{0, "b", 0, 2},
		{5 * time.Second, "c", 0, 0},  // both held
		{10 * time.Second, "c", 0, 1}, // a and b expired at 10 s: swept
	}
	for i, s := range steps {
		m.SetTime(t0.Add(s.at))
		if got := grant(s.lease, s.ahead); got != s.want {
			t.Errorf("step %d: grant(%s, ahead %d) at %v = %d, want %d", i, s.lease, s.ahead, s.at, got, s.want)
		}
	}
	// renew keeps c and adds back d, a running call whose lease had gone.
	m.SetTime(t0.Add(15 * time.Second))
	added, err := renewScript.Run(ctx, c, []string{"l"}, ttl.Microseconds(), "c", "d").Int64()
	if err != nil || added != 1 {
		t.Fatalf("renew(c, d) = %d, %v; want 1 added", added, err)
	}
	m.SetTime(t0.Add(24 * time.Second)) // c was due at 20 s; renewed to 25 s
	if got := grant("e", 0); got != 0 {
		t.Errorf("after renew: grant(e) = %d, want 0 (c and d held until 25 s)", got)
	}
	m.SetTime(t0.Add(25 * time.Second))
	if got := grant("e", 0); got != 1 {
		t.Errorf("at 25 s: grant(e) = %d, want 1", got)
	}
}

func TestEpoch(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	ctx := context.Background()
	m.SetTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	run := func(lost bool) []int64 {
		flag := 0
		if lost {
			flag = 1
		}
		r, err := epochScript.Run(ctx, c, []string{"e", "q"}, (3 * time.Second).Microseconds(), flag).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := run(false) // a new limit: created, not quieted
	if first[1] != -2 {
		t.Errorf("new limit: quiet PTTL %d, want -2 (no quiet)", first[1])
	}
	if again := run(true); again[0] != first[0] || again[1] != -2 {
		t.Errorf("known epoch: %v, want the same epoch %d and no quiet", again, first[0])
	}
	m.FlushAll()
	if lost := run(true); lost[1] != 3000 {
		t.Errorf("lost state: quiet PTTL %d ms, want 3000", lost[1])
	}

}
