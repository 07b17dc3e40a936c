package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/strategies"
)

// Queue is where the items of a batch shared by several processes come
// from instead of Batch.Input: one job's items, handed out to whichever
// worker asks first (package batch/queue implements it on a Redis Stream).
// The batch's output, resume and exactly-once rules are those of a batch on
// a file; what is new is that an item may reach two workers (one that was
// thought dead, and the one that took its items over), so each worker's
// output holds each id at most once and the job's collected output at
// least once per id.
type Queue interface {
	// Start is called once the output is read and repaired, before any
	// call: out is the output, open for appending (for Sync), and path its
	// name; the queue may read it (through another descriptor or ReadAt)
	// to learn which items it holds.
	Start(ctx context.Context, path string, out *os.File) error
	// Next blocks until an item is available and returns its input line
	// number (1-based) and the line's JSON. It returns io.EOF once every
	// item of the job is recorded (by this worker or another), and any
	// other error to stop the batch (wrapping ErrQuota when another worker
	// stopped the job for a spent quota).
	Next(ctx context.Context) (line int, data []byte, err error)
	// Skip is called for an item Next returned that the output already
	// holds: the queue acknowledges it without a call.
	Skip(line int, id string)
	// Recorded is called once r's line is written to the output (not yet
	// synced): the queue syncs the output, then acknowledges the item.
	Recorded(line int, r engine.Result)
	// Stop is called, once, when the batch stops for a spent quota, with the
	// refusal: the queue tells every other worker.
	Stop(cause error)
}

// queueSource streams the queue's items, skipping the ones the output
// holds and the ones this run has already taken (an item reclaimed from a
// worker that was only slow can come back to the same worker).
func (b *Batch) queueSource(ctx context.Context, ids map[idKey]idState) engine.Source {
	return func(yield func(engine.Item, error) bool) {
		for {
			line, data, err := b.Queue.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(engine.Item{}, err)
				return
			}
			in, ie := decodeInput(b.queueName(), line, data)
			if ie != nil {
				// Enqueue validated every line: a bad one is not ours.
				yield(engine.Item{}, ie)
				return
			}
			if b.rt != nil {
				if _, err := b.rt.route(in.Provider); err != nil {
					yield(engine.Item{}, &InputError{File: b.queueName(), Line: line, Path: "metadata.provider", Message: fmt.Sprintf("%s: %v", in.Provider, err)})
					return
				}
			}
			k := keyOf(in.ID)
			if st := ids[k]; st.done != notDone {
				b.Queue.Skip(line, in.ID)
				continue
			}
			if !b.take(k) {
				continue // in progress or recorded by this run: it acknowledges it
			}
			if !yield(b.item(line, in), nil) {
				return
			}
		}
	}
}

// take marks the item with key k taken by this run; false when it is
// already (in progress, or recorded).
func (b *Batch) take(k idKey) bool {
	b.takenMu.Lock()
	defer b.takenMu.Unlock()
	if b.taken == nil {
		b.taken = make(map[idKey]struct{})
	}
	if _, ok := b.taken[k]; ok {
		return false
	}
	b.taken[k] = struct{}{}
	return true
}

// QueueHolder is a Queue that can tell whether this worker still holds an
// item it handed out: one taken over by another worker (this one was
// frozen, or cut off from the queue, for longer than its lease) is the
// other's to make. The batch asks before every attempt
// (engine.Config.Held) and drops an item no longer held: no call, no
// result; should it come back to this worker, it is made then.
type QueueHolder interface {
	Queue
	// Held reports whether this worker still holds the item of input line
	// line. It may take a round trip to the queue; when the queue cannot
	// tell (unreachable), it reports true (a duplicate result is dropped
	// by collect, an item never made would be lost).
	Held(line int) bool
}

// held is engine.Config.Held for a QueueHolder: an item no longer held is
// forgotten, so that it is made should it come back.
func (b *Batch) held(q QueueHolder) func(int, string) bool {
	return func(index int, id string) bool {
		if q.Held(index + 1) {
			return true
		}
		b.takenMu.Lock()
		delete(b.taken, keyOf(id))
		b.lost++
		b.takenMu.Unlock()
		if b.rt != nil {
			b.rt.release(id)
		}
		return false
	}
}

// queueName names the queue's items in errors: Input, which a queue batch
// sets to the job's name.
func (b *Batch) queueName() string {
	if b.Input != "" {
		return b.Input
	}
	return "queue"
}

// QueueGate is a Queue that holds calls back while it cannot reach its
// queue: a worker cut off from the others makes no new call, since the
// items it holds are being taken over by them (and, with limits shared
// through the same Redis, its share of them is no longer counted).
type QueueGate interface {
	Queue
	// Admit waits until the queue is reachable, or ctx ends.
	Admit(ctx context.Context) error
	// Reachable reports whether it is now.
	Reachable() bool
}

// errQueueUnreachable is the reason given with a permit handed back unused.
var errQueueUnreachable = errors.New("batch: queue unreachable; this worker is paused")

// queueGated admits an attempt only while the queue is reachable; a permit
// granted while it was lost is handed back unused, as gated does.
type queueGated struct {
	strategies.Strategy
	q QueueGate
}

// Clock tells the wrapped strategy's clock.
func (g queueGated) Clock() clock.Clock { return strategies.ClockOf(g.Strategy) }

func (g queueGated) Acquire(ctx context.Context, cost strategies.Cost) (strategies.Permit, error) {
	for {
		if err := g.q.Admit(ctx); err != nil {
			return nil, err
		}
		pm, err := g.Strategy.Acquire(ctx, cost)
		if err != nil || g.q.Reachable() {
			return pm, err
		}
		pm.Done(strategies.Outcome{Kind: strategies.Abandoned, Err: errQueueUnreachable})
	}
}
