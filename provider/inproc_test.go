package provider_test

// A provider Client against the mock through mock.InProcess: the transport
// of simulated runs, where no socket and no goroutine may live outside the
// clock. Each test runs on every clock the transport serves.

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// inProcess is one test's clock.
type inProcess struct {
	t   *testing.T
	clk clock.Clock
}

// onClocks runs f on each clock: clock.Real inside a synctest bubble (the
// in-test virtual time) and clock.Sim.
func onClocks(t *testing.T, f func(t *testing.T, e *inProcess)) {
	run := func(t *testing.T, clk clock.Clock) { f(t, &inProcess{t: t, clk: clk}) }
	t.Run("real-in-synctest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) { run(t, clock.Real) })
	})
	t.Run("sim", func(t *testing.T) {
		sim := clock.NewSim(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		if err := sim.Run(t.Context(), func() { run(t, sim) }); err != nil {
			t.Fatalf("Sim.Run: %v", err)
		}
	})
}

// client returns a client of p reaching a mock configured by cfg on the
// test's clock, in process.
func (e *inProcess) client(p provider.Provider, cfg mock.Config) (*provider.Client, *mock.Server) {
	e.t.Helper()
	srv, err := mock.New(cfg, mock.WithClock(e.clk))
	if err != nil {
		e.t.Fatal(err)
	}
	base := "http://mock.invalid"
	if p.Name() != "anthropic" {
		base += "/v1"
	}
	return &provider.Client{Provider: p, BaseURL: base, APIKey: mockKey, HTTP: &http.Client{Transport: srv.InProcess()}, Clock: e.clk}, srv
}

// timedConfig answers in 300ms + 10ms per token, exactly.
func timedConfig() mock.Config {
	cfg := fastConfig()
	cfg.Latency.TTFT = 300 * time.Millisecond
	cfg.Latency.PerToken = 10 * time.Millisecond
	return cfg
}

// TestInProcessTimings: a JSON answer and a stream arrive at their
// scheduled instants, so latency and time to first token are exact.
func TestInProcessTimings(t *testing.T) {
	onClocks(t, func(t *testing.T, e *inProcess) {
		clk := e.clk
		for _, p := range []provider.Provider{provider.Anthropic{}, provider.OpenAI{}, provider.OpenAIResponses{}} {
			for _, stream := range []bool{false, true} {
				c, _ := e.client(p, timedConfig())
				r := request(stream)
				t0 := clk.Now()
				resp, o := c.Do(t.Context(), r, 0)
				if o.Kind != strategies.Success || o.Status != 200 {
					t.Fatalf("%s stream=%v: Outcome = %v %d %v, want Success 200", p.Name(), stream, o.Kind, o.Status, o.Err)
				}
				if resp.Text != mock.Filler(20) || resp.Usage.OutputTokens != 20 {
					t.Errorf("%s stream=%v: text %q, %d output tokens; want the filler of 20", p.Name(), stream, resp.Text, resp.Usage.OutputTokens)
				}
				// 300ms + 20 tokens of 10ms.
				if want := 500 * time.Millisecond; o.Latency != want || clock.Since(clk, t0) != want {
					t.Errorf("%s stream=%v: latency %v, elapsed %v; want %v", p.Name(), stream, o.Latency, clock.Since(clk, t0), want)
				}
				wantTTFT := time.Duration(0)
				if stream {
					wantTTFT = 310 * time.Millisecond // the first token's own 10ms
				}
				if resp.TTFT != wantTTFT {
					t.Errorf("%s stream=%v: TTFT = %v, want %v", p.Name(), stream, resp.TTFT, wantTTFT)
				}
			}
		}
	})
}

