package batch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/memnet"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// outageNet serves a mock on in-memory pipes and can take it down, as a
// process killed and restarted is: down closes the server, cutting the
// connections in progress, and refuses every dial until up starts a fresh
// one (with fresh limits).
type outageNet struct {
	cfg    mock.Config
	mu     sync.Mutex
	ln     *memnet.Listener // nil while down
	srv    *mock.Server
	served chan struct{}
}

func (n *outageNet) up(t *testing.T) {
	srv, err := mock.New(n.cfg)
	if err != nil {
		t.Error(err)
		return
	}
	ln := memnet.New()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	n.mu.Lock()
	n.ln, n.srv, n.served = ln, srv, served
	n.mu.Unlock()
}

func (n *outageNet) down() {
	n.mu.Lock()
	ln, srv, served := n.ln, n.srv, n.served
	n.ln = nil
	n.mu.Unlock()
	if ln == nil {
		return
	}
	srv.Close()
	ln.Close()
	<-served
}

// dial is the transport's DialContext: a refused connection while down,
// the same error a socket dial to a closed port returns.
func (n *outageNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	ln := n.ln
	n.mu.Unlock()
	if ln == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	return ln.Dial(ctx, network, addr)
}

// TestBatchOutage runs a batch of 400 calls (0.5 s each, 20 at a time)
// against a mock that goes down 3.25 s into the run, cutting the calls in
// progress, and comes back 3 s later, in virtual time. (Not at 3 s: a wave
// of calls ends then, and a success observed at the instant of the cut
// resets the circuit's count of failures in a row, which let one more
// queued call start before it opened, beyond the bound below, in one CI
// run of many.) No item may be lost
// to the outage: every one ends with a success, once. The circuit opens as
// the server goes down and closes at the first probe after it is back, and
// while it is open no attempt starts but the probes.
//
// With retries (the SDKs' 2), the calls cut by the outage wait at the
// circuit for their retry; without, they go back in the batch's queue, as a
// throttled item does, and are made again after it.
func TestBatchOutage(t *testing.T) {
	for _, retries := range []int{strategies.DefaultMaxRetries, 0} {
		t.Run(fmt.Sprint("max_retries=", retries), func(t *testing.T) { testBatchOutage(t, retries) })
	}
}

func testBatchOutage(t *testing.T, retries int) {
	const (
		n       = 400
		downAt  = 3250 * time.Millisecond // mid-call: see TestBatchOutage
		downFor = 3 * time.Second
		slots   = 20
		// callTime is seedConfig's: 100 output tokens at 5 ms.
		callTime = 500 * time.Millisecond
	)
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		net := &outageNet{cfg: seedConfig()}
		net.up(t)
		tr := provider.NewTransport(slots)
		tr.DialContext, tr.Proxy = net.dial, nil
		defer func() {
			tr.CloseIdleConnections()
			net.down()
		}()
		client := &provider.Client{Provider: provider.Anthropic{}, BaseURL: "http://mock", APIKey: "sk-test", HTTP: &http.Client{Transport: tr}}

		b := newTestBatch(t, client, 0)
		b.Input, b.Output = filepath.Join(dir, "items.jsonl"), filepath.Join(dir, "out.jsonl")
		var lines []string
		for i := range n {
			lines = append(lines, fmt.Sprintf(`{"id":"id-%d","prompt":"p%d"}`, i, i))
		}
		writeLines(t, b.Input, lines...)
		b.MaxTokens = 100
		b.Config.Strategy = strategies.NewSemaphore(strategies.SemaphoreConfig{Max: slots})
		b.Config.Retry = &strategies.RetryPolicy{MaxRetries: retries, Requeue: true, Seed: 1}
		b.Config.Workers = 64

		start := time.Now()
		var mu sync.Mutex
		var events []Outage
		var starts []time.Time
		b.OnOutage = func(o Outage) {
			mu.Lock()
			events = append(events, o)
			mu.Unlock()
		}
		b.Config.OnAttempt = func(a engine.Attempt) {
			mu.Lock()
			starts = append(starts, a.Start)
			mu.Unlock()
		}
		go func() {
			time.Sleep(downAt)
			net.down()
			time.Sleep(downFor)
			net.up(t)
		}()
		sum, err := b.Run(t.Context())
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if sum.Completed != n || sum.Failed != 0 || !sum.AllOK() {
			t.Errorf("completed %d, failed %d (%v); want %d, 0", sum.Completed, sum.Failed, sum.FailedByType, n)
		}
		checkExactlyOnce(t, b.Output, n)

		mu.Lock()
		defer mu.Unlock()
		if len(events) != 2 || !events[0].Open || events[1].Open {
			t.Fatalf("circuit events %v, want one open then one close", events)
		}
		opened, closed := events[0].At.Sub(start), events[1].At.Sub(start)
		if opened != downAt {
			t.Errorf("circuit opened at %v, want %v, when the server went down", opened, downAt)
		}
		// The first probe after the server is back closes it, when its
		// response ends (a call time later): probes go 0.5 s, 1 s, 2 s, …
		// apart (less their jitter), so the last gap, after probes-1 failed
		// ones, bounds how late it can be.
		back := downAt + downFor
		gap := min(strategies.InitialBackoff<<max(events[1].Probes-1, 0), strategies.MaxBackoff) + callTime
		if closed < back || closed > back+gap {
			t.Errorf("circuit closed at %v, want within %v after %v", closed, gap, back)
		}
		if sum.Outages != 1 || sum.OutageSeconds != events[1].Down.Seconds() {
			t.Errorf("outages %d, %.3f s; want 1, %.3f s", sum.Outages, sum.OutageSeconds, events[1].Down.Seconds())
		}
		during := 0
		for _, s := range starts {
			if s.After(events[0].At) && s.Before(events[1].At) {
				during++
			}
		}
		if during > events[1].Probes || events[1].Probes == 0 {
			t.Errorf("%d attempts started while the circuit was open, with %d probes; want only the probes", during, events[1].Probes)
		}
		// Failed: the calls the outage cut, those that got a slot before
		// the circuit opened, and the probes; no worker queued for a slot
		// makes an attempt once it is open.
		if max := int64(slots + CircuitThreshold + events[1].Probes); sum.Run.Errors > max {
			t.Errorf("%d failed attempts, want at most %d", sum.Run.Errors, max)
		}
		// The calls cut by the outage were made again after it.
		if sum.Run.Errors == 0 || sum.Run.Attempts < n+sum.Run.Errors {
			t.Errorf("attempts %d, errors %d; want some errors and every one made again", sum.Run.Attempts, sum.Run.Errors)
		}
		if retries == 0 && sum.Requeued == 0 {
			t.Error("requeued 0, want the calls cut by the outage re-queued")
		}
		t.Logf("wall %.3f s, attempts %d, errors %d, requeued %d, open %v → %v, probes %d",
			sum.Run.WallSeconds, sum.Run.Attempts, sum.Run.Errors, sum.Requeued, opened, closed, events[1].Probes)
	})
}

