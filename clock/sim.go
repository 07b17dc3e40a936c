package clock

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Sim is a simulated clock: a deterministic cooperative scheduler for the
// goroutines of a run.
//
// A Sim may run several runs one after the other; its time goes on from
// where the last one left it. Now may be called from any goroutine; Go,
// Sleep, Wait and Event.Fire only from goroutines of a run in progress.
// How it schedules, and what stalls it, is the package doc's section
// Simulated time.
type Sim struct {
	mu      sync.Mutex
	now     time.Time
	running bool
	ctx     context.Context // Run's
	cur     *gor            // the goroutine holding the baton
	ready   gorQueue
	// started are goroutines started by Go (not by a timer) that have not
	// yet run, when the Sim is shuffled: they start in the order they were
	// started (see scheduleLocked); unshuffled, they are queued in ready.
	started gorQueue
	live    int // goroutines of the run not ended
	timers  timerHeap
	pending int    // timers in timers not set by a helper's wait (see GoHelper)
	seq     uint64 // orders timers set for the same instant
	blocked gorList
	groups  map[context.Context]*ctxGroup
	order   []*ctxGroup // groups by creation, for a deterministic wake order
	dead    bool        // a deadlock was declared: the run is ending
	err     error
	steps   uint64        // scheduling decisions, for the stall watch
	broken  error         // a run stalled: the Sim can run no more
	done    chan struct{} // closed when the run's last goroutine ends
	idle    []*gor        // goroutines parked for reuse (see spawnLocked)
	fire    func(*Event)
	// rng, when set (Shuffle), orders the ready goroutines and the timers
	// of one instant by chance; nil: in the order they became ready or
	// were set.
	rng *rand.Rand
}

var _ Clock = (*Sim)(nil)

// Shuffle makes s order the events of one instant by chance, drawn from
// seed, as a real run (and testing/synctest) orders them: which ready
// goroutine runs next, and which of the timers due at one instant fires
// first. Goroutines started with Go keep the order they were started among
// themselves, as Go's runtime about keeps it: the next of them is drawn as
// one of the ready goroutines. The same seed gives the same order. Without
// it, ready goroutines run in the order they became ready and timers fire in
// the order they were set. Call it before Run.
func (s *Sim) Shuffle(seed uint64) {
	s.mu.Lock()
	s.rng = rand.New(rand.NewPCG(seed, 0x5eed))
	s.mu.Unlock()
}

// NewSim returns a simulated clock whose time is start until a run moves it.
func NewSim(start time.Time) *Sim {
	s := &Sim{now: start, groups: make(map[context.Context]*ctxGroup)}
	s.fire = s.fired
	return s
}

// gor is one goroutine of a run.
type gor struct {
	baton  chan struct{} // receives the right to run
	f      func()        // what to run when handed the baton; nil: end
	helper bool          // started by GoHelper: its timers keep no run alive

	// The wait under way, guarded by Sim.mu. gen changes at every wait and
	// wake-up, so that an Event's stale record of a waiter is ignored.
	gen          uint64
	waiting      bool
	reason       wakeReason
	timer        *simTimer
	group        *ctxGroup
	gprev, gnext *gor // in group's list
	bprev, bnext *gor // in Sim.blocked
}

type wakeReason uint8

const (
	wokeFired wakeReason = iota
	wokeTimeout
	wokeCtx
	wokeKilled
)

// Run runs f as the first goroutine of a run and returns when every
// goroutine of the run has ended. It returns an error when the run
// deadlocked (see Sim), or when a run is already in progress; ctx ending
// does not by itself make it an error: f reports that as it sees fit.
func (s *Sim) Run(ctx context.Context, f func()) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("clock: Sim.Run called while a run is in progress")
	}
	if s.broken != nil {
		s.mu.Unlock()
		return fmt.Errorf("clock: Sim.Run after a stalled run: %w", s.broken)
	}
	s.running, s.ctx, s.dead, s.err = true, ctx, false, nil
	s.done = make(chan struct{})
	g := s.spawnLocked(f, &s.ready)
	s.cur = s.ready.pop()
	done := s.done
	s.mu.Unlock()
	g.baton <- struct{}{}
	if err := s.watch(done); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.ctx, s.cur = false, nil, nil
	// The goroutines kept for reuse end with the run.
	for _, g := range s.idle {
		g.baton <- struct{}{}
	}
	clear(s.idle)
	s.idle = s.idle[:0]
	// Timers still pending belong to a run that is over: dropped, they
	// cannot move the time of the next one.
	for _, t := range s.timers {
		t.index = -1
	}
	clear(s.timers)
	s.timers, s.pending = s.timers[:0], 0
	return s.err
}

