package sharedlimit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// TestFleetConverges: 4 Adaptive strategies, each with a Fleet of its own on
// the real Redis under one key, keep 12 callers each busy against a server
// that holds 20 calls at once (50 ms each) and refuses the rest. Together
// they settle on one limit: the fleet's limit is about 20 and the windows,
// each a share of it, sum to about 20, where without the fleet each would
// probe to the whole of it.
func TestFleetConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 3 s")
	}
	c := realClient(t)
	key := testKey(t, c)
	const (
		procs, callers, limit = 4, 12, 20
		latency               = 50 * time.Millisecond
	)
	var inServer, throttled, served atomic.Int64
	call := func() strategies.Outcome {
		if inServer.Add(1) > limit {
			inServer.Add(-1)
			throttled.Add(1)
			return strategies.Outcome{Kind: strategies.Throttled, Status: 429}
		}
		time.Sleep(latency)
		inServer.Add(-1)
		served.Add(1)
		return strategies.Outcome{Kind: strategies.Success, Status: 200, Latency: latency}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	var (
		wg     sync.WaitGroup
		fleets []*Fleet
		strats []*strategies.Adaptive
	)
	for range procs {
		f, err := NewFleet(t.Context(), FleetConfig{Client: c, Key: key, Interval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		a := strategies.NewAdaptive(strategies.AdaptiveConfig{Fleet: f})
		fleets, strats = append(fleets, f), append(strats, a)
		for range callers {
			wg.Go(func() {
				for ctx.Err() == nil {
					p, err := a.Acquire(ctx, strategies.Cost{Provider: "p", Key: "k"})
					if err != nil {
						return
					}
					p.Done(call())
				}
			})
		}
	}
	// The windows in the last second, sampled every 50 ms.
	time.Sleep(2 * time.Second)
	var sums []int
	for ctx.Err() == nil {
		sum := 0
		for _, a := range strats {
			sum += int(a.Stats().Limit)
		}
		sums = append(sums, sum)
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	fleetLimit, peers := fleets[0].Share("p", "k", 0)
	lo, hi := sums[0], sums[0]
	total := 0
	for _, s := range sums {
		lo, hi, total = min(lo, s), max(hi, s), total+s
	}
	mean := float64(total) / float64(len(sums))
	t.Logf("fleet limit %d over %d peers; windows summed over the last second: mean %.1f, min %d, max %d; %d served, %d refused",
		fleetLimit, peers, mean, lo, hi, served.Load(), throttled.Load())
	if peers != procs {
		t.Errorf("peers = %d, want %d", peers, procs)
	}
	if fleetLimit < limit-4 || fleetLimit > limit+4 {
		t.Errorf("fleet limit %d, want about %d", fleetLimit, limit)
	}
	if mean < 0.7*limit || mean > 1.2*limit {
		t.Errorf("windows sum to %.1f on average, want about %d", mean, limit)
	}
}

// TestNewFleetErrors: NewFleet names what is wrong with its config, and an
// unreachable Redis is ErrUnreachable.
func TestNewFleetErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg  FleetConfig
		want string
	}{
		{FleetConfig{Key: "k"}, "no redis"},
		{FleetConfig{URL: "redis://127.0.0.1:1/0"}, "key is empty"},
		{FleetConfig{URL: "redis://127.0.0.1:1/0", Key: "a{b}"}, "contains '{' or '}'"},
		{FleetConfig{URL: "redis://127.0.0.1:1/0", Key: "k", Interval: -1}, "must not be negative"},
	} {
		if _, err := NewFleet(t.Context(), tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewFleet(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
		}
	}
	_, err := NewFleet(t.Context(), FleetConfig{URL: "redis://127.0.0.1:1/0", Key: "k", OpTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("NewFleet of an unreachable Redis = %v, want ErrUnreachable", err)
	}
}
