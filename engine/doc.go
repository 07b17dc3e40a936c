// Package engine owns ratelab's fan-out runtime: items flow to bounded
// workers, each admitted by a strategy and sent by a provider client, and
// every item ends as one Result delivered to the run's sinks.
//
//	Source ─► worker (≤ Config.Workers) ─► strategies.Do(Strategy, RetryPolicy)
//	        ─► Client.Do: one HTTP attempt ─► Outcome ─► retry / re-queue / done
//	        ─► Result ─► sinks (JSONL, …) ─► Recorder ─► OnResult
//
// Run is shared by `loadgen run` (one run per strategy of a scenario) and
// `loadgen batch`. Its memory grows with the concurrency, not the number of
// items: the Source is pulled only when a worker is free, and results are
// handed to sinks as they finish, never collected. The Recorder keeps the
// run's accounting in constant space (counters, HdrHistograms and a timeline
// sampled at Config.Resolution) and Run returns it as a Summary (package
// measure), which reports.Result embeds as it is.
//
// Each Result carries a strategies.Kind, the same outcome vocabulary as an
// attempt's, classified once where the Result is made: success, throttled,
// overloaded, quota, unreachable (the connection failed as a server down
// makes it fail) or failed. With Config.Again, an item whose
// call ended temporarily is made again in its worker, permit released,
// after the server's retry-after or the SDKs' backoff: package batch makes
// its throttled items this way, and runs a JSONL input through Run,
// resumable, on this package's exported API alone. With Config.Held, each
// attempt is made only if the run still holds its item: a work queue's
// worker drops the items another took over from it (batch.QueueHolder).
//
// A failed item is a Result carrying a ResultError; the run completes. Ending
// ctx stops it early (what finished is kept, the Summary says Incomplete), a
// failing sink or source stops it with that error, and a panic anywhere in a
// worker is re-raised by Run.
//
// Everything blocks on timers and connections only, so a whole run against
// the mock on an in-memory listener (internal/memnet) runs inside a
// testing/synctest bubble in virtual time; that is how the seeds' table is
// reproduced exactly in this package's tests.
package engine
