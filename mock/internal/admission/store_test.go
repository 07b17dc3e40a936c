package admission

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// TestRedisStore replays leases at explicit instants on miniredis's clock:
// a replica's live leases are renewed by its heartbeat, and a crashed
// replica's come back StoreLeaseTTL after its last renewal.
func TestRedisStore(t *testing.T) {
	m := miniredis.RunT(t)
	newStore := func() *RedisStore {
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { c.Close() })
		st := NewRedisStore(c, "test")
		st.beat = 10 * time.Millisecond
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, b := newStore(), newStore()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	leases := map[string]string{}
	steps := []struct {
		at   time.Duration
		st   *RedisStore
		op   string // "acquire", "release" or "crash"
		key  string
		name string
		ok   bool
	}{
		{0, a, "acquire", "k", "a", true},
		// Keys are independent. (a takes this key's epoch before b runs:
		// a new key seen while another replica runs is quiet at first.)
		{0, a, "acquire", "other", "d", true},
		{0, b, "acquire", "k", "b", true},
		{0, a, "acquire", "k", "c", false}, // limit 2
		{time.Second, a, "release", "k", "a", true},
		{time.Second, a, "acquire", "k", "c", true},
		{time.Second, a, "acquire", "k", "e", false},
		{time.Second, b, "crash", "", "", true},
		{StoreLeaseTTL / 2, a, "acquire", "k", "e", false},
		// b renewed its lease last at t0+1s; c is renewed by a's heartbeat.
		{time.Second + StoreLeaseTTL - time.Millisecond, a, "acquire", "k", "e", false},
		{time.Second + StoreLeaseTTL, a, "acquire", "k", "e", true},
	}
	ctx := context.Background()
	for i, s := range steps {
		m.SetTime(t0.Add(s.at))
		if s.op != "crash" {
			time.Sleep(5 * a.beat) // let the heartbeats renew at this instant
		}
		switch s.op {
		case "acquire":
			lease, ok, err := s.st.Acquire(ctx, s.key, 2)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if ok != s.ok {
				t.Errorf("step %d: acquire %s at t0+%v = %v, want %v", i, s.name, s.at, ok, s.ok)
			}
			leases[s.name] = lease
		case "release":
			s.st.Release(s.key, leases[s.name])
		case "crash":
			s.st.Close()
		}
	}
	for _, k := range m.Keys() {
		if want := "test:{"; len(k) < len(want) || k[:len(want)] != want {
			t.Errorf("key %q, want it under the prefix with a hash tag", k)
		}
	}
}

// TestRedisStoreEpoch: when Redis loses its state, a replica that finds it
// lost re-asserts the leases of its running requests and grants no slot for
// StoreQuiet (miniredis's TTLs move only by FastForward), so that the other
// replicas re-assert theirs before any count is trusted.
func TestRedisStoreEpoch(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	st := NewRedisStore(c, "test")
	defer st.Close()
	ctx := context.Background()
	for range 2 {
		if _, ok, err := st.Acquire(ctx, "k", 3); !ok || err != nil {
			t.Fatalf("Acquire: %v, %v", ok, err)
		}
	}
	m.FlushAll()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, ok, err := st.Acquire(short, "k", 3); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire after FLUSHALL = %v, %v; want it to wait out the quiet time past its deadline", ok, err)
	}
	if n := len(m.Keys()); n == 0 {
		t.Fatal("nothing in Redis after FLUSHALL and a request")
	}
	inflight := st.key("k")
	if got, _ := m.ZMembers(inflight); len(got) != 2 {
		t.Errorf("leases after FLUSHALL = %v, want the 2 running requests re-asserted", got)
	}
	m.FastForward(StoreQuiet)
	if _, ok, err := st.Acquire(ctx, "k", 3); !ok || err != nil {
		t.Errorf("Acquire after the quiet time = %v, %v; want the third slot", ok, err)
	}
	if _, ok, err := st.Acquire(ctx, "k", 3); ok || err != nil {
		t.Errorf("Acquire of a fourth slot = %v, %v; want refused: the 2 re-asserted count", ok, err)
	}
}
