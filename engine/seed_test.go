package engine

import (
	"context"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// seedConfig is the seeds' server: 20 concurrent requests per key, 429 with
// retry-after 1 s beyond that, 100 output tokens at 5 ms each (0.5 s a call).
func seedConfig() mock.Config {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = 5 * time.Millisecond
	cfg.Limits.MaxConcurrent = 20
	cfg.Limits.RetryAfter = time.Second
	cfg.Models = mock.Models{Any: true} // the items name model "m" for both providers
	return cfg
}

// startMock serves a mock in memory (mocktest) and returns a client that
// reaches it; everything is closed when t ends, so a synctest bubble ends
// with no goroutine left.
func startMock(t *testing.T, cfg mock.Config, p provider.Provider, concurrency int) *provider.Client {
	t.Helper()
	srv := mocktest.Start(t, cfg, mocktest.InMemory(), mocktest.WithTransport(provider.NewTransport(concurrency)))
	base := srv.URL
	if p.Name() == "openai" {
		base = srv.V1()
	}
	return &provider.Client{Provider: p, BaseURL: base, APIKey: "sk-test", HTTP: srv.Client}
}

func seedItems(n int, stream bool) Source {
	return Generate(n, func(i int) Item {
		return Item{ID: fmt.Sprint("t", i), Request: provider.Request{
			Model:     "claude-haiku-4-5",
			MaxTokens: 100,
			Stream:    stream,
			Messages:  []provider.Message{{Role: "user", Content: fmt.Sprintf("Classify: ticket %d", i)}},
		}}
	})
}

// TestSeedTable reproduces bounded-fanout-guide.txt's table in virtual time:
// 200 calls against a limit of 20 concurrent requests. The counts are exact,
// and so are the wall times, which are the ideal ones (the guide's Python
// measured 2.7, 9.9, 5.6 and 11.1 s).
func TestSeedTable(t *testing.T) {
	tests := []struct {
		name       string
		strategy   func() strategies.Strategy
		maxRetries int
		stream     bool
		provider   provider.Provider

		completed, failed   int
		attempts, throttled int64
		wall                float64
		throttledByAttempt  string
		maxAttempts         int
	}{
		{
			name: "unbounded retries=2", strategy: func() strategies.Strategy { return strategies.NewUnbounded() }, maxRetries: 2,
			completed: 60, failed: 140, attempts: 540, throttled: 480, wall: 2.5,
			throttledByAttempt: "[180 160 140]", maxAttempts: 3,
		},
		{
			name: "unbounded retries=10", strategy: func() strategies.Strategy { return strategies.NewUnbounded() }, maxRetries: 10,
			completed: 200, failed: 0, attempts: 1100, throttled: 900, wall: 9.5,
			throttledByAttempt: "[180 160 140 120 100 80 60 40 20]", maxAttempts: 10,
		},
		{
			name: "semaphore 20", strategy: func() strategies.Strategy { return strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 20}) }, maxRetries: 2,
			completed: 200, attempts: 200, wall: 5.0, throttledByAttempt: "[]", maxAttempts: 1,
		},
		{
			name: "semaphore 10", strategy: func() strategies.Strategy { return strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 10}) }, maxRetries: 2,
			completed: 200, attempts: 200, wall: 10.0, throttledByAttempt: "[]", maxAttempts: 1,
		},
		{
			name: "semaphore 20 streaming", strategy: func() strategies.Strategy { return strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 20}) }, maxRetries: 2, stream: true,
			completed: 200, attempts: 200, wall: 5.0, throttledByAttempt: "[]", maxAttempts: 1,
		},
		{
			name: "semaphore 20 openai", strategy: func() strategies.Strategy { return strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 20}) }, maxRetries: 2, provider: provider.OpenAI{},
			completed: 200, attempts: 200, wall: 5.0, throttledByAttempt: "[]", maxAttempts: 1,
		},
		{
			name: "unbounded retries=2 openai streaming", strategy: func() strategies.Strategy { return strategies.NewUnbounded() }, maxRetries: 2, provider: provider.OpenAI{}, stream: true,
			completed: 60, failed: 140, attempts: 540, throttled: 480, wall: 2.5,
			throttledByAttempt: "[180 160 140]", maxAttempts: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := tt.provider
				if p == nil {
					p = provider.Anthropic{}
				}
				client := startMock(t, seedConfig(), p, 200)
				sum, err := Run(t.Context(), Config{
					Client:   client,
					Strategy: tt.strategy(),
					Retry:    &strategies.RetryPolicy{MaxRetries: tt.maxRetries, Seed: 1},
					Workers:  200,
				}, seedItems(200, tt.stream))
				if err != nil {
					t.Fatal(err)
				}
				got := fmt.Sprintf("completed %d, failed %d, attempts %d, 429s %d, wall %v s, 429s by attempt %v, max attempts %d",
					sum.Completed, sum.Failed, sum.Attempts, sum.Throttled, sum.WallSeconds, sum.ThrottledByAttempt, sum.MaxAttempts)
				want := fmt.Sprintf("completed %d, failed %d, attempts %d, 429s %d, wall %v s, 429s by attempt %v, max attempts %d",
					tt.completed, tt.failed, tt.attempts, tt.throttled, tt.wall, tt.throttledByAttempt, tt.maxAttempts)
				if got != want {
					t.Errorf("got  %s\nwant %s", got, want)
				}
				if sum.Overloaded != 0 || sum.ServerErrors != 0 || sum.Errors != 0 || sum.Incomplete {
					t.Errorf("overloaded %d, 5xx %d, errors %d, incomplete %v; want none", sum.Overloaded, sum.ServerErrors, sum.Errors, sum.Incomplete)
				}
				if want := int64(tt.completed * 100); sum.OutputTokens != want {
					t.Errorf("output tokens = %d, want %d", sum.OutputTokens, want)
				}
				if sum.Attempt.Max != 0.5 {
					t.Errorf("attempt latency max = %v s, want 0.5", sum.Attempt.Max)
				}
				// The timeline accounts for every completion and every 429.
				var done, throttled float64
				points := sum.Timeline.Points
				for i := 1; i < len(points); i++ {
					dt := points[i].T - points[i-1].T
					done += points[i].CompletionsRate * dt
					throttled += points[i].ThrottlesRate * dt
				}
				if math.Abs(done-float64(tt.completed)) > 1e-6 || math.Abs(throttled-float64(tt.throttled)) > 1e-6 {
					t.Errorf("timeline: %.3f completions and %.3f 429s, want %d and %d", done, throttled, tt.completed, tt.throttled)
				}
				if last := points[len(points)-1]; last.T != tt.wall || last.InFlight != 0 {
					t.Errorf("timeline ends at %v s with %d in flight, want %v s and 0", last.T, last.InFlight, tt.wall)
				}
				if tt.stream != (sum.TTFT != nil) {
					t.Errorf("TTFT = %+v, want it exactly when streaming", sum.TTFT)
				}
			})
		})
	}
}

