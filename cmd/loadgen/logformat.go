package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ratelab/ratelab/internal/logformat"
)

// cutLogFormat removes --log-format VALUE (or =VALUE, one dash or two)
// from args wherever it stands before a "--", and returns the format it
// names: every command takes it, so it is not one command's flag. What
// follows "--" is exec's command line and is left alone.
func cutLogFormat(args []string) ([]string, logformat.Format, error) {
	var f logformat.Format
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "log-format" {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, f, usageError("--log-format: want text or json, got nothing")
			}
			i++
			value = args[i]
		}
		if err := f.Set(value); err != nil {
			return nil, f, usageError("--log-format: %v", err)
		}
	}
	return rest, f, nil
}

// logTo makes slog's default logger (which the shared limits and go-redis
// log through) write f's records to w, and returns the function that
// points it back at the process's stderr in text. go-redis logs from its
// own goroutines, beside run's own writes to w, so w must be safe for
// concurrent use: an *os.File is; any other writer (a test's buffer) is
// replaced by the process's stderr.
//
// slog.SetDefault is called once, with a handler that forwards to the
// current target: setting it again per run could not be undone, since
// SetDefault also sends package log's output to the handler for good, and
// a finished run's stderr would keep receiving every later record.
func logTo(f logformat.Format, w io.Writer) (restore func()) {
	installLog.Do(func() {
		logTarget.Store(&target{logformat.Text.Handler(os.Stderr)})
		slog.SetDefault(slog.New(&forwardHandler{}))
	})
	if _, ok := w.(*os.File); !ok {
		w = os.Stderr
	}
	prev := logTarget.Swap(&target{f.Handler(w)})
	return func() { logTarget.Store(prev) }
}

var (
	installLog sync.Once
	logTarget  atomic.Pointer[target]
)

// target is the handler records go to.
type target struct{ slog.Handler }

// forwardHandler hands each record to the handler logTo set last, with
// the attributes and groups of WithAttrs and WithGroup applied to it.
type forwardHandler struct {
	with func(slog.Handler) slog.Handler // nil: none
}

func (h *forwardHandler) target() slog.Handler { return h.apply(logTarget.Load().Handler) }

// apply returns t with h's attributes and groups.
func (h *forwardHandler) apply(t slog.Handler) slog.Handler {
	if h.with == nil {
		return t
	}
	return h.with(t)
}

func (h *forwardHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.target().Enabled(ctx, l)
}

func (h *forwardHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.target().Handle(ctx, r)
}

func (h *forwardHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &forwardHandler{with: func(t slog.Handler) slog.Handler { return h.apply(t).WithAttrs(attrs) }}
}

func (h *forwardHandler) WithGroup(name string) slog.Handler {
	return &forwardHandler{with: func(t slog.Handler) slog.Handler { return h.apply(t).WithGroup(name) }}
}
