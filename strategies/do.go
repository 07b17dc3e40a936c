package strategies

import (
	"context"
	"errors"
	"time"

	"github.com/ratelab/ratelab/clock"
)

// Call is how one call made through Do went.
type Call struct {
	// Outcome is the outcome of the last attempt; the zero Outcome when no
	// attempt was made.
	Outcome Outcome
	// Attempts is the number of attempts made, retries included.
	Attempts int
	// Waits is the time the call spent waiting, by cause: in Acquire (each
	// Acquire's, in Requeue mode) and between attempts. An Acquire that
	// failed reports no causes, so its whole wait counts as Slot.
	Waits Waits
}

// Do makes one call under strategy s with retry policy p: it acquires a
// permit for cost c, makes attempts with attempt until p says to stop, and
// finishes every permit it acquired with exactly one Done.
//
// attempt makes attempt number n (0 for the first, as the SDKs'
// X-Stainless-Retry-Count) and classifies how it ended; it should honour ctx
// and return a Canceled outcome when ctx ends it.
//
// Do runs on s's clock (ClockOf: the one WithClock gave it): it waits
// through it and times its waits on it. Between attempts it waits as p says: inside the held permit (reporting each
// retried attempt with Permit.Observe), or, when p.Requeue is set, after
// releasing the permit with Done, acquiring a new one once the wait is over.
// A nil p makes one attempt.
//
// The returned error is non-nil only when the call ended without its final
// attempt: Acquire failed (ctx ended while waiting, or the strategy can never
// admit c), or ctx ended while a retry was due; it is then ctx's or
// Acquire's error, and Call holds what happened before. When the last attempt
// fails, Do returns a nil error: Call.Outcome says how the call ended.
func Do(ctx context.Context, s Strategy, p *RetryPolicy, c Cost, attempt func(ctx context.Context, n int) Outcome) (call Call, err error) {
	clk := ClockOf(s)
	pm, err := acquire(ctx, clk, s, c, &call.Waits)
	if err != nil {
		return call, err
	}
	held := true
	defer func() {
		// A panicking attempt still releases its permit; the panic goes on.
		if held {
			done(pm, Failed, errAttemptPanicked)
		}
	}()
	for n := 0; ; n++ {
		call.Outcome = attempt(ctx, n)
		call.Attempts++
		o := &call.Outcome
		retry, wait := next(p, n, o)
		if retry {
			// The SDKs give up as soon as the caller's context is done.
			err = ctx.Err()
		}
		if !retry || err != nil {
			held = false
			report(pm, o, true)
			return call, err
		}
		held = !p.Requeue
		report(pm, o, p.Requeue)
		var slept time.Duration
		slept, err = sleep(clk, ctx, wait)
		if o.HasRetryAfter {
			call.Waits.RetryAfter += slept
		} else {
			call.Waits.Backoff += slept
		}
		if err != nil {
			if held {
				held = false
				done(pm, Abandoned, err)
			}
			return call, err
		}
		if p.Requeue {
			if pm, err = acquire(ctx, clk, s, c, &call.Waits); err != nil {
				return call, err
			}
			held = true
		}
	}
}

// The copies of an Outcome (a quarter kilobyte) that the policy and the
// permit take are made in frames of their own, below Do's, which a call in
// flight holds (see engine's task): next, report and done.

//go:noinline
func next(p *RetryPolicy, n int, o *Outcome) (bool, time.Duration) { return p.Next(n, *o) }

// report gives o to pm: with Done when final, else with Observe.
//
//go:noinline
func report(pm Permit, o *Outcome, final bool) {
	if final {
		pm.Done(*o)
	} else {
		pm.Observe(*o)
	}
}

// done finishes pm with an outcome of kind k and error err.
//
//go:noinline
func done(pm Permit, k Kind, err error) { pm.Done(Outcome{Kind: k, Err: err}) }

var errAttemptPanicked = errors.New("strategies: attempt panicked")

// acquire acquires a permit from s and adds its waits, timed on clk, to w.
func acquire(ctx context.Context, clk clock.Clock, s Strategy, c Cost, w *Waits) (Permit, error) {
	start := clk.Now()
	pm, err := s.Acquire(ctx, c)
	if r, ok := pm.(WaitReporter); ok && err == nil {
		*w = w.Add(r.Waited())
	} else {
		w.Slot += clock.Since(clk, start)
	}
	return pm, err
}

// Sleep waits for d or until ctx ends, whichever is first. It returns how
// long it waited, and ctx's error if ctx ended first. It waits in real
// time; the engine and the strategies wait through their clock (see sleep).
func Sleep(ctx context.Context, d time.Duration) (time.Duration, error) {
	return sleep(clock.Real, ctx, d)
}

// sleep is Sleep on clock c: the one blocking wait of the retry policy and
// token-bucket's pacing.
func sleep(c clock.Clock, ctx context.Context, d time.Duration) (time.Duration, error) {
	if d <= 0 {
		return 0, ctx.Err()
	}
	start := c.Now()
	if err := c.Sleep(ctx, d); err != nil {
		return clock.Since(c, start), err
	}
	return d, nil
}
