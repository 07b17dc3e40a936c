package sharedlimit

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/redistest"
	"github.com/ratelab/ratelab/strategies"
)

// clientOptions are the options of every test client: failures show at once
// instead of after go-redis's retries.
func clientOptions(opts *redis.Options) *redis.Options {
	opts.MaxRetries = -1
	opts.DialTimeout = 500 * time.Millisecond
	opts.ReadTimeout = time.Second
	opts.WriteTimeout = time.Second
	return opts
}

// realClient returns a client of the shared test server.
func realClient(t testing.TB) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatalf("RATELAB_REDIS_URL: %v", err)
	}
	return newClient(t, opts)
}

// miniClient returns a client of a new in-process miniredis.
func miniClient(t *testing.T) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	return m, newClient(t, &redis.Options{Addr: m.Addr()})
}

// newClient returns a client with clientOptions, closed when the test ends.
func newClient(t testing.TB, opts *redis.Options) *redis.Client {
	c := redis.NewClient(clientOptions(opts))
	t.Cleanup(func() { c.Close() })
	return c
}

// testKey returns a limit name unique to this test run, and deletes its keys
// when the test ends.
func testKey(t testing.TB, c redis.UniversalClient) string {
	t.Helper()
	key := redistest.Name(t, "test")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c.Del(ctx, newKeyspace(key).all()...)
	})
	return key
}

// quiet is a logger that discards.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newShared returns a Shared on c for cfg, closed when the test ends.
func newShared(t testing.TB, c redis.UniversalClient, cfg Config) *Shared {
	t.Helper()
	cfg.Client = c
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// events collects a strategy's events for a test.
type events struct {
	mu  sync.Mutex
	got []strategies.Event
	ch  chan strategies.Event
}

func newEvents() *events { return &events{ch: make(chan strategies.Event, 100)} }

func (e *events) observe(ev strategies.Event) {
	e.mu.Lock()
	e.got = append(e.got, ev)
	e.mu.Unlock()
	select {
	case e.ch <- ev:
	default:
	}
}

// drain forgets the events received so far.
func (e *events) drain() {
	for {
		select {
		case <-e.ch:
		default:
			return
		}
	}
}

// waitFor waits for an event of type typ, failing the test after d.
func (e *events) waitFor(t *testing.T, typ strategies.EventType, d time.Duration) strategies.Event {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev := <-e.ch:
			if ev.Type == typ {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event within %v", typ, d)
		}
	}
}

// freePort returns a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