// stallAfter is how long, in real time, a run may go without a scheduling
// decision before Run reports it stalled.
var stallAfter = 30 * time.Second

// watch waits for the run to end. A run whose goroutine holding the baton
// makes no scheduling decision for stallAfter of real time is blocked
// outside the clock and would never end: watch reports it as an error, and
// the Sim runs no more (its goroutines are left where they are; those that
// come back end at their next wait).
func (s *Sim) watch(done <-chan struct{}) error {
	t := time.NewTicker(stallAfter / 4)
	defer t.Stop()
	last, quiet := uint64(0), 0
	for {
		select {
		case <-done:
			return nil
		case <-t.C:
		}
		s.mu.Lock()
		if s.steps != last {
			last, quiet = s.steps, 0
			s.mu.Unlock()
			continue
		}
		if quiet++; quiet < 4 {
			s.mu.Unlock()
			continue
		}
		s.broken = fmt.Errorf("clock: simulated run stalled at %s: no goroutine of the run has handed over for %v of real time, so one blocks outside the clock "+
			"(a bare channel, a socket, a lock held across a wait, or a strategy or client given no Clock)", s.now.Format(time.RFC3339Nano), stallAfter)
		s.dead = true
		err := s.broken
		s.mu.Unlock()
		return err
	}
}

// Now implements Clock.
func (s *Sim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Go implements Clock: f joins the back of the ready queue (shuffled, of the
// goroutines started and not yet run; see Shuffle). It panics when no run is
// in progress.
func (s *Sim) Go(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		panic("clock: Sim.Go called outside Sim.Run")
	}
	if s.broken != nil {
		return // the run stalled: nothing will run f
	}
	s.spawnLocked(f, s.startQueueLocked())
}

// startQueueLocked is where a goroutine started with Go (or GoHelper)
// waits for its first turn: in the order they were started when shuffled
// (see scheduleLocked), among the ready ones otherwise.
func (s *Sim) startQueueLocked() *gorQueue {
	if s.rng != nil {
		return &s.started
	}
	return &s.ready
}

// goHelper implements GoHelper.
func (s *Sim) goHelper(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		panic("clock: Sim.Go called outside Sim.Run")
	}
	if s.broken != nil {
		return
	}
	s.spawnLocked(f, s.startQueueLocked()).helper = true
}

// maxIdle bounds the goroutines a Sim keeps parked for reuse.
const maxIdle = 1024

// spawnLocked queues f in q as a goroutine of the run. It runs on a
// goroutine that an earlier one left idle when there is one (its stack has
// already grown: a simulated run starts a goroutine per request), or else
// on a new one, parked until it is handed the baton.
func (s *Sim) spawnLocked(f func(), q *gorQueue) *gor {
	var g *gor
	if n := len(s.idle); n > 0 {
		g = s.idle[n-1]
		s.idle[n-1] = nil
		s.idle = s.idle[:n-1]
		g.helper = false
	} else {
		g = &gor{baton: make(chan struct{}, 1)}
		go s.runner(g)
	}
	g.f = f
	s.live++
	q.push(g)
	return g
}

// runner runs g's functions, one each time g is handed the baton with one,
// until it is handed none or one of them does not return normally.
func (s *Sim) runner(g *gor) {
	for {
		<-g.baton
		if g.f == nil || !s.runOne(g) {
			return
		}
	}
}

// runOne runs g's function and ends it, and reports whether g may run
// another: not when the function did not return (runtime.Goexit, a panic).
func (s *Sim) runOne(g *gor) (reuse bool) {
	f := g.f
	g.f = nil
	returned := false
	defer func() { reuse = s.exit(g, returned) }()
	f()
	returned = true
	return
}

