package strategies_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// callModel stands for one HTTP attempt classified into an Outcome (the
// provider package's job).
func callModel(ctx context.Context, n int) strategies.Outcome {
	return strategies.Outcome{Kind: strategies.Success, Status: 200, Usage: strategies.Usage{InputTokens: 120, OutputTokens: 80}}
}

// The seeds' `async with asyncio.Semaphore(20):` around an SDK call with its
// default retries.
func ExampleNewSemaphore() {
	sem := strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 20})
	retries := &strategies.RetryPolicy{MaxRetries: strategies.DefaultMaxRetries, Seed: 1}

	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			strategies.Do(context.Background(), sem, retries, strategies.Cost{}, callModel)
		})
	}
	wg.Wait()
	st := sem.Stats()
	fmt.Printf("limit %v, permits %d, successes %d, in flight %d\n", st.Limit, st.Permits, st.Successes, st.InFlight)
	// Output: limit 20, permits 200, successes 200, in flight 0
}

// Unbounded is asyncio.gather over every item: the baseline.
func ExampleNewUnbounded() {
	s := strategies.NewUnbounded()
	call, err := strategies.Do(context.Background(), s, nil, strategies.Cost{}, callModel)
	fmt.Println(call.Outcome.Kind, call.Attempts, err)
	// Output: success 1 <nil>
}

// One limiter per provider and key: a burst to Anthropic never holds up
// OpenAI.
func ExampleNewPerProvider() {
	s := strategies.NewPerProvider(strategies.PerProviderConfig{
		Limits: map[string]int{"anthropic": 10, "openai": 30},
	})
	for _, provider := range []string{"anthropic", "openai", "openai"} {
		c := strategies.Cost{Provider: provider, Key: "key-fingerprint"}
		strategies.Do(context.Background(), s, nil, c, callModel)
	}
	fmt.Println("anthropic:", s.StatsFor("anthropic", "key-fingerprint").Permits)
	fmt.Println("openai:", s.StatsFor("openai", "key-fingerprint").Permits)
	fmt.Println("limit:", s.Stats().Limit)
	// Output:
	// anthropic: 1
	// openai: 2
	// limit: 40
}

// A token bucket paced to published limits of 50 requests and 6,000 tokens
// a minute; each call spends its estimate plus max_tokens.
func ExampleNewTokenBucket() {
	s := strategies.NewTokenBucket(strategies.TokenBucketConfig{RPM: 50, TPM: 6000, RequestBurst: 5})
	c := strategies.Cost{InputTokens: 1500, MaxTokens: 500}
	for range 2 {
		strategies.Do(context.Background(), s, nil, c, callModel)
	}
	st := s.Stats()
	fmt.Printf("%.3f requests/s, about %.0f tokens left\n", st.Rate, hundreds(st.Tokens))
	// Output: 0.833 requests/s, about 2000 tokens left
}

// hundreds rounds tokens down to hundreds: the buckets refill as the example
// runs.
func hundreds(tokens float64) float64 { return math.Floor(tokens/100) * 100 }

// Tokens first, then a slot; each call is settled to its actual usage.
func ExampleNewTokenFirst() {
	s := strategies.NewTokenFirst(strategies.TokenFirstConfig{TPM: 6000, MaxConcurrent: 20})
	c := strategies.Cost{InputTokens: 1500, MaxTokens: 500} // reserves 2,000
	call, _ := strategies.Do(context.Background(), s, nil, c, callModel)
	st := s.Stats()
	fmt.Printf("used %d tokens; about %.0f of 6000 left\n",
		call.Outcome.Usage.InputTokens+call.Outcome.Usage.OutputTokens, hundreds(st.Tokens))
	// Output: used 200 tokens; about 5800 of 6000 left
}

// Do with the SDKs' retries: a 429 with retry-after: 0 is retried at once,
// inside the held slot.
func ExampleDo() {
	s := strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 1})
	p := &strategies.RetryPolicy{MaxRetries: strategies.DefaultMaxRetries, Seed: 7}
	call, err := strategies.Do(context.Background(), s, p, strategies.Cost{},
		func(ctx context.Context, n int) strategies.Outcome {
			if n == 0 {
				return strategies.Outcome{Kind: strategies.Throttled, Status: 429, HasRetryAfter: true}
			}
			return callModel(ctx, n)
		})
	st := s.Stats()
	fmt.Println(call.Outcome.Kind, call.Attempts, err)
	fmt.Println("permits", st.Permits, "attempts", st.Attempts, "throttles", st.Throttles)
	// Output:
	// success 2 <nil>
	// permits 1 attempts 2 throttles 1
}

// What the SDKs retry, and how long they wait.
func ExampleRetryPolicy_Next() {
	p := &strategies.RetryPolicy{MaxRetries: strategies.DefaultMaxRetries, Seed: 1}
	throttled := strategies.Outcome{Kind: strategies.Throttled, Status: 429, RetryAfter: 1500 * time.Millisecond, HasRetryAfter: true}
	fmt.Println(p.Next(0, throttled))
	fmt.Println(p.Next(2, throttled)) // retries used up
	fmt.Println(p.Next(0, strategies.Outcome{Kind: strategies.Failed, Status: 400}))
	retry, wait := p.Next(1, strategies.Outcome{Kind: strategies.Overloaded, Status: 529})
	fmt.Println(retry, wait > 750*time.Millisecond && wait <= time.Second)
	// Output:
	// true 1.5s
	// false 0s
	// false 0s
	// true true
}
