package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/redistest"
)

// TestSharedAdaptiveFleet: 4 loadgen batch processes × 250 items with
// --strategy adaptive against one mock that holds 20 calls at once, first
// each on its own, then sharing the learned limit through a real Redis
// (--shared-redis, --shared-key). Every item is done exactly once in both;
// sharing, the fleet holds one limit and one process at a time probes above
// it, so the mock refuses far fewer calls than the unshared fleet, measured
// side by side. Since adaptive's slow start grows 16 times a round trip
// and lands on its first refusal's count, most of either fleet's 429s are
// each process's slow-start overshoot, which sharing does not remove (the
// probes, which it does, are few): the ratio of 429s measured 0.42–0.81 in
// 5 runs on a quiet machine (13–25 shared against 25–32 unshared), where it
// was 0.29–0.55 with doubling. The bound is that sharing never costs 429s;
// that it saves a fixed share of them is no longer a property to assert.
func TestSharedAdaptiveFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const (
		workers, items, limit = 4, 250, 20
		callTime              = 100 * time.Millisecond
	)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	run := func(shared bool) (attempts, throttled int64) {
		w, tally, _, key := newSharedWorkers(t, workers, items, limit, callTime, 10*time.Second)
		w.args = []string{"--strategy", "adaptive"}
		if shared {
			w.args = append(w.args, "--shared-redis", redistest.URL(t), "--shared-key", key,
				"--shared-peers", strconv.Itoa(workers))
		}
		sums := w.runAll(ctx, 0, 1, 2, 3)
		w.checkOutputs(items)
		var sumAttempts, sumThrottled int
		for i, s := range sums {
			if shared && s.Shared != key {
				t.Errorf("worker %d: summary's shared = %q, want %q", i, s.Shared, key)
			}
			sumAttempts += s.Run.Attempts
			sumThrottled += s.Run.Throttled
		}
		t.Logf("shared %v: attempts %d (server %d), 429s %d (server %d), wall %.2fs",
			shared, sumAttempts, tally.attempts.Load(), sumThrottled, tally.throttled.Load(), tally.span().Seconds())
		if got := tally.attempts.Load(); got != int64(sumAttempts) {
			t.Errorf("shared %v: server saw %d attempts, workers report %d", shared, got, sumAttempts)
		}
		if got := tally.attempts.Load() - tally.throttled.Load(); got != workers*items {
			t.Errorf("shared %v: server served %d calls, want exactly %d", shared, got, workers*items)
		}
		return tally.attempts.Load(), tally.throttled.Load()
	}
	alone, aloneThrottled := run(false)
	fleet, fleetThrottled := run(true)
	ratio := float64(fleetThrottled) / float64(max(aloneThrottled, 1))
	t.Logf("429s: %d shared vs %d unshared (ratio %.2f); attempts %d vs %d", fleetThrottled, aloneThrottled, ratio, fleet, alone)
	if aloneThrottled < 10 {
		t.Fatalf("the unshared fleet met only %d 429s: the test no longer measures anything", aloneThrottled)
	}
	if fleetThrottled > aloneThrottled {
		t.Errorf("sharing the learned limit: %d 429s against %d unshared (ratio %.2f), want no more", fleetThrottled, aloneThrottled, ratio)
	}
}