// exit ends the current goroutine g and hands over to the next. It reports
// whether g was kept for reuse.
func (s *Sim) exit(g *gor, returned bool) bool {
	s.mu.Lock()
	if s.broken != nil {
		s.mu.Unlock()
		return false
	}
	s.live--
	keep := returned && !s.dead && len(s.idle) < maxIdle
	if keep {
		s.idle = append(s.idle, g)
	}
	next := s.scheduleLocked()
	s.cur = next
	if next == nil {
		close(s.done)
	}
	s.mu.Unlock()
	if next != nil {
		next.baton <- struct{}{}
	}
	return keep
}

// Sleep implements Clock.
func (s *Sim) Sleep(ctx context.Context, d time.Duration) error {
	_, err := s.Wait(ctx, nil, d)
	return err
}

// Wait implements Clock.
func (s *Sim) Wait(ctx context.Context, e *Event, d time.Duration) (bool, error) {
	if e != nil && e.Fired() {
		return true, nil
	}
	if e == nil && d <= 0 {
		return false, ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		runtime.Goexit()
	}
	g := s.cur
	if g == nil {
		s.mu.Unlock()
		panic("clock: Sim.Wait called outside Sim.Run")
	}
	g.gen++
	g.waiting = true
	if e != nil {
		e.waiters = append(e.waiters, simWaiter{g, g.gen})
	}
	if d > 0 {
		g.timer = s.addTimerLocked(d, g, nil)
		g.timer.helper = g.helper
		if g.helper {
			s.pending--
		}
	}
	if ctx.Done() != nil {
		s.joinLocked(ctx, g)
	}
	s.blocked.push(g)
	next := s.scheduleLocked()
	s.cur = next
	s.mu.Unlock()
	if next != g {
		next.baton <- struct{}{}
		<-g.baton
	}
	switch g.reason {
	case wokeFired:
		return true, nil
	case wokeTimeout:
		return false, nil
	case wokeCtx:
		return false, ctx.Err()
	}
	runtime.Goexit()
	panic("unreachable")
}

// AfterFunc implements Clock: f runs as a new goroutine of the run, queued
// as ready when its timer fires. A timer set between runs fires in the next
// one; one still pending when its run ends is dropped.
func (s *Sim) AfterFunc(d time.Duration, f func()) func() bool {
	s.mu.Lock()
	t := s.addTimerLocked(d, nil, f)
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.index < 0 {
			return false
		}
		s.removeTimerLocked(t)
		return true
	}
}

// NewEvent implements Clock.
func (s *Sim) NewEvent() *Event {
	return &Event{onFire: s.fire}
}

// simWaiter is a goroutine waiting for an Event, as of its wait number gen.
type simWaiter struct {
	g   *gor
	gen uint64
}

// fired readies e's waiters, in the order they started waiting.
func (s *Sim) fired(e *Event) {
	s.mu.Lock()
	for _, w := range e.waiters {
		if w.g.gen == w.gen {
			s.wakeLocked(w.g, wokeFired)
		}
	}
	e.waiters = nil
	s.mu.Unlock()
}

// wakeLocked ends g's wait for reason and queues it as ready.
func (s *Sim) wakeLocked(g *gor, reason wakeReason) {
	if !g.waiting {
		return
	}
	g.waiting = false
	g.gen++
	g.reason = reason
	if g.timer != nil {
		if g.timer.index >= 0 {
			s.removeTimerLocked(g.timer)
		}
		g.timer = nil
	}
	if g.group != nil {
		s.leaveLocked(g)
	}
	s.blocked.remove(g)
	s.ready.push(g)
}

