// Package redislog routes go-redis's own log lines (a pool that cannot
// dial, a connection dropped) through log/slog, once per outage: go-redis
// prints a line for every failed dial, dozens a second while a server is
// down, outside any structured log.
package redislog

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Quiet is how long go-redis must stay silent before its next line is
// logged again: the lines of one outage make one record.
const Quiet = 10 * time.Second

// Logger is go-redis's logger (redis.SetLogger) writing to a slog.Logger.
// The first line after Quiet without any is logged at Warn, with how many
// were dropped since the last one logged; the others are counted and
// dropped. It is safe for concurrent use.
type Logger struct {
	log *slog.Logger // nil: slog.Default() at each line
	now func() time.Time

	mu      sync.Mutex
	last    time.Time // the last line go-redis printed
	dropped int
}

// New returns a Logger writing to l (nil: slog.Default()).
func New(l *slog.Logger) *Logger { return &Logger{log: l, now: time.Now} }

// Install makes go-redis log through New(l), for every client of the
// process (go-redis's logger is global).
func Install(l *slog.Logger) { redis.SetLogger(New(l)) }

// Printf implements go-redis's logging interface.
func (g *Logger) Printf(ctx context.Context, format string, v ...any) {
	now := g.now()
	g.mu.Lock()
	quiet := g.last.IsZero() || now.Sub(g.last) >= Quiet
	g.last = now
	dropped := g.dropped
	if quiet {
		g.dropped = 0
	} else {
		g.dropped++
	}
	g.mu.Unlock()
	if !quiet {
		return
	}
	l := g.log
	if l == nil {
		l = slog.Default()
	}
	attrs := []any{"source", "go-redis"}
	if dropped > 0 {
		attrs = append(attrs, "dropped_before", dropped)
	}
	l.WarnContext(ctx, "redis: "+fmt.Sprintf(format, v...)+fmt.Sprintf(" (further go-redis lines dropped until it is quiet for %v)", Quiet), attrs...)
}
