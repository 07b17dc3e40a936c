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
	"flag"
	"github.com/ratelab/ratelab/bench/internal/benchcmd"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"

	"github.com/ratelab/ratelab/mock"
)

func main() { benchcmd.Main("mockprof", run) }

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
	return benchcmd.Serve(ctx, *addr, stdout, s.Serve, func() {
		s.Close()
		pl.Close()
	})
}
