// Command mockprof serves the mock like mockllm --config FILE, with
// net/http/pprof on a second address, so that mockllm's per-request cost
// can be profiled under bench/compare's load:
//
//	bin/compare json -server 'bare=bin/bareserver --response @RESPONSE@' \
//		-server 'mock=bin/mockprof --config bench/mock-json.yaml --pprof 127.0.0.1:6060' &
//	go tool pprof -top -cum -focus 'serveModel' bin/mockprof http://127.0.0.1:6060/debug/pprof/profile?seconds=20
//
// /debug/gc on the pprof address lists the collector's runtime metrics (live
// heap, scannable bytes, cycles, bytes allocated), and --memprofilerate 1
// makes /debug/pprof/heap exact (GODEBUG=memprofilerate=1 also covers the
// allocations of package initialisation).
//
// It serves what mockllm serves: mockllm's one default beyond mock.Config's
// (output.length natural) is applied here too, and its collector runs with
// the same headroom (internal/gcheadroom).
//
// Its first line on stdout is "listening on http://HOST:PORT".
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/ratelab/ratelab/bench/internal/benchcmd"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"

	"github.com/ratelab/ratelab/internal/gcheadroom"
	"github.com/ratelab/ratelab/mock"
)

func main() { benchcmd.Main("mockprof", run) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mockprof", flag.ContinueOnError)
	config := fs.String("config", "", "mock config `file` (YAML, as mockllm --config)")
	addr := fs.String("addr", "127.0.0.1:0", "listen `address` of the mock")
	pprofAddr := fs.String("pprof", "127.0.0.1:6060", "listen `address` of net/http/pprof")
	memRate := fs.Int("memprofilerate", runtime.MemProfileRate, "runtime.MemProfileRate: 1 records every allocation, so /debug/pprof/heap shows the whole live heap")
	if err := fs.Parse(args); err != nil {
		return err
	}
	runtime.MemProfileRate = *memRate
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
	if cfg.Output.Length == "" {
		cfg.Output.Length = mock.LengthNatural // cmd/mockllm's default
	}
	go gcheadroom.Run(ctx) // as cmd/mockllm's collector runs
	s, err := mock.New(cfg)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/gc", gcMetrics)
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

// gcMetrics writes the runtime's garbage collector metrics (runtime/metrics
// names under /gc/), one "name value" a line: the collector's work per cycle
// depends on the scannable heap, stacks and globals, and how often it runs
// on the live heap against the 4 MB minimum heap goal.
func gcMetrics(w http.ResponseWriter, _ *http.Request) {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/gc/") && d.Kind != metrics.KindFloat64Histogram {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			fmt.Fprintf(w, "%s %d\n", s.Name, s.Value.Uint64())
		case metrics.KindFloat64:
			fmt.Fprintf(w, "%s %g\n", s.Name, s.Value.Float64())
		}
	}
}
