package engine_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// A small batch against the mock: ten prompts through a semaphore at the
// server's limit, SDK-style retries, each result written as a JSON line the
// moment it finishes.
func Example() {
	// The mock, on a loopback port: 2 concurrent requests per key, 20 ms a call.
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = time.Millisecond
	cfg.Limits.MaxConcurrent = 2
	srv, err := mock.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	client := &provider.Client{
		Provider: provider.Anthropic{},
		BaseURL:  "http://" + ln.Addr().String(),
		APIKey:   "sk-example",
		HTTP:     &http.Client{Transport: provider.NewTransport(2)},
	}
	defer client.HTTP.CloseIdleConnections()
	prompts := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"}
	src := engine.Generate(len(prompts), func(i int) engine.Item {
		return engine.Item{
			ID: prompts[i],
			Request: provider.Request{
				Model:     "claude-haiku-4-5",
				MaxTokens: 20,
				Messages:  []provider.Message{{Role: "user", Content: "Classify: " + prompts[i]}},
			},
		}
	})
	results, err := os.CreateTemp("", "results-*.jsonl")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(results.Name())
	defer results.Close()

	sum, err := engine.Run(context.Background(), engine.Config{
		Client:   client,
		Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 2}),
		Retry:    &strategies.RetryPolicy{MaxRetries: strategies.DefaultMaxRetries},
		Sinks:    []engine.Sink{engine.NewJSONL(results)},
	}, src)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("completed %d of %d, %d attempts, %d throttled, %d output tokens\n",
		sum.Completed, sum.Items, sum.Attempts, sum.Throttled, sum.OutputTokens)

	// Resuming reads back what is done.
	results.Seek(0, 0)
	done := 0
	if _, err := engine.ReadJSONL(results, func(r engine.Result) error {
		if r.OK() {
			done++
		}
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("in results.jsonl:", done)
	// Output:
	// completed 10 of 10, 10 attempts, 0 throttled, 200 output tokens
	// in results.jsonl: 10
}
