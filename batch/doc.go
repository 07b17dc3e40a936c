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
package batch
