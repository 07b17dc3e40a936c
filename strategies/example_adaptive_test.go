package strategies_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// The case study's controller: a throttle stretches the delay between
// dispatches by 1.8 and pauses them for 10 s. Run calls through Do with
// unlimited re-queued retries, so that a throttled item goes back in line
// instead of being dropped.
func ExampleNewAIMDDelay() {
	s := strategies.NewAIMDDelay(strategies.AIMDDelayConfig{}, // 6 s, ×0.9 per 3 successes, ×1.8 and 10 s cooldown
		strategies.WithObserver(func(e strategies.Event) {
			fmt.Printf("%s %.1f %s\n", e.Type, e.Value, e.Reason)
		}))
	// Each item goes through
	//	strategies.Do(ctx, s, &strategies.RetryPolicy{MaxRetries: -1, Requeue: true}, cost, attempt)
	// here, one attempt by hand:
	p, _ := s.Acquire(context.Background(), strategies.Cost{}) // the first dispatch goes at once
	p.Done(strategies.Outcome{Kind: strategies.Throttled, Status: 429})
	fmt.Printf("delay %.1f s\n", s.Stats().Delay)
	// Output:
	// delay 10.8 throttled
	// gate_close 0.0 cooldown
	// delay 10.8 s
}

// AIMD on a concurrency window: a throttle shrinks the window by 10 %, once
// per round trip.
func ExampleNewAIMD() {
	s := strategies.NewAIMD(strategies.AIMDConfig{Initial: 10, Min: 1, Max: 50})
	ctx := context.Background()
	var permits []strategies.Permit
	for range 10 {
		p, _ := s.Acquire(ctx, strategies.Cost{})
		permits = append(permits, p)
	}
	fmt.Println("window", s.Stats().Limit)
	// Two throttles of calls sent in the same round trip: one decrease.
	permits[0].Done(strategies.Outcome{Kind: strategies.Throttled, Status: 429})
	permits[1].Done(strategies.Outcome{Kind: strategies.Throttled, Status: 429})
	fmt.Println("window", s.Stats().Limit)
	for _, p := range permits[2:] {
		p.Done(strategies.Outcome{Kind: strategies.Success, Status: 200})
	}
	// Output:
	// window 10
	// window 9
}

// Adaptive finds an undocumented limit; its learned limit is saved per
// provider, base URL and key fingerprint, so that the next run starts there.
func ExampleNewAdaptive() {
	dir, _ := os.MkdirTemp("", "ratelab")
	defer os.RemoveAll(dir)
	statePath := filepath.Join(dir, "adaptive-state.json")

	apiKey := "sk-ant-example"
	key := strategies.StateKey{
		Provider:       "anthropic",
		BaseURL:        "https://api.anthropic.com",
		KeyFingerprint: strategies.Fingerprint(apiKey), // never the key itself
	}
	// The cost a provider.Client for that key computes (Client.Cost): its
	// Key is the same strategies.Fingerprint, so the saved state applies.
	cost := strategies.Cost{Provider: key.Provider, Key: key.KeyFingerprint}

	s := strategies.NewAdaptive(strategies.AdaptiveConfig{}) // start window 4, ×0.9, probe after 3 round trips
	if _, err := s.LoadState(statePath, key); err != nil {
		fmt.Println(err)
	}
	ctx := context.Background()
	var permits []strategies.Permit
	for range 4 {
		p, _ := s.Acquire(ctx, cost)
		permits = append(permits, p)
	}
	// The fourth call is refused while the server holds the other three: the
	// learned limit is 3 and the window drops below it. The window answers
	// such a refusal, so the key's gate stays open; the refused call waits
	// out the server's delay itself before its retry (see Do).
	permits[3].Done(strategies.Outcome{Kind: strategies.Throttled, Status: 429, RetryAfter: time.Second, HasRetryAfter: true})
	for _, p := range permits[:3] {
		p.Done(strategies.Outcome{Kind: strategies.Success, Status: 200, Latency: 800 * time.Millisecond})
	}
	fmt.Println("learned limit", s.State(cost.Provider, cost.Key).Limit)
	if err := s.SaveState(statePath, key); err != nil {
		fmt.Println(err)
	}

	next := strategies.NewAdaptive(strategies.AdaptiveConfig{})
	found, err := next.LoadState(statePath, key)
	fmt.Println("next run starts at", next.Stats().Limit, found, err)
	// Output:
	// learned limit 3
	// next run starts at 3 true <nil>
}
