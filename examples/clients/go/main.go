// Command go-client is the guide's fan-out with the official Go SDK,
// anthropic-sdk-go, unchanged: anthropic.NewClient reads ANTHROPIC_BASE_URL
// and ANTHROPIC_API_KEY, which loadgen sets to its mock, and retries as it
// always does (2 retries by default, honouring retry-after).
//
//	go run ./examples/clients/go --concurrency 0    unbounded: a goroutine per item
//	go run ./examples/clients/go --concurrency 20   at most 20 calls at once
//
// Items come from RATELAB_ITEMS_FILE (one JSON object a line: id, prompt or
// messages, system, max_tokens). It prints "completed C of N" and exits 1
// if any item failed.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

type item struct {
	ID        string `json:"id"`
	Prompt    string `json:"prompt"`
	System    string `json:"system"`
	MaxTokens int64  `json:"max_tokens"`
	Messages  []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "go-client:", err)
		os.Exit(1)
	}
}

func run() error {
	concurrency := flag.Int("concurrency", 0, "calls at once (0: unbounded)")
	maxRetries := flag.Int("max-retries", 2, "the SDK's retries")
	flag.Parse()
	items, err := readItems(os.Getenv("RATELAB_ITEMS_FILE"))
	if err != nil {
		return err
	}
	model := os.Getenv("RATELAB_MODEL")
	if model == "" {
		model = "claude-haiku-4-5"
	}
	client := anthropic.NewClient(option.WithMaxRetries(*maxRetries))

	// A buffered channel is the semaphore: the shape of asyncio.Semaphore.
	var slots chan struct{}
	if *concurrency > 0 {
		slots = make(chan struct{}, *concurrency)
	}
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Go(func() {
			if slots != nil {
				slots <- struct{}{}
				defer func() { <-slots }()
			}
			errs[i] = call(context.Background(), &client, model, it)
		})
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		var apiErr *anthropic.Error
		switch {
		case err == nil:
		case errors.As(err, &apiErr):
			failed++ // recorded per item, as the guide's step 3 does
		default:
			return err
		}
	}
	fmt.Printf("completed %d of %d\n", len(items)-failed, len(items))
	if failed > 0 {
		os.Exit(1)
	}
	return nil
}

func call(ctx context.Context, c *anthropic.Client, model string, it item) error {
	params := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: max(it.MaxTokens, 1)}
	if it.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: it.System}}
	}
	if it.Prompt != "" {
		params.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(it.Prompt))}
	}
	for _, m := range it.Messages {
		block := anthropic.NewTextBlock(m.Content)
		if m.Role == "assistant" {
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(block))
		} else {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(block))
		}
	}
	_, err := c.Messages.New(ctx, params)
	return err
}

func readItems(path string) ([]item, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("RATELAB_ITEMS_FILE: %w", err)
	}
	defer f.Close()
	var items []item
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var it item
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		items = append(items, it)
	}
	return items, sc.Err()
}