// scheduleLocked returns the goroutine to run next: the first ready one,
// after waking those whose context ended or moving the time to the next
// timer when none is. It returns nil when the run's goroutines have all
// ended.
func (s *Sim) scheduleLocked() *gor {
	s.steps++
	for {
		if s.rng != nil && s.ready.len()+s.started.len() > 0 {
			// A goroutine just started runs after those started before
			// it: the oldest of them is drawn as one ready goroutine.
			// Drawn one by one, a run that starts a worker per item let
			// late items reach a semaphore as often as early ones:
			// scenarios/multi-provider.yaml's shared semaphore(20) then
			// took 719 attempts, where the in-test run takes 3,128–9,010
			// (started in order: 9,010, and 20-concurrent's semaphore(50)
			// completes 190 of 200).
			n := s.ready.len() + min(s.started.len(), 1)
			i := s.rng.IntN(n)
			if i == s.ready.len() {
				return s.started.pop()
			}
			s.ready.swapHead(i)
		}
		if g := s.ready.pop(); g != nil {
			return g
		}
		if s.live == 0 {
			return nil
		}
		if s.wakeEndedLocked() {
			continue
		}
		if s.pending > 0 {
			// Unshuffled, one timer at a time: what it readies runs to its
			// next wait before the next timer due at the same instant
			// fires, in the order the timers were set. Shuffled (Shuffle),
			// every timer of the instant fires first and the goroutines
			// they woke run in a seeded random order, as Go's runtime
			// orders them: in scenarios/20-concurrent.yaml semaphore(50)
			// then completes 190 of 200, within the 178–192 of runs under
			// testing/synctest, where one timer at a time gives 160 (and
			// every timer first in FIFO order 200).
			t := s.timers[0]
			s.removeTimerLocked(t)
			if t.when.After(s.now) {
				s.now = t.when
			}
			for {
				if t.g != nil {
					t.g.timer = nil
					s.wakeLocked(t.g, wokeTimeout)
				} else {
					s.spawnLocked(t.f, &s.ready)
				}
				// Shuffled, every timer of the instant fires before any of
				// their goroutines runs, and those run in a random order.
				if s.rng == nil || s.pending == 0 || !s.timers[0].when.Equal(s.now) {
					break
				}
				t = s.timers[0]
				s.removeTimerLocked(t)
			}
			continue
		}
		s.deadlockLocked()
	}
}

// deadlockLocked records that the run can never go on and readies every
// blocked goroutine to end it.
// Helpers left when every other goroutine has ended are no deadlock: they
// are ended the same way, and the run ends without an error.
func (s *Sim) deadlockLocked() {
	n := s.blocked.n
	helpers := 0
	for g := s.blocked.head; g != nil; g = g.bnext {
		if g.helper {
			helpers++
		}
	}
	if helpers < n || helpers < s.live {
		s.err = &DeadlockError{At: s.now, Blocked: n, Helpers: helpers, CtxEnded: s.ctx.Err() != nil, Stacks: s.stacks()}
	}
	s.dead = true
	for s.blocked.head != nil {
		s.wakeLocked(s.blocked.head, wokeKilled)
	}
}