// TestInProcessThrottled: a 429 arrives at once with its headers:
// retry-after, the rate-limit headers and the error body.
func TestInProcessThrottled(t *testing.T) {
	onClocks(t, func(t *testing.T, e *inProcess) {
		clk := e.clk
		for _, p := range []provider.Provider{provider.Anthropic{}, provider.OpenAI{}} {
			cfg := timedConfig()
			cfg.Limits.MaxConcurrent = 1
			cfg.Limits.RPM = 60
			cfg.Limits.RetryAfter = 2 * time.Second
			c, srv := e.client(p, cfg)
			first := clk.NewEvent()
			var o1 strategies.Outcome
			clk.Go(func() {
				_, o1 = c.Do(t.Context(), request(false), 0)
				first.Fire()
			})
			if err := clk.Sleep(t.Context(), 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			_, o := c.Do(t.Context(), request(false), 0)
			if o.Kind != strategies.Throttled || o.Status != 429 || !o.HasRetryAfter || o.RetryAfter != 2*time.Second || o.Latency != 0 {
				t.Errorf("%s: second call: %v %d retry-after %v/%v latency %v (%v); want Throttled 429 with 2s at once",
					p.Name(), o.Kind, o.Status, o.RetryAfter, o.HasRetryAfter, o.Latency, o.Err)
			}
			if o.Limits.Requests.Limit != 60 || o.Limits.Requests.Reset.IsZero() {
				t.Errorf("%s: Limits.Requests = %+v, want limit 60 with a reset", p.Name(), o.Limits.Requests)
			}
			var apiErr *provider.APIError
			if !errors.As(o.Err, &apiErr) || apiErr.Status != 429 || apiErr.Message == "" || apiErr.RequestID == "" {
				t.Errorf("%s: Err = %#v, want an APIError with a message and a request id", p.Name(), o.Err)
			}
			if _, err := clk.Wait(t.Context(), first, 0); err != nil {
				t.Fatal(err)
			}
			if o1.Kind != strategies.Success || o1.Latency != 500*time.Millisecond {
				t.Errorf("%s: first call: %v in %v, want Success in 500ms", p.Name(), o1.Kind, o1.Latency)
			}
			if st := srv.Stats(); st.Calls.InFlight != 0 || st.Calls.Throttled != 1 || st.Calls.Completed != 1 {
				t.Errorf("%s: server's calls = %+v; want 1 completed, 1 throttled, none in flight", p.Name(), st.Calls)
			}
		}
	})
}

// TestInProcessCutAndCancel: a cut stream is an incomplete stream, and a
// caller's deadline mid-stream ends both sides at that instant.
func TestInProcessCutAndCancel(t *testing.T) {
	onClocks(t, func(t *testing.T, e *inProcess) {
		clk := e.clk
		cfg := timedConfig()
		cfg.Faults.CutStream = 1
		c, _ := e.client(provider.Anthropic{}, cfg)
		_, o := c.Do(t.Context(), request(true), 0)
		if o.Kind != strategies.Failed || !errors.Is(o.Err, provider.ErrIncompleteStream) {
			t.Errorf("cut stream: %v %v, want Failed with ErrIncompleteStream", o.Kind, o.Err)
		}
		// 300ms + 10 tokens (half of 20) of 10ms.
		if o.Latency != 400*time.Millisecond {
			t.Errorf("cut stream: latency %v, want 400ms", o.Latency)
		}

		c, srv := e.client(provider.Anthropic{}, timedConfig())
		ctx, cancel := context.WithCancel(t.Context())
		stop := clk.AfterFunc(350*time.Millisecond, cancel)
		defer stop()
		_, o = c.Do(ctx, request(true), 0)
		if o.Kind != strategies.Canceled || o.Latency != 350*time.Millisecond {
			t.Errorf("canceled stream: %v after %v (%v), want Canceled after 350ms", o.Kind, o.Latency, o.Err)
		}
		// The handler saw its context end at that instant and released
		// the request.
		if err := clk.Sleep(t.Context(), time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if st := srv.Stats(); st.Calls.InFlight != 0 {
			t.Errorf("after the cancel: %d in flight on the server, want 0", st.Calls.InFlight)
		}
	})
}
