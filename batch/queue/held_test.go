package queue

import (
	"context"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/redistest"
)

// TestHeld: a worker holds what it took until its lease ends, and Held
// says so with no round trip; once it has been silent past the lease and
// another worker has taken its items over, Held asks Redis and says no,
// while the new holder holds them; an item still its own after the lease
// (nobody took it over) is held, and Held's script resets its idle time.
func TestHeld(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	name := job(t)
	if _, err := Enqueue(ctx, c, name, writeInput(t, 40, ""), nil); err != nil {
		t.Fatal(err)
	}
	const lease = 500 * time.Millisecond
	a, err := NewWorker(ctx, c, name, WorkerOptions{Name: "a", Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewWorker(ctx, c, name, WorkerOptions{Name: "b", Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	// a takes the first 16 (its history is empty: the first read says so).
	var lines []int
	for range take {
		line, _, err := a.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	for _, l := range lines {
		if !a.Held(l) {
			t.Fatalf("a does not hold line %d it has just taken", l)
		}
	}
	if a.heldChecks != 0 {
		t.Errorf("a made %d round trips to tell it holds what it just took, want 0", a.heldChecks)
	}

	// a is silent past its lease; b takes over all but the last of its
	// items (XAUTOCLAIM, as b's fetch does every lease/4), which a then
	// asks about first, so that nobody has taken it.
	time.Sleep(lease + 100*time.Millisecond)
	if !a.Held(lines[take-1]) {
		t.Errorf("a does not hold line %d, which nobody took over", lines[take-1])
	}
	if a.heldChecks != 1 {
		t.Errorf("a made %d round trips past its lease, want 1", a.heldChecks)
	}
	b.mu.Lock()
	b.backlog = false
	b.mu.Unlock()
	msgs, err := b.fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != take-1 {
		t.Fatalf("b took over %d items, want %d (a's, but the one Held refreshed)", len(msgs), take-1)
	}
	for _, l := range lines[:take-1] {
		if a.Held(l) {
			t.Errorf("a still holds line %d, which b took over", l)
		}
		if !b.Held(l) {
			t.Errorf("b does not hold line %d, which it took over", l)
		}
	}
	if a.lostItems != take-1 || b.heldChecks != 0 {
		t.Errorf("a found %d items lost, b made %d round trips; want %d, 0", a.lostItems, b.heldChecks, take-1)
	}
	// Asked again, a still does not hold it (a round trip, not a stale yes).
	if a.Held(lines[0]) {
		t.Errorf("a holds line %d again", lines[0])
	}
}
