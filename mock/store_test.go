package mock

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/redistest"
)

// TestRedisStore replays leases at explicit instants on miniredis's clock.
func TestRedisStore(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	st := NewRedisStore(c, "test")
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	leases := map[string]string{}
	steps := []struct {
		at   time.Duration
		op   string // "acquire NAME" or "release NAME"
		key  string
		name string
		ok   bool
	}{
		{0, "acquire", "k", "a", true},
		{0, "acquire", "k", "b", true},
		{0, "acquire", "k", "c", false},    // limit 2
		{0, "acquire", "other", "d", true}, // keys are independent
		{time.Second, "release", "k", "a", true},
		{time.Second, "acquire", "k", "c", true},
		{time.Second, "acquire", "k", "e", false},
		{11 * time.Second, "acquire", "k", "e", true}, // b expired after its 10 s TTL
	}
	for i, s := range steps {
		m.SetTime(t0.Add(s.at))
		switch s.op {
		case "acquire":
			lease, ok, err := st.Acquire(s.key, 2, 10*time.Second)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if ok != s.ok {
				t.Errorf("step %d: acquire %s at t0+%v = %v, want %v", i, s.name, s.at, ok, s.ok)
			}
			leases[s.name] = lease
		case "release":
			st.Release(s.key, leases[s.name])
		}
	}
	for _, k := range m.Keys() {
		if want := "test:{"; len(k) < len(want) || k[:len(want)] != want {
			t.Errorf("key %q, want it under the prefix with a hash tag", k)
		}
	}
}

// TestReplicasShareLimit is issue 6's server-side acceptance test: two
// replicas sharing Redis with a limit of 20, and 40 calls sent at once
// across both: exactly 20 get through.
func TestReplicasShareLimit(t *testing.T) {
	c := redistest.Client(t)
	prefix := redistest.Name(t, "test-mock")
	redistest.DeleteAtEnd(t, c, prefix+":*")

	var replicas []*testServer
	for range 2 {
		cfg := DefaultConfig()
		cfg.Limits = Limits{MaxConcurrent: 20}
		cfg.Store = NewRedisStore(c, prefix)
		ts := startServer(t, cfg)
		t.Cleanup(func() {
			ts.tr.CloseIdleConnections()
			ts.Server.Close()
			ts.ln.Close()
			<-ts.done
		})
		replicas = append(replicas, ts)
	}
	// 200 tokens at 5 ms: each call holds its slot for a second, longer
	// than sending all 40 takes.
	rs := fanOut(t, 40, 0, func(i int) (reply, error) {
		return replicas[i%2].send("POST", "/v1/messages", anthropicBody(200, false, "hi"))
	})
	if got, want := countStatus(rs), (map[int]int{200: 20, 429: 20}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
	for i, ts := range replicas {
		if st := ts.Stats(); st.ThrottledBy[LimitConcurrency] != st.Throttled || st.Admitted+st.Throttled != 20 {
			t.Errorf("replica %d: stats %+v, want 20 attempts, every 429 by max_concurrent", i, st)
		}
	}
}

// memStore is a Store in memory that counts what it holds, or fails.
type memStore struct {
	mu       sync.Mutex
	held     map[string]bool
	acquired int
	err      error
}

func (m *memStore) Acquire(key string, limit int, ttl time.Duration) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return "", false, m.err
	}
	if len(m.held) >= limit {
		return "", false, nil
	}
	m.acquired++
	lease := key + "#" + strconv.Itoa(m.acquired)
	if m.held == nil {
		m.held = make(map[string]bool)
	}
	m.held[lease] = true
	return lease, true, nil
}

func (m *memStore) Release(key, lease string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held[lease] {
		panic("release of a lease not held: " + lease)
	}
	delete(m.held, lease)
}

// TestStoreLeases: every shared slot taken is given back, whether the
// request was answered or then refused by a local limit, and a store that
// cannot be reached makes the replica answer overloaded.
func TestStoreLeases(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		statuses map[int]int
	}{
		{"local rpm refuses after the shared slot", nil, map[int]int{200: 2, 429: 1}},
		{"store unreachable", errors.New("connection refused"), map[int]int{529: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &memStore{err: tt.err}
				cfg := DefaultConfig()
				cfg.Limits = Limits{MaxConcurrent: 5, RPM: 2}
				cfg.Store = st
				ts := startServer(t, cfg)
				defer ts.stop()
				var rs []reply
				for range 3 {
					rs = append(rs, ts.do(t, "POST", "/v1/messages", anthropicBody(10, false, "hi")))
				}
				if got := countStatus(rs); fmt.Sprint(got) != fmt.Sprint(tt.statuses) {
					t.Errorf("statuses = %v, want %v", got, tt.statuses)
				}
				st.mu.Lock()
				defer st.mu.Unlock()
				if len(st.held) != 0 {
					t.Errorf("leases still held after every response: %v", st.held)
				}
			})
		})
	}
}
