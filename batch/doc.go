// Package batch runs a JSONL file of calls through the engine, resumable: one
// result line per input id in the output, exactly once, however often the
// batch is killed and rerun.
//
// It is `loadgen batch` without its flags (those stay in cmd/loadgen), and it
// uses only package engine's exported API: engine.Run with a Source streaming
// the input, a Sink appending to the output, engine.Config.Again to make
// throttled and unreachable items again, and Result.Kind to tell them from
// terminal results.
//
//	input.go    the input's format (Line), the validating first pass and
//	            its errors (InputErrors: file, line, key, message)
//	ids.go      the set of ids a batch keeps (128-bit hashes, not the ids)
//	            and the id check (an id is sent as the Idempotency-Key)
//	output.go   reading the output back: the ids done, a torn last line
//	            repaired, failed lines dropped for RetryFailed
//	lock_*.go   the advisory lock that keeps two batches off one output
//	circuit.go  the circuit that pauses the whole batch while the endpoint
//	            does not answer, probing it with backoff
//	batch.go    Batch, Summary and Run, which wires the above to the engine
//
// There is no re-queue here: a throttled item waits in its engine worker,
// permit released, as a retry with strategies.RetryPolicy.Requeue does (see
// engine.Config.Again), so one mechanism decides every wait before a
// repeated call.
//
// # How Run works
//
// [Batch.Run] works in three steps:
//
//  1. The input is read once to validate it, streaming and keeping only a
//     set of ids (128-bit hashes) with the line of each: malformed lines,
//     missing or wrong fields and duplicate ids are an *InputErrors naming
//     each line, before any call is made, unless SkipInvalid is set.
//  2. The output, if it exists, is read: the ids it holds are done and are
//     skipped. A torn last line (a process killed mid-write) is cut off, and
//     that item made again. With RetryFailed, the output is first rewritten
//     without its error lines (to a temporary file renamed into place, so a
//     kill at any moment leaves either the old file or the new one), so the
//     failed items are made again and the file still holds each id once.
//  3. The input is streamed again: each item not done goes through
//     engine.Run. A
//     result is appended when it is terminal: a success, or a permanent
//     failure (400, 401, 403, 413, a validation error, or any failure
//     left once Config.Retry's retries are spent). A throttled result (429,
//     529, 503, or a stream's rate_limit_error or overloaded_error event:
//     engine.Result.Kind Throttled or Overloaded) is not terminal: through
//     engine.Config.Again, the engine's re-queue, the item's worker releases its
//     permit, waits for the server's retry-after (or, without one, the SDKs'
//     backoff for its round: 0.5 s doubling to 8 s, jittered from
//     Config.Retry's seed) and makes it again as a new call, retries
//     afresh; its result counts every attempt and wait of every round.
//
// A connection that failed before any response byte (refused, reset,
// closed, unreachable: engine.Result.Kind strategies.Unreachable) is a transient fault too: the
// item is made again the same way, with the SDKs' jittered backoff, however
// many retries Config.Retry allows. After CircuitThreshold such failures in
// a row the batch's circuit opens: it pauses every item (no slot taken, no
// attempt made) but one probe per backoff period (0.5 s doubling to 8 s,
// jittered), and closes at the first response, resuming the batch.
// OnOutage hears of both. An endpoint still down after MaxOutage stops the
// batch with ErrOutage, recording nothing for the items not made. A refusal
// because the key's quota or spend cap is spent (engine.Result.Kind
// strategies.Quota) stops the batch with ErrQuota at once, recording nothing for
// it nor for the items not made, since none can succeed before the quota
// resets; the calls in progress finish. Only what repeating cannot fix (a
// 4xx, a TLS failure, a reply that is not HTTP) is recorded as an error.
//
// A result's Index is its input line number less one, whatever order the
// items finish in.
//
// Ending ctx stops taking items, lets the calls in progress finish for up to
// Config.Grace, and returns what finished with ctx's error: the items that
// did not finish have no line, and the next run makes them.
//
// Two batches must not append to one output at once; Run holds an advisory
// lock on the output while it runs (where the platform has flock).
package batch
