package sharedlimit_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/sharedlimit"
	"github.com/ratelab/ratelab/strategies"
)

// Two processes (here two Shared values on one Redis) share a key's limit
// of 2 calls at once and 60,000 tokens a minute: the first two calls get the
// two slots, and a third waits until one of them is done.
func ExampleNew() {
	srv := miniredis.NewMiniRedis() // in production: one redis-server all workers reach
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()

	ctx := context.Background()
	cfg := sharedlimit.Config{
		Client:        client, // or URL: "redis://127.0.0.1:6379/0"
		Key:           "team-a",
		MaxConcurrent: 2,
		TPM:           60000,
	}
	var procs []*sharedlimit.Shared
	for range 2 {
		s, err := sharedlimit.New(ctx, cfg)
		if err != nil {
			log.Fatal(err) // sharedlimit: redis at …: unreachable: …
		}
		defer s.Close()
		procs = append(procs, s)
	}

	cost := strategies.Cost{InputTokens: 1200, MaxTokens: 800}
	first, _ := procs[0].Acquire(ctx, cost)
	second, _ := procs[1].Acquire(ctx, cost)
	fmt.Println("in flight:", procs[0].Stats().InFlight+procs[1].Stats().InFlight, "of", cfg.MaxConcurrent)

	// Done settles each call's 2,000-token reservation to its usage and
	// releases its slot, which the waiting call in the other process takes.
	third := make(chan strategies.Permit)
	go func() {
		p, _ := procs[1].Acquire(ctx, cost)
		third <- p
	}()
	first.Done(strategies.Outcome{Kind: strategies.Success, Usage: strategies.Usage{InputTokens: 1200, OutputTokens: 150}})
	p := <-third
	fmt.Println("third call admitted after the first ended")
	second.Done(strategies.Outcome{Kind: strategies.Success, Usage: strategies.Usage{InputTokens: 1200, OutputTokens: 300}})
	p.Done(strategies.Outcome{Kind: strategies.Success, Usage: strategies.Usage{InputTokens: 1200, OutputTokens: 90}})
	fmt.Println("permits:", procs[0].Stats().Permits, procs[1].Stats().Permits)
	// Output:
	// in flight: 2 of 2
	// third call admitted after the first ended
	// permits: 1 2
}
