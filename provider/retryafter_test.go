package provider

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/internal/memnet"
	"github.com/ratelab/ratelab/strategies"
)

// TestRetryAfterMsHonoured runs a call through strategies.Do with the SDKs'
// retry policy, in virtual time over an in-memory connection, against a
// server whose first answer is a 429 carrying both retry-after-ms and a
// much longer retry-after: the retry goes exactly retry-after-ms later, as
// the official SDKs read it (docs/wire.md §3.1).
func TestRetryAfterMsHonoured(t *testing.T) {
	success := map[string]string{
		"anthropic": `{"id":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`,
		"openai":    `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
	}
	for _, p := range []Provider{Anthropic{}, OpenAI{}} {
		for _, requeue := range []bool{false, true} {
			name := p.Name()
			if requeue {
				name += " requeue"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var (
						mu   sync.Mutex
						seen []time.Time
					)
					ln := memnet.New()
					srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						mu.Lock()
						seen = append(seen, time.Now())
						n := len(seen)
						mu.Unlock()
						w.Header().Set("Content-Type", "application/json")
						if n == 1 {
							w.Header().Set("Retry-After-Ms", "1250.5")
							w.Header().Set("Retry-After", "9")
							w.WriteHeader(http.StatusTooManyRequests)
							io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
							return
						}
						io.WriteString(w, success[p.Name()])
					})}
					go srv.Serve(ln)
					tr := &http.Transport{DialContext: ln.Dial}
					defer func() {
						tr.CloseIdleConnections()
						srv.Close()
						ln.Close()
					}()
					c := &Client{Provider: p, BaseURL: "http://memnet", HTTP: &http.Client{Transport: tr}}
					req := testRequest(false)
					policy := &strategies.RetryPolicy{MaxRetries: strategies.DefaultMaxRetries, Requeue: requeue, Seed: 1}
					s := strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 1})
					call, err := strategies.Do(t.Context(), s, policy, c.Cost(req), func(ctx context.Context, n int) strategies.Outcome {
						_, o := c.Do(ctx, req, n)
						return o
					})
					if err != nil {
						t.Fatal(err)
					}
					want := 1250*time.Millisecond + 500*time.Microsecond
					if call.Attempts != 2 || call.Outcome.Kind != strategies.Success {
						t.Fatalf("%d attempts ending %v, want 2 ending success", call.Attempts, call.Outcome.Kind)
					}
					if got := seen[1].Sub(seen[0]); got != want {
						t.Errorf("the retry reached the server %v after the first attempt, want %v (retry-after-ms, not retry-after: 9)", got, want)
					}
					if call.Waits.RetryAfter != want || call.Waits.Backoff != 0 {
						t.Errorf("waits = %+v, want RetryAfter %v and no backoff", call.Waits, want)
					}
				})
			})
		}
	}
}
