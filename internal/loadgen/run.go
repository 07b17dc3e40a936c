package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/internal/memnet"
	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
)

// DialFunc connects to the embedded mock; its signature is
// http.Transport.DialContext's.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// ListenFunc returns the listener the embedded mock serves on and the dial
// function clients reach it with (nil for an ordinary network dial).
type ListenFunc func() (net.Listener, DialFunc, error)

// ListenTCP serves the embedded mock on a loopback port, so that the
// kernel's TCP stack and both sides of net/http are in what a row measures
// (loadgen run --loopback).
func ListenTCP() (net.Listener, DialFunc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	return ln, nil, err
}

// ListenMemory serves the embedded mock on an in-memory listener that clients
// dial directly, with no socket. Inside a testing/synctest bubble this runs a
// scenario in virtual time: every wait is durably blocking, so hours of
// rate-limited traffic take milliseconds, with exact timings.
func ListenMemory() (net.Listener, DialFunc, error) {
	ln := memnet.New()
	return ln, ln.Dial, nil
}

// Options tune a run. The zero value runs every strategy against a
// loopback mock (or the target), with no progress and no per-item output.
type Options struct {
	// Only, when not empty, names the strategies to run (in file order).
	Only []string
	// Timeline overrides the scenario's timeline resolution when positive.
	Timeline time.Duration
	// Progress, when not nil, reports each strategy's progress while it
	// runs: "strategy 3 of 8, NAME: done/total, in flight, 429s, elapsed,
	// ETA".
	Progress *Progress
	// Results receives one JSON line per finished item, or nil.
	Results io.Writer
	// Listen starts the embedded mock's listener. Nil serves it in
	// process (mock.InProcess): each request goes to the mock's HTTP
	// handler in memory, with no socket, no connection and no goroutine
	// of net/http's on either side, so 10,000 workers need neither 20,000
	// file descriptors nor their buffers; requests and responses are the
	// same bytes, paced by the same clock.
	Listen ListenFunc
	// Getenv reads the target's key variable. Nil is os.Getenv.
	Getenv func(string) string
	// CommandOut, when set, is where command rows keep their items file and
	// their program's stdout and stderr (NAME.items.jsonl, NAME.stdout,
	// NAME.stderr); otherwise a temporary directory, removed after the row.
	CommandOut string
	// CommandLog, when set, receives how a command row's program failed,
	// with the last lines of its output.
	CommandLog io.Writer
	// Virtual runs each row in simulated time: on a clock.Sim of its own,
	// from SimEpoch, against the embedded mock served in process
	// (mock.InProcess) rather than on a socket, so a row that would take
	// minutes takes what its code takes to execute. Listen and Progress are
	// ignored, and the report is marked Simulated. A scenario with a
	// target, command rows or shared limits cannot run so (CheckVirtual).
	Virtual bool
	// Record, when set, receives one line per HTTP attempt of every client
	// row (see record.go and docs/calibrate.md).
	Record *record.Writer

	position position // the strategy running, for progress lines
}

// CheckOnly reports an error naming the first of names that is not one of
// the scenario's strategies.
func (s *Scenario) CheckOnly(names []string) error {
	for _, n := range names {
		if !slices.ContainsFunc(s.Strategies, func(st Row) bool { return st.Name == n }) {
			have := make([]string, len(s.Strategies))
			for i, st := range s.Strategies {
				have[i] = fmt.Sprintf("%q", st.Name)
			}
			return fmt.Errorf("no strategy named %q in %s (have %s)", n, s.File, strings.Join(have, ", "))
		}
	}
	return nil
}

// ErrNoKey is returned by Run when the target names an environment variable
// that is not set.
var ErrNoKey = errors.New("loadgen: target key not set")

