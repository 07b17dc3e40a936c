package engine

import (
	"net/http"
	"testing"
	"time"

	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// TestRealNetwork runs the engine against the mock over loopback TCP in real
// time. Real time is noisy here, so it asserts counts exactly and times only
// as ratios and lower bounds: no run can beat the server's latency.
func TestRealNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	const (
		items    = 100
		tokens   = 50
		perToken = 2 * time.Millisecond
		call     = tokens * perToken // 100 ms
	)
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = perToken
	cfg.Limits.MaxConcurrent = 20
	cfg.Limits.RetryAfter = time.Second
	srv := mocktest.Start(t, cfg)

	run := func(slots int) measure.Summary {
		tr := provider.NewTransport(slots)
		defer tr.CloseIdleConnections()
		client := &provider.Client{Provider: provider.Anthropic{}, BaseURL: srv.URL, APIKey: "k", HTTP: &http.Client{Transport: tr}}
		src := Generate(items, func(i int) Item {
			return Item{Request: provider.Request{Model: "claude-haiku-4-5", MaxTokens: tokens, Messages: []provider.Message{{Role: "user", Content: "hi"}}}}
		})
		sum, err := Run(t.Context(), Config{
			Client:   client,
			Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: slots}),
			Retry:    &strategies.RetryPolicy{MaxRetries: 2},
			Workers:  items,
		}, src)
		if err != nil {
			t.Fatal(err)
		}
		// The server releases a slot before the response's last byte, so a
		// semaphore at the limit is never throttled, on a real network too.
		if sum.Completed != items || sum.Attempts != items || sum.Throttled != 0 {
			t.Errorf("semaphore %d: completed %d, attempts %d, 429s %d; want %d, %d, 0", slots, sum.Completed, sum.Attempts, sum.Throttled, items, items)
		}
		oracle := (time.Duration((items+slots-1)/slots) * call).Seconds()
		if sum.WallSeconds < oracle {
			t.Errorf("semaphore %d: wall %.3f s beats the oracle %.3f s", slots, sum.WallSeconds, oracle)
		}
		if sum.Attempt.P50 < call.Seconds() {
			t.Errorf("semaphore %d: attempt p50 %.3f s is below the server's latency", slots, sum.Attempt.P50)
		}
		t.Logf("semaphore %d: wall %.3f s, oracle %.3f s, wall/oracle %.3f", slots, sum.WallSeconds, oracle, sum.WallSeconds/oracle)
		return sum
	}
	s20, s10 := run(20), run(10)
	// Half the slots, twice the waves: the ratio is 2 with no overhead.
	if r := s10.WallSeconds / s20.WallSeconds; r < 1.3 || r > 3 {
		t.Errorf("wall(semaphore 10) / wall(semaphore 20) = %.2f, want about 2", r)
	}
}