// refusingClient fails every attempt with err and no response.
type refusingClient struct {
	err   error
	calls atomic.Int64
}

func (c *refusingClient) Do(context.Context, provider.Request, int) (provider.Response, strategies.Outcome) {
	c.calls.Add(1)
	return provider.Response{}, strategies.Outcome{Kind: strategies.Failed, Err: c.err}
}

// TestBatchOutageGivesUp: an endpoint that never answers pauses the batch
// until MaxOutage has passed, then the batch stops with ErrOutage and
// records nothing, so that a rerun makes every item.
func TestBatchOutageGivesUp(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		c := &refusingClient{err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
		b := newTestBatch(t, c, 0)
		b.Input, b.Output = filepath.Join(dir, "items.jsonl"), filepath.Join(dir, "out.jsonl")
		writeLines(t, b.Input, `{"id":"a","prompt":"a"}`, `{"id":"b","prompt":"b"}`, `{"id":"c","prompt":"c"}`, `{"id":"d","prompt":"d"}`)
		b.Config.Retry = &strategies.RetryPolicy{MaxRetries: 2, Requeue: true}
		b.MaxOutage = 30 * time.Second
		var opened int
		b.OnOutage = func(o Outage) {
			if o.Open {
				opened++
			}
		}
		start := time.Now()
		sum, err := b.Run(t.Context())
		took := time.Since(start)
		if !errors.Is(err, ErrOutage) {
			t.Fatalf("Run: %v, want ErrOutage", err)
		}
		if sum.Remaining != 4 || sum.Failed != 0 || sum.Completed != 0 || opened != 1 || sum.Outages != 1 {
			t.Errorf("remaining %d, failed %d, completed %d, opened %d, outages %d; want 4, 0, 0, 1, 1", sum.Remaining, sum.Failed, sum.Completed, opened, sum.Outages)
		}
		if got := readOutput(t, b.Output); len(got) != 0 {
			t.Errorf("output has %d results, want none", len(got))
		}
		// It gives up at the first failed probe past MaxOutage: at most one
		// probe period (8 s) late.
		if took < b.MaxOutage || took > b.MaxOutage+strategies.MaxBackoff {
			t.Errorf("gave up after %v, want %v to %v", took, b.MaxOutage, b.MaxOutage+strategies.MaxBackoff)
		}
		// Paused, the batch only probes: one attempt per probe period.
		if n := c.calls.Load(); n > 20 {
			t.Errorf("%d attempts in %v of outage, want only the probes", n, took)
		}
	})
}

// TestBatchPermanentConnectionError: a request that can never be sent (not
// a transient fault) is recorded, not re-queued, and does not open the
// circuit.
func TestBatchPermanentConnectionError(t *testing.T) {
	c := &refusingClient{err: errors.New(`Post "https://x/v1/messages": tls: failed to verify certificate: x509: certificate signed by unknown authority`)}
	b := newTestBatch(t, c, 5)
	b.OnOutage = func(o Outage) { t.Errorf("circuit changed: %v", o) }
	sum, err := b.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 5 || sum.FailedByType["connection_error"] != 5 || sum.Requeued != 0 || c.calls.Load() != 5 {
		t.Errorf("failed %d (%v), requeued %d, calls %d; want 5 connection_error, 0, 5", sum.Failed, sum.FailedByType, sum.Requeued, c.calls.Load())
	}
	checkExactlyOnce(t, b.Output, 5)
}

// seedConfig is the seeds' server: 20 concurrent calls, 5 ms a token.
func seedConfig() mock.Config {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = 5 * time.Millisecond
	cfg.Limits.MaxConcurrent = 20
	cfg.Limits.RetryAfter = time.Second
	cfg.Models = mock.Models{Any: true} // the items name model "m" for both providers
	return cfg
}
