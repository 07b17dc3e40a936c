// Package clock is the time source and the blocking primitives of a run, so
// that the same engine, strategies and mock code run in real time and in
// simulated time.
//
// Code that takes part in a run reads the time with Now, starts goroutines
// with Go, and blocks only in Sleep or Wait (or a primitive built on them):
// never on a bare channel, timer or sync.WaitGroup that another goroutine of
// the run releases. Mutexes are fine when held for a moment and never across
// a blocking call.
//
// Real is the time package. A simulated clock (see Sim) runs one goroutine
// of the run at a time and, when every one of them is blocked, moves its
// time straight to the next timer: minutes of rate-limited traffic take
// milliseconds, with the same decisions made by the same code, in an order
// fixed by the seed and the program alone.
//
// Chan (an unbuffered channel) and WaitGroup are built on Events for any
// clock (Chan is a plain Go channel under Real), and GoHelper starts a
// goroutine that does not keep a simulated run alive.
//
// # Simulated time
//
// Sim.Run starts the run's first goroutine; it and every goroutine started
// with Go (or by an AfterFunc) run one at a time, each until it blocks in Wait or
// Sleep (or a primitive built on them) or ends, and then hands over to the
// next goroutine ready to run, in the order they became ready (FIFO). When no
// goroutine is ready, the scheduler first wakes the waiters whose context
// has ended, and else moves its time straight to the earliest pending timer
// (timers at the same instant fire in the order they were set) and fires it.
// A shuffled Sim (Shuffle) orders the events of one instant by a seeded
// chance instead, as a real run does, but for goroutines just started,
// which begin in the order they were started.
// Nothing waits for real time, so a run takes as long as its code takes to
// execute, and with the same program and seed it makes the same decisions in
// the same order every time.
//
// The rules of package clock are strict here: a goroutine of the run that
// blocks anywhere else (a bare channel, a sync.WaitGroup, a socket) stalls
// the whole run, since nothing else runs meanwhile; and a context of the run
// must not end by a real timer (context.WithTimeout), which would end it at
// a real instant rather than a simulated one. Context ends are seen when the
// run is idle, before its time moves, so a cancellation from inside the run
// (a cancel func called by one of its goroutines) takes effect at the
// simulated instant it was made, and one from outside (Ctrl-C) at the next
// idle moment.
//
// A run where every goroutine is blocked with no timer pending and no
// context left to end can never go on: Run reports it as an error naming
// how many goroutines were stuck, and ends them (with runtime.Goexit: their
// deferred calls run, their waits never return), rather than hanging. The
// timers of helpers (GoHelper) do not count. A goroutine that blocks
// outside the clock stalls the run: after 30 s of real time without a
// handover, Run returns an error saying so, and the Sim runs no more.
package clock
