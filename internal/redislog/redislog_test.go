package redislog

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestOncePerOutage replays go-redis lines at explicit instants: the first
// of each outage is logged, the rest are dropped and counted.
func TestOncePerOutage(t *testing.T) {
	var buf bytes.Buffer
	g := New(slog.New(slog.NewTextHandler(&buf, nil)))
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var at time.Duration
	g.now = func() time.Time { return t0.Add(at) }
	steps := []struct {
		at     time.Duration
		logged bool
	}{
		{0, true},
		{100 * time.Millisecond, false},
		{5 * time.Second, false},
		{14 * time.Second, false}, // never 10 s quiet since t0+5s
		{30 * time.Second, true},  // a new outage
		{31 * time.Second, false},
	}
	for i, st := range steps {
		at = st.at
		before := buf.Len()
		g.Printf(context.Background(), "connection pool: failed to dial after %d attempts: %v", 5, "refused")
		if logged := buf.Len() > before; logged != st.logged {
			t.Errorf("step %d: line at t0+%v logged %v, want %v", i, st.at, logged, st.logged)
		}
	}
	out := buf.String()
	if n := strings.Count(out, "level=WARN"); n != 2 {
		t.Errorf("%d records, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "failed to dial after 5 attempts: refused") || !strings.Contains(out, "dropped_before=3") {
		t.Errorf("records lack the message or the count of dropped lines (3):\n%s", out)
	}
}

// TestInstall: a client of a dead server, installed, prints its pool's
// failures as one slog record.
func TestInstall(t *testing.T) {
	var buf bytes.Buffer
	Install(slog.New(slog.NewTextHandler(&buf, nil)))
	defer Install(slog.New(slog.DiscardHandler))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if c.Ping(ctx).Err() == nil {
			t.Fatal("ping of a closed port succeeded")
		}
		cancel()
	}
	if n := strings.Count(buf.String(), "level=WARN"); n != 1 {
		t.Errorf("%d records for 5 failed pings, want 1:\n%s", n, buf.String())
	}
}
