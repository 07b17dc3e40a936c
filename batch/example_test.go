package batch_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// A resumable batch against the mock: items.jsonl in, one line per item in
// results.jsonl, written as each finishes. Running it again makes nothing:
// every id is already in the output.
func ExampleBatch() {
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

	dir, err := os.MkdirTemp("", "batch")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	input := filepath.Join(dir, "items.jsonl")
	var lines []string
	for i := range 6 {
		lines = append(lines, fmt.Sprintf(`{"id": "t-%d", "prompt": "Classify ticket %d.", "max_tokens": 5, "metadata": {"row": %d}}`, i, i, i))
	}
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}

	client := &provider.Client{
		Provider: provider.Anthropic{},
		BaseURL:  "http://" + ln.Addr().String(),
		APIKey:   "sk-example",
		HTTP:     &http.Client{Transport: provider.NewTransport(2)},
	}
	defer client.HTTP.CloseIdleConnections()
	b := &batch.Batch{
		Input:  input,
		Output: filepath.Join(dir, "results.jsonl"),
		Model:  "claude-haiku-4-5",
		Config: engine.Config{
			Client:   client,
			Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 2}),
			Retry:    &strategies.RetryPolicy{MaxRetries: strategies.DefaultMaxRetries, Requeue: true},
			OnResult: func(r engine.Result) {
				// Called once per recorded result, in completion order.
				_ = r.ID
			},
		},
	}
	for run := 1; run <= 2; run++ {
		sum, err := b.Run(context.Background())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("run %d: %d items, %d already done, %d completed, %d failed, %d attempts\n",
			run, sum.Items, sum.DoneOK, sum.Completed, sum.Failed, sum.Run.Attempts)
	}
	// Output:
	// run 1: 6 items, 0 already done, 6 completed, 0 failed, 6 attempts
	// run 2: 6 items, 6 already done, 0 completed, 0 failed, 0 attempts
}
