// Package strategies owns ratelab's client-side admission strategies: when an
// attempt to call a rate-limited LLM provider may start, and what the client
// learns from how it ended.
//
// Every strategy implements Strategy. A caller acquires a Permit before each
// attempt (Acquire may wait for a slot, a token budget, a pacing delay or a
// retry-after gate, and honours ctx), makes the attempt, and reports its
// Outcome on the permit exactly once. The retry policy is a separate axis
// (see RetryPolicy and Do), composable with every strategy.
//
// Each strategy's constructor takes a config struct (SemaphoreConfig, …)
// whose zero values are documented defaults. Its yaml tags are the
// parameters of a scenario row of that kind: loadgen decodes a row straight
// into the struct, so the struct is the schema.
//
// The package imports no HTTP, YAML or server code: decisions are pure
// functions of an explicit time, and the blocking wrappers around them are thin.
//
// # Adaptive
//
// The control law, per key:
//
//   - Growth only while the window binds. The window grows only while it is
//     full (the key's attempts in flight reach it, so callers wait for it),
//     and continuously in time, not per success: calls that end together
//     in a wave grow it no more and no less than calls that end one by one,
//     and the calls a larger window lets in go out one at a time across the
//     round trip rather than in a burst. A window that is not full grows to
//     at most one above the calls in flight.
//   - Slow start. The window starts at Initial and grows Growth times (16)
//     every round trip while full, until the first throttle. Overshooting
//     costs the few calls sent while the first refusal is on its way back;
//     climbing slowly costs every round trip spent below the limit.
//   - Learning the limit. A throttle (429) tells how many of the key's calls
//     the server was holding when it refused one: the others in flight when
//     the refusal arrives, whatever order they were sent in (calls sent
//     together reach the server in any order), plus the successes that ended
//     meanwhile, less the calls sent after the refused one, which can only
//     have taken the slots those successes freed. Refusals still on their
//     way back inflate the count, so a burst keeps the smallest: the last
//     refusal of a burst of N sent with F in flight counts F − N. The first
//     refusal of a congestion event sets the learned limit; the window lands
//     on it if the event ended slow start (the server held that many and
//     refused one more), and drops to Decrease times it after slow start,
//     when the refusal may be a rate's (a window at the count would be
//     refused again); refusals of calls sent before that drop
//     are the same event (once per round trip) and only refine the limit
//     down.
//   - Congestion avoidance. The window grows by one per round trip while it
//     is full, up to the learned limit, and holds there.
//   - Probing. ProbeAfter round trips after the last throttle, one call above
//     the learned limit is allowed. If the server refuses it, the window stays
//     at the limit and the next probe waits another ProbeAfter round trips
//     (doubling with each probe refused at the same limit from the second,
//     up to 6 round trips or, for a limit under 8, the hold that keeps
//     refused probes within 2 % of its calls, until the limit changes); if
//     the server holds it, the limit has risen and
//     slow start resumes. A refusal, while the probe is out, of another call
//     with the limit held is the probe's refusal: the server need not
//     receive our calls in the order we sent them. A probe goes only while
//     it is worth its price, the key's last retry-after that a refused probe
//     makes its call wait: while the callers waiting for the key keep it busy
//     at the limit for longer than that and one more round trip, so that the
//     refused probe's retry is not the last call to finish.
//   - The retry-after gate. While the key's gate is closed no Acquire for the
//     key returns, so that retries do not come back as a herd and nothing new
//     is sent into a budget the server has said is exhausted. A throttle
//     that the window answers does not close it: when the server refuses a
//     call because it holds as many of ours as it allows, the smaller window
//     already keeps the retries from crowding in (they wait for a slot),
//     and each refused call waits out its own server delay (see Do); closing
//     the gate would drain the whole pipeline for the delay. Nor does a
//     refusal for a rate: the response's rate-limit headers show a budget
//     with nothing remaining, which the window cannot answer and which
//     teaches no limit; the copy of that budget (below) holds the next
//     call until the budget has refilled that call's cost, sooner than
//     the server's delay (whole seconds) and far sooner than the reset
//     (when the bucket is full again). Only when the refused call gave no
//     cost for that budget (Cost), so that the copy cannot pace such calls,
//     does the gate close, for the server's delay. Otherwise the gate
//     closes for a throttle's server delay only when the window cannot be
//     the answer: the server held none of our other calls. With calls of
//     ours held, a refusal is its call's alone, even one sent after the
//     window was cut (after a drop, the calls the lower limit no longer
//     holds are still draining). A refused probe never closes it.
//   - Published budgets. Each budget the rate-limit headers publish
//     (requests; input and output tokens; a combined token budget unless
//     it is the sum of the other two) is one the law keeps a copy of: a
//     bucket refilling at the limit a minute, holding at most what the
//     headers show the server's holds (remaining, plus the refill until
//     the reset). A call takes its cost from each copy when it starts (one
//     request; its uncached input, Cost.InputTokens less
//     Cost.CachedInputTokens; its Cost.MaxTokens, which the server reserves
//     from the output budget) and gets back what the server did not keep
//     when it ends (all of it for a refusal; what the answer did not use,
//     by its usage, for a success). Each response syncs the copy: the
//     remaining count is what the server held when it admitted or refused
//     the call, just after its dispatch, so the server holds that now plus
//     what the copy gained and lost since; a count rounded to the thousand
//     (Anthropic's tokens) is a range, which narrows as responses come
//     in. A call starts only when every copy holds its cost, so where a
//     rate binds the calls are paced to it without a 429, and where the
//     bucket holds more than the run needs the rate does not limit the
//     window at all. While slow start is still running, a newly published
//     requests limit seeds the window at the calls the rate starts per
//     round trip.
//   - Learned budgets. Where no response publishes a budget, the law learns
//     the rates from the key's 429s (rateLearner): a bucket refilling
//     at r refuses a call only while it holds less than the call's cost,
//     so between two refusals at s₀ and s, with A of ours admitted between,
//     r > (A − c₀)/(s − s₀), c₀ the first refused call's cost. The learner
//     engages on two congestion events in a row that the window cannot
//     explain (each refused with fewer of ours held than a success held
//     since the event before), once its refusals span a round trip and the
//     last asks to wait no longer than they span; it
//     then paces the calls by a copy of each budget (requests, input and
//     output tokens) refilling at that bound over its last 8 refusals,
//     rising from it by 4c/(s − s₀)² a second, and a refusal that was no
//     probe above the learned limit is the rate's: it empties the copies,
//     leaves the window alone and closes no gate. Refusals that leave a
//     round trip and more with nothing admitted while the learner paces
//     are no bucket's (an acceleration rule): the learner turns off for
//     good and the window and the gate answer them.
//   - An overload (529/503) is the provider's, not the key's: it decreases the
//     window by Decrease once per round trip and closes the gate for its
//     server delay, but teaches no limit.
//   - A refusal for a spent quota (Quota) is no congestion: it changes
//     nothing, headers included.
//
// A round trip is the smoothed latency of the key's successes (one second
// before the first). The learned state can be saved and loaded across runs
// (see SaveState and LoadState), so that a second run starts where the first
// ended.
//
// Use it against a provider or gateway whose limit is not published, or
// changes without notice, and where per-minute budgets are published in the
// rate-limit headers: it paces to what they show, a concurrency limit
// besides. TokenBucket or TokenFirst pace to a quota you configure, from the
// first call on.
//
// # AIMD
//
// In AIMD, each success of an attempt during which the window was full (the attempts
// in flight reached it, so callers waited for it) adds Increase/window to it,
// about +Increase per round trip. The test is whether the window bound while
// the attempt was under way, not whether it is full when the attempt ends:
// calls that end together in a wave all see a window just emptied by the
// others, and would grow it once per wave instead of once per call, as TCP's
// "cwnd-limited" test avoids. A throttle (429) or an overload (529/503)
// multiplies it by Decrease, at most once per round trip: a throttle of an
// attempt dispatched before the last decrease is the same congestion event
// and changes nothing. The window stays within [Min, Max]; at most
// floor(window) calls are in flight, admitted in arrival order.
//
// AIMD honours no retry-after itself: the retry policy (see Do) waits out a
// throttled call's server delay. It is the textbook controller that Adaptive
// improves on: from a small window it takes one round trip per call of
// concurrency to find a limit (Adaptive's slow start takes a few round trips
// in all), and each decrease forgets how far the limit was. Use it as the
// baseline for window control, or where a plain, well-understood controller
// is wanted.
//
// Stats reports Limit = floor(window), the calls it admits at once; events
// are EventLimit when that changes. Each permit is granted with the attempts
// in flight, itself included, at most the limit at that moment; a permit
// keeps its slot (and its retries inside it) if the window later shrinks
// below the permits out. It is safe for concurrent use.
//
// # AIMDDelay
//
// AIMDDelay starts at Initial (6 s) between dispatches, shortens the delay by 10 % after 3 consecutive
// successes and, on a throttle (a 429, or a 529/503 overload), multiplies it
// by 1.8 and cools down for 10 s; the delay stays within [Min, Max]. It bounds
// the rate of dispatches, not how many are in flight.
//
// The cooldown means, precisely: for Cooldown after a throttle no attempt is
// dispatched, and nothing observed changes the delay. The calls still in
// flight when the throttle arrived were sent at the old pace, so their
// throttles are the same event (no second ×1.8) and their successes are not
// evidence for the new delay (they do not count toward the streak). The first
// dispatch after the cooldown goes at its end; the next ones are spaced by the
// new delay. Any attempt that is not a success (a throttle, an overload,
// another error) breaks the streak of consecutive successes; a canceled one
// is ignored.
//
// Throttled items must be re-queued, never dropped: run calls through Do with
// RetryPolicy{MaxRetries: -1, Requeue: true}, as the case study's runtime does.
//
// It is the baseline ratelab's Adaptive must beat. From 6 s it takes minutes
// to reach a limit of a few tens of calls at once, and each throttle stops
// everything for 10 s. Use it to reproduce the case study, or where a slow,
// steady start matters more than throughput.
//
// Callers are admitted in arrival order. Stats reports Delay (and Rate, its
// inverse); events are EventDelay and, for the cooldown, EventGateClose and
// EventGateOpen. It is safe for concurrent use.
//
// # TokenFirst
//
// When a TokenFirst call ends, the reservation is settled to the usage the server
// reported, and unused tokens go back to the calls waiting. Both lines are
// FIFO.
//
// Settlement, per outcome passed to Done: the reported Usage as the
// provider's limits count it (Usage.Counted: input, cache writes and output,
// without the cache reads Anthropic leaves out of its limits) when there
// is one; nothing used for a call rejected at admission
// (Throttled, Overloaded) or given up between attempts (Abandoned); the whole
// reservation otherwise (a success without usage, a failure, a cancellation:
// what they used is unknown). An attempt reported with Observe that carries
// usage (a stream cut mid-way) is charged on top, since the retry will spend
// the reservation again.
//
// Use it for long prompts or large max_tokens, where tokens per minute bind
// before concurrency. Stats reports Limit = MaxConcurrent, Tokens = the budget
// available now; budget waits count as Waits.Tokens, slot waits as
// Waits.Slot. It is safe for concurrent use.
package strategies