// TestSeedTableSemaphore50 is the racy row: retries of Semaphore(50) land at
// the same instants as slots free, so only a range is certain.
func TestSeedTableSemaphore50(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := startMock(t, seedConfig(), provider.Anthropic{}, 50)
		sum, err := Run(t.Context(), Config{
			Client:   client,
			Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 50}),
			Retry:    &strategies.RetryPolicy{MaxRetries: 2, Seed: 1},
			Workers:  200,
		}, seedItems(200, false))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Completed < 150 || sum.Completed > 200 || sum.Completed+sum.Failed != 200 || sum.Throttled == 0 {
			t.Errorf("completed %d, failed %d, 429s %d; want 150..200 completed, some 429s", sum.Completed, sum.Failed, sum.Throttled)
		}
		t.Logf("semaphore 50: completed %d, failed %d, attempts %d, 429s %d, wall %v s", sum.Completed, sum.Failed, sum.Attempts, sum.Throttled, sum.WallSeconds)
	})
}

func TestSeedResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := startMock(t, seedConfig(), provider.Anthropic{}, 20)
		var results []Result
		_, err := Run(context.Background(), Config{
			Client:   client,
			Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 20}),
			OnResult: func(r Result) { results = append(results, r) },
		}, seedItems(40, true))
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != 40 {
			t.Fatalf("results = %d, want 40", len(results))
		}
		for _, r := range results {
			if r.Err != nil || r.Text != mock.Filler(100) || r.StopReason != "max_tokens" || r.Usage.OutputTokens != 100 || r.Usage.InputTokens != provider.EstimateTokens(r.requestFor()) {
				t.Fatalf("result %d = %+v", r.Index, r)
			}
			if d := r.Timings.End.Sub(r.Timings.Start); d != 500*time.Millisecond+r.Timings.WaitSlot {
				t.Errorf("result %d: end-to-end %v, want 0.5 s + wait %v", r.Index, d, r.Timings.WaitSlot)
			}
			if r.Timings.TTFT != 5*time.Millisecond {
				t.Errorf("result %d: TTFT %v, want 5ms (first token)", r.Index, r.Timings.TTFT)
			}
		}
	})
}

// requestFor rebuilds the request seedItems made for r.
func (r Result) requestFor() provider.Request {
	return provider.Request{Messages: []provider.Message{{Role: "user", Content: fmt.Sprintf("Classify: ticket %d", r.Index)}}}
}
