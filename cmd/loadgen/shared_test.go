package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/redistest"
	"github.com/ratelab/ratelab/mock"
)

// sharedKey returns a shared-limit name unique to this test, and deletes
// its Redis keys when the test ends.
func sharedKey(t *testing.T, c *redis.Client) string {
	key := redistest.Name(t, "loadgen-cmd-test")
	redistest.DeleteAtEnd(t, c, "ratelab:{"+key+"}:*")
	return key
}

// serverTally counts what the mock answered: attempts, 429s, and the span
// from the first request's arrival to the last response's end.
type serverTally struct {
	attempts, throttled atomic.Int64
	first, last         atomic.Int64 // UnixNano
}

// wrap counts the requests h serves.
func (s *serverTally) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.first.CompareAndSwap(0, time.Now().UnixNano())
		s.attempts.Add(1)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		if sw.status == http.StatusTooManyRequests {
			s.throttled.Add(1)
		}
		end := time.Now().UnixNano()
		for {
			last := s.last.Load()
			if end <= last || s.last.CompareAndSwap(last, end) {
				break
			}
		}
	})
}

// span is the time from the first request to the last response.
func (s *serverTally) span() time.Duration { return time.Duration(s.last.Load() - s.first.Load()) }

// statusWriter records a response's status.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher for the streamed responses.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// sharedWorkers is the fleet of the shared-limit acceptance tests: workers
// loadgen batch processes, each with its own items and output, sharing one
// limit through Redis against one mock.
type sharedWorkers struct {
	t       *testing.T
	bin     string
	ins     []string
	outs    []string
	args    []string // the shared flags
	baseURL string
}

func newSharedWorkers(t *testing.T, workers, items, limit int, callTime time.Duration, leaseTTL time.Duration) (*sharedWorkers, *serverTally, *redis.Client, string) {
	t.Helper()
	return newSharedWorkersAt(t, redistest.URL(t), redistest.Client(t), workers, items, limit, callTime, leaseTTL)
}

