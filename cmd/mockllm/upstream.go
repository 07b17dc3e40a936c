package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/internal/recordproxy"
	"github.com/ratelab/ratelab/mock"
)

// ownFlags are mockllm's flags that configure the process, not the mock.
var ownFlags = map[string]bool{"config": true, "profile": true, "addr": true, "redis": true, "redis-prefix": true,
	"shutdown-timeout": true, "version": true, "log-format": true, "upstream": true, "record": true}

// mockFlagsSet reports whether a flag (or its environment variable) set a
// field of the mock's configuration.
func mockFlagsSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || !ownFlags[f.Name] })
	return set
}

// serveUpstream is mockllm --upstream URL --record FILE: a transparent
// recording proxy in front of URL instead of the mock (package
// internal/recordproxy, docs/calibrate.md), until ctx ends. With limits
// (the configuration of --config, --profile or the mock's flags) the proxy
// admits each request by them first and answers their 429s itself.
func serveUpstream(ctx context.Context, addr, upstream, recordPath string, limits *mock.Config, shutdown time.Duration, stdout io.Writer, logger *slog.Logger) error {
	if recordPath == "" {
		return errors.New("--upstream needs --record FILE: the proxy exists to record")
	}
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--upstream: want an http:// or https:// URL, got %q", upstream)
	}
	var srv *mock.Server
	if limits != nil {
		cfg, err := mock.UpstreamConfig(*limits)
		if err != nil {
			return fmt.Errorf("--upstream: %w", err)
		}
		if srv, err = mock.New(cfg); err != nil {
			return err
		}
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
	h := recordproxy.New(u, w, nil)
	if srv != nil {
		h = recordproxy.Limited(srv, u, w, nil)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	fmt.Fprintf(stdout, "listening on http://%s\nforwarding to %s, recording to %s\n", ln.Addr(), upstream, recordPath)
	if srv != nil {
		fmt.Fprintf(stdout, "enforcing %s first: its 429s are answered here, not forwarded\n", describeLimits(srv.Limits()))
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		w.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdown)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	<-served
	if err := w.Err(); err != nil {
		w.Close()
		return fmt.Errorf("--record %s: %w", recordPath, err)
	}
	return w.Close()
}

// describeLimits names the limits set in l, e.g. "max_concurrent 4, rpm
// 500", or "no limits" (the faults may still refuse).
func describeLimits(l mock.Limits) string {
	s := ""
	add := func(name string, v int) {
		if v > 0 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%s %d", name, v)
		}
	}
	add("max_concurrent", l.MaxConcurrent)
	add("rpm", l.RPM)
	add("tpm", l.TPM)
	add("itpm", l.ITPM)
	add("otpm", l.OTPM)
	if s == "" {
		return "no limits"
	}
	return s
}
