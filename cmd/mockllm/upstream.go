package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/internal/recordproxy"
)

// serveUpstream is mockllm --upstream URL --record FILE: a transparent
// recording proxy in front of URL instead of the mock (package
// internal/recordproxy, docs/calibrate.md), until ctx ends.
func serveUpstream(ctx context.Context, addr, upstream, recordPath string, shutdown time.Duration, stdout io.Writer, logger *slog.Logger) error {
	if recordPath == "" {
		return errors.New("--upstream needs --record FILE: the proxy exists to record")
	}
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--upstream: want an http:// or https:// URL, got %q", upstream)
	}
	w, err := record.Create(recordPath, record.Header{Source: "mockllm proxy", Started: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		w.Close()
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: recordproxy.New(u, w, nil), ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	fmt.Fprintf(stdout, "listening on http://%s\nforwarding to %s, recording to %s\n", ln.Addr(), upstream, recordPath)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		w.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-served
	if err := w.Err(); err != nil {
		w.Close()
		return fmt.Errorf("--record %s: %w", recordPath, err)
	}
	return w.Close()
}
