// Command mockprof serves the mock like mockllm --config FILE, with
// net/http/pprof on a second address, so that mockllm's per-request cost
// can be profiled under bench/compare's load:
//
//	bin/compare json -server 'bare=bin/bareserver --response @RESPONSE@' \
//		-server 'mock=bin/mockprof --config bench/mock-json.yaml --pprof 127.0.0.1:6060' &
//	go tool pprof -top -cum -focus 'serveModel' bin/mockprof http://127.0.0.1:6060/debug/pprof/profile?seconds=20
//
// Its first line on stdout is "listening on http://HOST:PORT".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"

	"github.com/ratelab/ratelab/mock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mockprof:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mockprof", flag.ContinueOnError)
	config := fs.String("config", "", "mock config `file` (YAML, as mockllm --config)")
	addr := fs.String("addr", "127.0.0.1:0", "listen `address` of the mock")
	pprofAddr := fs.String("pprof", "127.0.0.1:6060", "listen `address` of net/http/pprof")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := mock.DefaultConfig()
	if *config != "" {
		b, err := os.ReadFile(*config)
		if err != nil {
			return err
		}
		if cfg, err = mock.ParseConfig(b, *config); err != nil {
			return err
		}
	}
	s, err := mock.New(cfg)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	pl, err := net.Listen("tcp", *pprofAddr)
	if err != nil {
		return err
	}
	go http.Serve(pl, mux)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	go func() {
		<-ctx.Done()
		s.Close()
		pl.Close()
	}()
	if err := s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