// Run runs each selected strategy of s in turn — against a fresh embedded
// mock each, or against the target — and returns one result per strategy, in
// file order, with its expectations checked.
//
// When ctx ends, Run stops the strategy that is running and returns what
// finished, the interrupted strategy marked incomplete and its expectations
// not checked, with ctx's error.
// Errors never contain the target's key.
func Run(ctx context.Context, s *Scenario, opt Options) (reports.Report, error) {
	rep := reports.Report{Scenario: s.Name, Description: s.Description, Target: "embedded mock", Oracle: s.OracleAssumptions()}
	key := ""
	if t := s.Target; t != nil {
		rep.Target = redact.URL(t.URL)
		if t.APIKeyEnv != "" {
			getenv := opt.Getenv
			if getenv == nil {
				getenv = os.Getenv
			}
			if key = getenv(t.APIKeyEnv); key == "" {
				return rep, fmt.Errorf("%w: %s:%d: target.api_key_env: environment variable %s is empty or unset",
					ErrNoKey, s.File, s.line("target.api_key_env"), t.APIKeyEnv)
			}
		}
	}
	if err := s.CheckOnly(opt.Only); err != nil {
		return rep, fmt.Errorf("loadgen: %w", err)
	}
	if opt.Virtual {
		if err := s.CheckVirtual(opt.Only); err != nil {
			return rep, err
		}
		rep.Simulated = true
	}
	selected := func(st Row) bool { return len(opt.Only) == 0 || slices.Contains(opt.Only, st.Name) }
	for _, st := range s.Strategies {
		if selected(st) {
			opt.position.n++
		}
	}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		if !selected(*st) {
			continue
		}
		opt.position.i++
		res, err := runStrategy(ctx, s, st, opt, key)
		if err != nil {
			err = provider.Redact(err, key)
		}
		if err != nil && ctx.Err() != nil {
			// Its figures cover what finished before the interruption:
			// holding them to the expectations would report failures
			// the full run might not have.
			res.Expectations = nil
			res.Incomplete = true
			rep.Incomplete = true
			rep.Results = append(rep.Results, res)
			return rep, ctx.Err()
		}
		if err != nil {
			return rep, fmt.Errorf("loadgen: %s: strategy %q: %w", s.File, st.Name, err)
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// Failures lists every failed expectation of r, one line each:
// `semaphore(20): attempts: expected = 200, got 231`.
func Failures(r reports.Report) []string {
	var out []string
	for _, res := range r.Results {
		for _, c := range res.Expectations {
			if !c.OK {
				out = append(out, fmt.Sprintf("%s: %s: expected %s, got %s", res.Name, c.Metric, c.Expected, c.Actual))
			}
		}
	}
	return out
}

// target is where one strategy's calls go.
type target struct {
	baseURL string
	http    *http.Client
	close   func()
	// srv is the embedded mock, whose call accounting gives the row its
	// server-side figures; nil against a target.
	srv *mock.Server
	// clock is the clock of a simulated row, which its provider clients
	// measure with; nil in real time.
	clock clock.Clock
}

// startTarget starts a fresh embedded mock (or points at s.Target) and
// returns the client side for it. The mock is reached in process, with no
// listener, on the simulated clock sim when there is one, unless
// opt.Listen gives a listener (in real time only).
func startTarget(s *Scenario, opt Options, concurrency int, sim clock.Clock) (*target, error) {
	if s.Target != nil {
		tr := provider.NewTransport(concurrency)
		return &target{baseURL: s.Target.URL, http: &http.Client{Transport: tr}, close: tr.CloseIdleConnections}, nil
	}
	cfg := s.Server
	if cfg.Seed == 0 {
		cfg.Seed = s.Seed
	}
	srv, err := mock.New(cfg, mock.WithClock(sim))
	if err != nil {
		return nil, fmt.Errorf("%s:%d: server: %w", s.File, s.line("server"), err)
	}
	if sim != nil || opt.Listen == nil {
		return &target{srv: srv, clock: sim, baseURL: "http://mock.invalid", http: &http.Client{Transport: srv.InProcess()},
			close: func() {}}, nil
	}
	ln, dial, err := opt.Listen()
	if err != nil {
		return nil, fmt.Errorf("embedded mock: %w", err)
	}
	tr := provider.NewTransport(concurrency)
	if dial != nil {
		tr.DialContext = dial
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln) // returns when closed
	}()
	base := "http://" + ln.Addr().String()
	if dial != nil {
		base = "http://mock.invalid" // the dial function ignores the address
	}
	return &target{
		srv:     srv,
		baseURL: base,
		http:    &http.Client{Transport: tr},
		close: func() {
			tr.CloseIdleConnections()
			_ = srv.Close()
			_ = ln.Close()
			<-served
		},
	}, nil
}

// ResolveOnly turns --only values into s's strategy names. A value that is a
// strategy's name is taken whole, since names such as "unbounded,
// retries=2" contain commas; otherwise it is split on commas.
func (s *Scenario) ResolveOnly(values []string) ([]string, error) {
	var names []string
	for _, v := range values {
		if s.CheckOnly([]string{v}) == nil {
			names = append(names, v)
			continue
		}
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	return names, s.CheckOnly(names)
}
