package clock

import (
	"container/list"
	"context"
	"sync"
)

// A WaitGroup waits for a set of goroutines of a run to end, as
// sync.WaitGroup does, blocking through its clock so that a simulated run
// can go on meanwhile. Create it with NewWaitGroup.
type WaitGroup struct {
	c    Clock
	mu   sync.Mutex
	n    int
	zero *Event // fired when n drops to 0; nil while n is 0
}

// NewWaitGroup returns a WaitGroup waiting through c (nil: Real).
func NewWaitGroup(c Clock) *WaitGroup { return &WaitGroup{c: Or(c)} }

// Add adds delta, which may be negative, to the counter. It panics if the
// counter goes negative.
func (wg *WaitGroup) Add(delta int) {
	wg.mu.Lock()
	defer wg.mu.Unlock()
	wg.n += delta
	switch {
	case wg.n < 0:
		panic("clock: negative WaitGroup counter")
	case wg.n == 0 && wg.zero != nil:
		wg.zero.Fire()
		wg.zero = nil
	case wg.n > 0 && wg.zero == nil:
		wg.zero = wg.c.NewEvent()
	}
}

// Done decrements the counter by one.
func (wg *WaitGroup) Done() { wg.Add(-1) }

// Wait blocks until the counter is zero.
func (wg *WaitGroup) Wait() {
	wg.mu.Lock()
	e := wg.zero
	wg.mu.Unlock()
	if e != nil {
		wg.c.Wait(context.Background(), e, 0) //nolint:errcheck // Background never ends
	}
}

// A Chan is an unbuffered channel between goroutines of a run: a send
// completes when a receiver takes the value. Under Real it is a Go channel;
// under another clock it is built on Events, and receivers and senders are
// served in the order they came. Create it with NewChan.
type Chan[T any] struct {
	ch chan T // Real's; nil under another clock

	c      Clock
	mu     sync.Mutex
	closed bool
	recvq  list.List // of *chanWaiter[T], receivers waiting
	sendq  list.List // of *chanWaiter[T], senders waiting
}

type chanWaiter[T any] struct {
	e    *Event
	v    T
	ok   bool // a receiver got v; a sender's v was taken
	elem *list.Element
}

// NewChan returns an unbuffered channel whose operations block through c
// (nil: Real).
func NewChan[T any](c Clock) *Chan[T] {
	c = Or(c)
	if _, ok := c.(realClock); ok {
		return &Chan[T]{ch: make(chan T), c: c}
	}
	return &Chan[T]{c: c}
}

// TrySend hands v to a receiver waiting for it, if there is one, and
// reports whether it did. It panics on a closed channel.
func (ch *Chan[T]) TrySend(v T) bool {
	if ch.ch != nil {
		select {
		case ch.ch <- v:
			return true
		default:
			return false
		}
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.handLocked(v)
}

// handLocked gives v to the first waiting receiver, if any.
func (ch *Chan[T]) handLocked(v T) bool {
	if ch.closed {
		panic("clock: send on closed Chan")
	}
	f := ch.recvq.Front()
	if f == nil {
		return false
	}
	r := ch.recvq.Remove(f).(*chanWaiter[T])
	r.v, r.ok = v, true
	r.e.Fire()
	return true
}

// Send waits until a receiver takes v, or ctx ends (then v was not taken
// and Send returns ctx's error). It panics on a closed channel.
func (ch *Chan[T]) Send(ctx context.Context, v T) error {
	if ch.ch != nil {
		select {
		case ch.ch <- v:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ch.mu.Lock()
	if ch.handLocked(v) {
		ch.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		ch.mu.Unlock()
		return err
	}
	w := &chanWaiter[T]{e: ch.c.NewEvent(), v: v}
	w.elem = ch.sendq.PushBack(w)
	ch.mu.Unlock()
	_, err := ch.c.Wait(ctx, w.e, 0)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if w.ok {
		return nil
	}
	ch.sendq.Remove(w.elem)
	return err
}

// Recv waits for a value. ok is false when the channel is closed and no
// sender is waiting.
func (ch *Chan[T]) Recv() (v T, ok bool) {
	if ch.ch != nil {
		v, ok = <-ch.ch
		return v, ok
	}
	ch.mu.Lock()
	if f := ch.sendq.Front(); f != nil {
		s := ch.sendq.Remove(f).(*chanWaiter[T])
		s.ok = true
		s.e.Fire()
		ch.mu.Unlock()
		return s.v, true
	}
	if ch.closed {
		ch.mu.Unlock()
		return v, false
	}
	w := &chanWaiter[T]{e: ch.c.NewEvent()}
	w.elem = ch.recvq.PushBack(w)
	ch.mu.Unlock()
	ch.c.Wait(context.Background(), w.e, 0) //nolint:errcheck // Background never ends
	return w.v, w.ok
}

// Close closes the channel: waiting receivers, and those to come, get
// ok false. Closing it twice panics.
func (ch *Chan[T]) Close() {
	if ch.ch != nil {
		close(ch.ch)
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		panic("clock: close of closed Chan")
	}
	ch.closed = true
	for ch.recvq.Len() > 0 {
		r := ch.recvq.Remove(ch.recvq.Front()).(*chanWaiter[T])
		r.e.Fire()
	}
}