// newSharedWorkersAt is newSharedWorkers on the Redis at url, of which rc
// is a client.
func newSharedWorkersAt(t *testing.T, url string, rc *redis.Client, workers, items, limit int, callTime time.Duration, leaseTTL time.Duration) (*sharedWorkers, *serverTally, *redis.Client, string) {
	t.Helper()
	key := sharedKey(t, rc)
	dir := t.TempDir()
	w := &sharedWorkers{t: t, bin: buildLoadgen(t, dir)}

	// Each call returns 10 output tokens, paced so that it takes callTime.
	const tokens = 10
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = callTime / tokens
	cfg.Limits.MaxConcurrent = limit
	cfg.Limits.RetryAfter = time.Second
	tally := new(serverTally)
	w.baseURL, _ = mockServer(t, cfg, tally.wrap)

	for i := range workers {
		w.ins = append(w.ins, batchItems(t, items, tokens))
		w.outs = append(w.outs, filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", i)))
	}
	w.args = []string{"--strategy", "semaphore:n=" + strconv.Itoa(limit),
		"--shared-redis", url, "--shared-key", key, "--shared-peers", strconv.Itoa(workers),
		"--shared-lease-ttl", leaseTTL.String()}
	return w, tally, rc, key
}

// command returns worker i's loadgen batch command.
func (w *sharedWorkers) command(ctx context.Context, i int) *exec.Cmd {
	args := append([]string{"batch", "--input", w.ins[i], "--output", w.outs[i], "--base-url", w.baseURL,
		"--state-file", "", "--format", "json"}, w.args...)
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=")
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// batchJSON is the part of `loadgen batch --format json` these tests read.
type batchJSON struct {
	Shared    string `json:"shared"`
	Completed int    `json:"completed"`
	Run       struct {
		Attempts    int     `json:"attempts"`
		Throttled   int     `json:"throttled"`
		WallSeconds float64 `json:"wall_seconds"`
	} `json:"run"`
}

// runAll runs the workers whose indexes are given at once and returns their
// summaries; each must exit 0.
func (w *sharedWorkers) runAll(ctx context.Context, which ...int) []batchJSON {
	w.t.Helper()
	sums := make([]batchJSON, len(which))
	var wg sync.WaitGroup
	for j, i := range which {
		wg.Go(func() {
			cmd := w.command(ctx, i)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				w.t.Errorf("worker %d: %v\nstderr:\n%s", i, err, stderr.String())
				return
			}
			if err := json.Unmarshal(stdout.Bytes(), &sums[j]); err != nil {
				w.t.Errorf("worker %d: summary: %v\n%s", i, err, stdout.String())
			}
		})
	}
	wg.Wait()
	return sums
}

// checkOutputs fails unless every worker's output holds each of its items
// exactly once, each a success.
func (w *sharedWorkers) checkOutputs(items int) {
	w.t.Helper()
	for i, out := range w.outs {
		for id, r := range exactlyOnce(w.t, out, items) {
			if !r.OK() {
				w.t.Errorf("worker %d: %s: %v", i, id, r.Err)
			}
		}
	}
}

// TestSharedBatchFleet is issue 6's acceptance test: 4 loadgen batch
// processes × 250 items share, through a real Redis, a key limited to 20
// concurrent calls on one mock, each with --strategy semaphore:n=20. None is
// throttled, the mock sees exactly 1,000 attempts, and the fleet's wall time
// is never below the oracle (1,000 calls / 20 at once = 50 waves × the call
// time, 200 ms) and within 1.5 × of it however busy the machine.
func TestSharedBatchFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const (
		workers, items, limit = 4, 250, 20
		callTime              = 200 * time.Millisecond
	)
	w, tally, _, key := newSharedWorkers(t, workers, items, limit, callTime, 10*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	sums := w.runAll(ctx, 0, 1, 2, 3)
	w.checkOutputs(items)

	attempts, throttled := 0, 0
	for i, s := range sums {
		if s.Shared != key {
			t.Errorf("worker %d: summary's shared = %q, want %q", i, s.Shared, key)
		}
		attempts += s.Run.Attempts
		throttled += s.Run.Throttled
	}
	oracle := time.Duration(workers*items/limit) * callTime
	ratio := tally.span().Seconds() / oracle.Seconds()
	t.Logf("attempts %d (server %d), 429s %d (server %d), wall %.2fs (first request to last response), oracle %.2fs, wall/oracle %.3f",
		attempts, tally.attempts.Load(), throttled, tally.throttled.Load(), tally.span().Seconds(), oracle.Seconds(), ratio)
	if got := tally.attempts.Load(); got != workers*items || attempts != workers*items {
		t.Errorf("attempts: server %d, workers %d; want exactly %d", got, attempts, workers*items)
	}
	if got := tally.throttled.Load(); got != 0 || throttled != 0 {
		t.Errorf("429s: server %d, workers %d; want 0", got, throttled)
	}
	// The bound is liveness (the shared slots stay busy), not speed: on a
	// busy 2-core machine (stress-ng --cpu 2, other builds running) the
	// ratio measured 1.13–1.14 in 3 of 3 runs, 1.09–1.13 without
	// stress-ng; on a quiet one about 1.03.
	if ratio > 1.5 {
		t.Errorf("wall/oracle = %.3f, want at most 1.5", ratio)
	}
	if ratio < 0.99 {
		t.Errorf("wall/oracle = %.3f: faster than the limit allows (more than %d at once?)", ratio, limit)
	}
}

// TestSharedBatchKillResume: of 4 loadgen batch processes sharing a limit of
// 20 through Redis with a 2 s lease TTL, one is killed with SIGKILL mid-run.
// Its leases, no longer renewed, expire within the TTL (read from Redis on
// its own clock); the other three finish; rerun, it completes, and no item
// is lost or done twice across the four outputs.
func TestSharedBatchKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const (
		workers, items, limit = 4, 250, 20
		callTime              = 100 * time.Millisecond
		leaseTTL              = 2 * time.Second
	)
	w, tally, rc, key := newSharedWorkers(t, workers, items, limit, callTime, leaseTTL)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	// Worker 0 runs until it has recorded 60 items, then is killed.
	victim := w.command(ctx, 0)
	var victimErr bytes.Buffer
	victim.Stderr = &victimErr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	others := make(chan []batchJSON, 1)
	go func() { others <- w.runAll(ctx, 1, 2, 3) }()
	for countLines(w.outs[0]) < 60 && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	pid := victim.Process.Pid
	victim.Process.Signal(syscall.SIGKILL)
	victim.Wait()
	killedAt, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	recorded := countLines(w.outs[0])

	// The victim's leases: renewed no more, each expires at most leaseTTL
	// after the kill (the scores are expiries on Redis's clock).
	leases, err := rc.ZRangeWithScores(ctx, "ratelab:{"+key+"}:leases", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	mine, latest := 0, time.Time{}
	for _, z := range leases {
		if strings.Contains(z.Member.(string), ":"+strconv.Itoa(pid)+":") {
			mine++
			if exp := time.UnixMicro(int64(z.Score)); exp.After(latest) {
				latest = exp
			}
		}
	}
	if mine > 0 && latest.After(killedAt.Add(leaseTTL)) {
		t.Errorf("a lease of the killed worker expires %v after the kill, want at most the TTL %v", latest.Sub(killedAt), leaseTTL)
	}
	t.Logf("killed worker 0 (pid %d) with %d of %d items recorded and %d leases held, the last expiring %v after the kill",
		pid, recorded, items, mine, latest.Sub(killedAt).Round(time.Millisecond))

	sums := <-others
	for i, s := range sums {
		if s.Completed != items {
			t.Errorf("worker %d completed %d, want %d", i+1, s.Completed, items)
		}
	}
	resumed := w.runAll(ctx, 0)
	w.checkOutputs(items)
	t.Logf("resumed worker 0 completed %d; mock: %d attempts, %d 429s (1,000 items, plus the calls cut by the kill)",
		resumed[0].Completed, tally.attempts.Load(), tally.throttled.Load())
	if got := resumed[0].Completed; got != items-recorded {
		t.Errorf("resumed worker 0 completed %d, want the %d not recorded before the kill", got, items-recorded)
	}
	if got := tally.throttled.Load(); got != 0 {
		t.Errorf("mock answered %d 429s, want 0", got)
	}
	if got := tally.attempts.Load(); got < workers*items || got > workers*items+limit {
		t.Errorf("mock saw %d attempts, want %d plus at most the %d cut by the kill", got, workers*items, limit)
	}
}

// TestSharedBatchRedisFlushed is issue 10's item 1 end to end: 2 loadgen
// batch processes share a limit of 10 through a private redis-server, which
// is flushed (FLUSHALL) mid-run while they hold leases. The mock, itself
// limited to 10 at once, never sees more: 0 429s, every item exactly once.
// (On main the mock answered 6 429s after the flush.)
func TestSharedBatchRedisFlushed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const (
		workers, items, limit = 2, 150, 10
		callTime              = 100 * time.Millisecond
	)
	srv := redistest.Start(t)
	opts, _ := redis.ParseURL(srv.URL())
	rc := redis.NewClient(opts)
	defer rc.Close()
	w, tally, _, _ := newSharedWorkersAt(t, srv.URL(), rc, workers, items, limit, callTime, 2*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	sums := make(chan []batchJSON, 1)
	go func() { sums <- w.runAll(ctx, 0, 1) }()
	for countLines(w.outs[0])+countLines(w.outs[1]) < 60 && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i, s := range <-sums {
		if s.Completed != items {
			t.Errorf("worker %d completed %d, want %d", i, s.Completed, items)
		}
	}
	w.checkOutputs(items)
	t.Logf("mock: %d attempts, %d 429s across the flush", tally.attempts.Load(), tally.throttled.Load())
	if got := tally.throttled.Load(); got != 0 {
		t.Errorf("mock answered %d 429s: more than %d calls in flight after the flush", got, limit)
	}
}
