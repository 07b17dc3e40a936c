package mock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/redistest"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

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
		st := NewRedisStore(c, prefix)
		// What is tested is the shared count, not a stalled Redis: a
		// loaded CI machine stalled round trips past the 1 s default,
		// which answers 529 (fail closed), so allow far longer.
		st.SetTimeout(30 * time.Second)
		cfg.Store = st
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
		if st := ts.Stats(); st.ThrottledBy[wire.LimitConcurrency] != st.Throttled || st.Admitted+st.Throttled != 20 {
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

func (m *memStore) Acquire(_ context.Context, key string, limit int) (string, bool, error) {
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

// slowStore is a Store whose Acquire for the key "slow" blocks until its
// context ends, as a Redis that stopped answering would.
type slowStore struct{ memStore }

func (s *slowStore) Acquire(ctx context.Context, key string, limit int) (string, bool, error) {
	if key == "slow" {
		<-ctx.Done()
		return "", false, ctx.Err()
	}
	return s.memStore.Acquire(ctx, key, limit)
}

// TestStoreOutsideLock is issue 9's item 4: the Server calls its Store
// without its lock and with the request's context, so a store that hangs
// for one key delays that key's requests only, until they give up.
func TestStoreOutsideLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.APIKeys = []string{"slow", "fast"}
		cfg.Limits = Limits{MaxConcurrent: 5}
		cfg.Store = &slowStore{}
		ts := startServer(t, cfg)
		defer ts.stop()
		ctx, cancel := context.WithCancel(t.Context())
		slow := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://mock/v1/messages", strings.NewReader(anthropicBody(10, false, "hi")))
			setHeaders(req, []string{"x-api-key", "slow"})
			resp, err := ts.client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			slow <- err
		}()
		synctest.Wait() // the slow request waits in the store
		r := ts.do(t, "POST", "/v1/messages", anthropicBody(10, false, "hi"), "x-api-key", "fast")
		if r.status != http.StatusOK {
			t.Errorf("another key's request while the store hangs: status %d, want 200", r.status)
		}
		select {
		case err := <-slow:
			t.Fatalf("the slow key's request ended (%v) before it gave up", err)
		default:
		}
		cancel()
		if err := <-slow; !errors.Is(err, context.Canceled) {
			t.Errorf("the slow key's request: %v, want it canceled", err)
		}
	})
}

// countingStore counts the slots its replicas hold between Acquire and
// Release, across replicas, and keeps the peak.
type countingStore struct {
	Store
	held, peak *atomic.Int64
}

func (c countingStore) Acquire(ctx context.Context, key string, limit int) (string, bool, error) {
	lease, ok, err := c.Store.Acquire(ctx, key, limit)
	if ok {
		n := c.held.Add(1)
		for m := c.peak.Load(); n > m && !c.peak.CompareAndSwap(m, n); m = c.peak.Load() {
		}
	}
	return lease, ok, err
}

func (c countingStore) Release(key, lease string) {
	c.held.Add(-1) // the request is over: count it out before Redis does
	c.Store.Release(key, lease)
}

// TestReplicasStateLoss is issue 10's item 1 for the mock: two replicas
// sharing a limit of 6 through a private redis-server, kept busy by 12
// clients, while Redis loses its state: FLUSHALL, a restart without
// persistence, kill -9 and a restart a second later. The slots held across
// both replicas never exceed the limit, and both answer 200s again after.
func TestReplicasStateLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a redis-server for seconds")
	}
	for _, tt := range []struct {
		name string
		lose func(r *redistest.Server, c *redis.Client)
	}{
		{"flushall", func(_ *redistest.Server, c *redis.Client) { c.FlushAll(context.Background()) }},
		{"restart", func(r *redistest.Server, _ *redis.Client) { r.Restart(syscall.SIGTERM, 0) }},
		{"kill -9", func(r *redistest.Server, _ *redis.Client) { r.Restart(syscall.SIGKILL, time.Second) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			newClient := func() *redis.Client {
				c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
				t.Cleanup(func() { c.Close() })
				return c
			}
			probe := newClient()
			const limit = 6
			var held, peak atomic.Int64
			var replicas []*testServer
			for range 2 {
				cfg := DefaultConfig()
				cfg.Limits = Limits{MaxConcurrent: limit}
				cfg.Latency.PerToken = time.Millisecond
				st := NewRedisStore(newClient(), "test")
				t.Cleanup(func() { st.Close() })
				cfg.Store = countingStore{Store: st, held: &held, peak: &peak}
				cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
				ts := startServer(t, cfg)
				t.Cleanup(func() {
					ts.tr.CloseIdleConnections()
					ts.Server.Close()
					ts.ln.Close()
					<-ts.done
				})
				replicas = append(replicas, ts)
			}
			var (
				statuses sync.Map // phase → status → *atomic.Int64
				phase    atomic.Int64
				stop     = make(chan struct{})
				wg       sync.WaitGroup
			)
			count := func(status int) {
				k := fmt.Sprint(phase.Load(), "/", status)
				v, _ := statuses.LoadOrStore(k, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
			for i := range 12 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						// 10 to 40 tokens at 1 ms each.
						r, err := replicas[i%2].send("POST", "/v1/messages", anthropicBody(10+3*i, false, "hi"))
						if err != nil {
							t.Errorf("send: %v", err)
							return
						}
						count(r.status)
						if r.status != http.StatusOK {
							time.Sleep(5 * time.Millisecond)
						}
					}
				})
			}
			// A new key is quiet at first while other replicas run (its
			// epoch's absence may be a lost state): wait for the first 200.
			for peak.Load() == 0 {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(time.Second)
			peakBefore := peak.Load()
			phase.Store(1)
			tt.lose(srv, probe)
			time.Sleep(4 * time.Second) // through the heartbeats and the quiet time
			phase.Store(2)
			time.Sleep(time.Second)
			close(stop)
			wg.Wait()
			got := map[string]int64{}
			statuses.Range(func(k, v any) bool { got[k.(string)] = v.(*atomic.Int64).Load(); return true })
			t.Logf("%s: peak slots held %d of %d (%d before the loss); statuses by phase (0 before, 1 through the loss, 2 the last second): %v",
				tt.name, peak.Load(), limit, peakBefore, got)
			if peakBefore != limit {
				t.Errorf("peak before the loss = %d, want the limit %d (are the clients busy?)", peakBefore, limit)
			}
			if p := peak.Load(); p > limit {
				t.Errorf("peak slots held across the replicas = %d, want at most the shared limit %d", p, limit)
			}
			if got["2/200"] == 0 {
				t.Error("no 200 in the last second: the replicas did not recover")
			}
		})
	}
}
