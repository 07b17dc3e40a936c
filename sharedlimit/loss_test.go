package sharedlimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/redistest"
	"github.com/ratelab/ratelab/strategies"
)

// TestStateLossNeverExceedsLimit is issue 10's items 1 and 2: three
// processes (Shared instances, each with its own client) keep 12 workers
// busy against a shared limit of 6 on a private redis-server, which loses
// its state mid-run: FLUSHALL, a clean restart without persistence, or
// kill -9 and a restart a second later. The calls in flight, counted across the processes
// as they run, never exceed the limit: not during the fallback, not at the
// moment of recovery, not after; and the processes go back to the shared
// limit and finish.
func TestStateLossNeverExceedsLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a redis-server for seconds")
	}
	for _, tt := range []struct {
		name string
		lose func(r *redistest.Server, c *redis.Client)
	}{
		{"flushall", func(_ *redistest.Server, c *redis.Client) { c.FlushAll(context.Background()) }},
		{"restart", func(r *redistest.Server, _ *redis.Client) { r.Restart(syscall.SIGTERM, 0) }},
		// Down for longer than the lease TTL: the processes fall back to
		// their shares, then recover.
		{"kill -9", func(r *redistest.Server, _ *redis.Client) { r.Restart(syscall.SIGKILL, time.Second) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			client := func() *redis.Client { return newClient(t, &redis.Options{Addr: srv.Addr()}) }
			probe := client()
			key := testKey(t, probe)
			const limit, procs, workers = 6, 3, 4
			// A lease outlives a stall of 2/3 of LeaseTTL (see docs/shared-limits.md): 1.5 s
			// keeps a busy CI machine's stalls (one of 400 ms made this fail
			// about once in 200 runs at 600 ms) inside the guarantee tested.
			cfg := Config{Key: key, MaxConcurrent: limit, Peers: procs, LeaseTTL: 1500 * time.Millisecond, OpTimeout: time.Second}
			var (
				inFlight, peak, done atomic.Int64
				recovered            atomic.Int64
				procIn               [procs]atomic.Int64 // calls in flight, per process
				trace                = newTimeline()
				stop                 = make(chan struct{})
				wg                   sync.WaitGroup
				all                  []*Shared
			)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for i := range procs {
				c := cfg
				c.Observer = func(e strategies.Event) {
					if e.Type == EventRedisRecovered {
						recovered.Add(1)
					}
					trace.add("p%d %s value=%v %s", i, e.Type, e.Value, e.Reason)
				}
				s := newShared(t, client(), c)
				all = append(all, s)
				for w := range workers {
					rng := rand.New(rand.NewPCG(uint64(i), uint64(w)))
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							p, err := s.Acquire(ctx, strategies.Cost{})
							if err != nil {
								t.Errorf("Acquire: %v", err)
								return
							}
							procIn[i].Add(1)
							n := inFlight.Add(1)
							for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
							}
							if n > limit {
								var b strings.Builder
								for j, s := range all {
									fmt.Fprintf(&b, " p%d: %d running, fallback %v;", j, procIn[j].Load(), s.fallback() != nil)
								}
								trace.over("%d in flight:%s", n, b.String())
							}
							start, d := time.Now(), time.Duration(5+rng.IntN(30))*time.Millisecond
							time.Sleep(d)
							if took := time.Since(start); took > cfg.LeaseTTL/3 {
								trace.add("p%d: a call of %v took %v (stalled)", i, d, took)
							}
							inFlight.Add(-1)
							procIn[i].Add(-1)
							p.Done(strategies.Outcome{Kind: strategies.Success})
							done.Add(1)
						}
					})
				}
			}
			time.Sleep(time.Second)
			before := done.Load()
			if p := peak.Load(); p != limit {
				t.Errorf("peak in flight before the loss = %d, want the limit %d (the workers are not busy?)", p, limit)
			}
			trace.add("redis loses its state")
			tt.lose(srv, probe)
			trace.add("redis is back")
			// Run through the loss, the recovery (a process whose connection
			// was idle when Redis died may never see an error: it finds the
			// new state at its next heartbeat) and the quiet time.
			time.Sleep(500 * time.Millisecond)
			deadline := time.Now().Add(15 * time.Second)
			for time.Now().Before(deadline) && slices.ContainsFunc(all, func(s *Shared) bool { return s.fallback() != nil }) {
				time.Sleep(10 * time.Millisecond)
			}
			if slices.ContainsFunc(all, func(s *Shared) bool { return s.fallback() != nil }) {
				t.Error("a process is still in its fallback 15 s after Redis came back")
			}
			time.Sleep(3 * time.Second)
			mid := done.Load()
			time.Sleep(time.Second)
			close(stop)
			wg.Wait()
			t.Logf("%s: calls done %d in the first second, %d in the last; %d fallbacks ended; peak in flight %d of %d",
				tt.name, before, done.Load()-mid, recovered.Load(), peak.Load(), limit)
			if p := peak.Load(); p > limit {
				trace.log(t)
				t.Errorf("peak in flight = %d, want at most the shared limit %d", p, limit)
			}
			if done.Load() == mid {
				t.Error("no call done in the last second: the processes did not go back to the shared limit")
			}
			if n := probe.ZCard(ctx, newKeyspace(key).leases).Val(); n != 0 {
				t.Errorf("leases after every call ended = %d, want 0", n)
			}
		})
	}
}

// timeline records what happened when, for a failing test to tell: events,
// stalls, the moments above the limit (the first 20).
type timeline struct {
	mu    sync.Mutex
	start time.Time
	lines []string
	overs int
}

func newTimeline() *timeline { return &timeline{start: time.Now()} }

// over records a moment above the limit; only the first 20 are kept.
func (tl *timeline) over(format string, args ...any) {
	tl.mu.Lock()
	tl.overs++
	n := tl.overs
	tl.mu.Unlock()
	if n <= 20 {
		tl.add(format, args...)
	}
}

func (tl *timeline) add(format string, args ...any) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.lines = append(tl.lines, fmt.Sprintf("%8v ", time.Since(tl.start).Round(time.Millisecond))+fmt.Sprintf(format, args...))
}

func (tl *timeline) log(t *testing.T) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, l := range tl.lines {
		t.Log(l)
	}
}
