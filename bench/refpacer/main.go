// Command refpacer is the reference of mockllm's cross-process stream pacing
// comparison (bench/compare stream): an absolute-deadline pacer.
//
// For every request it sends a message_start frame at once, then --tokens
// Anthropic-shaped text deltas of one four-character token each, token i
// (1-based) due at arrival + i·--per-token and waited for with one timer
// against that absolute deadline, so timer overshoot does not accumulate. A
// late token is sent as its own event, never merged.
//
// Like mockllm, its first line on stdout is "listening on http://HOST:PORT".
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/ratelab/ratelab/bench/internal/benchcmd"
	"io"
	"net/http"
	"time"
)

func main() { benchcmd.Main("refpacer", run) }

const (
	head  = "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
	delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"the \"}}\n\n"
	stop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func pacer(n int, perToken time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, head)
		rc := http.NewResponseController(w)
		rc.Flush()
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		for i := 1; i <= n; i++ {
			t.Reset(time.Until(start.Add(time.Duration(i) * perToken)))
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, delta)
			if i == n {
				io.WriteString(w, stop)
			}
			if rc.Flush() != nil {
				return
			}
		}
	})
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("refpacer", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen `address`")
	tokens := fs.Int("tokens", 20, "text tokens per stream")
	perToken := fs.Duration("per-token", 20*time.Millisecond, "time between tokens")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tokens < 1 || *perToken <= 0 {
		return fmt.Errorf("--tokens must be at least 1 and --per-token positive")
	}
	srv := &http.Server{Handler: pacer(*tokens, *perToken), ReadHeaderTimeout: 10 * time.Second}
	return benchcmd.Serve(ctx, *addr, stdout, srv.Serve, func() { srv.Close() })
}