// stacks returns the stacks of the goroutines waiting in s.Wait.
func (s *Sim) stacks() string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 16<<20 {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	mark := fmt.Sprintf("clock.(*Sim).Wait(%p", s)
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, mark) {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// A DeadlockError is Sim.Run's error for a run that could never go on:
// every goroutine blocked, no timer pending, no context left to end.
type DeadlockError struct {
	At       time.Time // the simulated time it happened
	Blocked  int       // the goroutines blocked
	Helpers  int       // how many of them were helpers (GoHelper)
	CtxEnded bool      // the run's context had ended, but they did not wait for it
	// Stacks are the stacks of the blocked goroutines, as runtime.Stack
	// prints them: where each one waits.
	Stacks string
}

// Error implements error; it leaves out the stacks.
func (e *DeadlockError) Error() string {
	note := ""
	if e.Helpers > 0 {
		note = fmt.Sprintf(" (%d of them helpers)", e.Helpers)
	}
	if e.CtxEnded {
		note += " (the run's context has ended, but they do not wait for it)"
	}
	return fmt.Sprintf("clock: simulated run deadlocked at %s: %d goroutine(s) blocked with no timer pending%s",
		e.At.Format(time.RFC3339Nano), e.Blocked, note)
}

// A ctxGroup is the goroutines waiting under one context, so that an idle
// run checks each context once, however many wait for it.
type ctxGroup struct {
	ctx        context.Context
	head, tail *gor
	gone       bool // removed from Sim.groups; dropped from Sim.order at the next check
}

func (s *Sim) joinLocked(ctx context.Context, g *gor) {
	grp := s.groups[ctx]
	if grp == nil {
		grp = &ctxGroup{ctx: ctx}
		s.groups[ctx] = grp
		s.order = append(s.order, grp)
	}
	g.group = grp
	g.gprev, g.gnext = grp.tail, nil
	if grp.tail != nil {
		grp.tail.gnext = g
	} else {
		grp.head = g
	}
	grp.tail = g
}

func (s *Sim) leaveLocked(g *gor) {
	grp := g.group
	if g.gprev != nil {
		g.gprev.gnext = g.gnext
	} else {
		grp.head = g.gnext
	}
	if g.gnext != nil {
		g.gnext.gprev = g.gprev
	} else {
		grp.tail = g.gprev
	}
	g.group, g.gprev, g.gnext = nil, nil, nil
	if grp.head == nil {
		delete(s.groups, grp.ctx)
		grp.gone = true
	}
}

// wakeEndedLocked wakes the waiters of every context that has ended, group
// by group in the order the groups were made, each group's waiters in the
// order they started waiting. It reports whether it woke any.
func (s *Sim) wakeEndedLocked() bool {
	woke := false
	kept := s.order[:0]
	for _, grp := range s.order {
		if !grp.gone && grp.ctx.Err() != nil {
			for grp.head != nil {
				s.wakeLocked(grp.head, wokeCtx)
			}
			woke = true
		}
		if !grp.gone {
			kept = append(kept, grp)
		}
	}
	clear(s.order[len(kept):])
	s.order = kept
	return woke
}

// simTimer wakes g, or starts f, at when.
type simTimer struct {
	when   time.Time
	seq    uint64
	index  int // in Sim.timers; -1 when not in it
	helper bool
	g      *gor
	f      func()
}

func (s *Sim) addTimerLocked(d time.Duration, g *gor, f func()) *simTimer {
	s.seq++
	seq := s.seq
	if s.rng != nil {
		seq = s.rng.Uint64()
	}
	t := &simTimer{when: s.now.Add(max(d, 0)), seq: seq, g: g, f: f}
	heap.Push(&s.timers, t)
	s.pending++
	return t
}

func (s *Sim) removeTimerLocked(t *simTimer) {
	heap.Remove(&s.timers, t.index)
	if !t.helper {
		s.pending--
	}
}

// timerHeap orders timers by (when, seq).
type timerHeap []*simTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*simTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// gorQueue is the FIFO queue of ready goroutines.
type gorQueue struct {
	buf  []*gor
	head int
}

func (q *gorQueue) push(g *gor) { q.buf = append(q.buf, g) }

func (q *gorQueue) len() int { return len(q.buf) - q.head }

// swapHead makes the i-th ready goroutine the next to pop.
func (q *gorQueue) swapHead(i int) {
	q.buf[q.head], q.buf[q.head+i] = q.buf[q.head+i], q.buf[q.head]
}

func (q *gorQueue) pop() *gor {
	if q.head == len(q.buf) {
		return nil
	}
	g := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	} else if q.head >= 1024 && q.head*2 >= len(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	return g
}

// gorList is the list of blocked goroutines, in the order they blocked.
type gorList struct {
	head, tail *gor
	n          int
}

func (l *gorList) push(g *gor) {
	g.bprev, g.bnext = l.tail, nil
	if l.tail != nil {
		l.tail.bnext = g
	} else {
		l.head = g
	}
	l.tail = g
	l.n++
}

func (l *gorList) remove(g *gor) {
	if g.bprev != nil {
		g.bprev.bnext = g.bnext
	} else {
		l.head = g.bnext
	}
	if g.bnext != nil {
		g.bnext.bprev = g.bprev
	} else {
		l.tail = g.bprev
	}
	g.bprev, g.bnext = nil, nil
	l.n--
}

// GoHelper runs f in a new goroutine of the run, like c.Go, as a helper that
// does not keep the run alive: under a Sim, a run whose other goroutines
// are all blocked with no timer of theirs pending has deadlocked, whatever
// timers the helpers still have (a timeline's sampler ticking on would
// otherwise move the time forever), and helpers still waiting once every
// other goroutine has ended are ended with the run. Under any other clock it
// is c.Go.
func GoHelper(c Clock, f func()) {
	if s, ok := c.(*Sim); ok {
		s.goHelper(f)
		return
	}
	c.Go(f)
}
