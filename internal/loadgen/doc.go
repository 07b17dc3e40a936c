// Package loadgen owns scenario files (schema, strict parsing, validation) and
// running each strategy of a scenario against a target, checking expectations.
//
// A scenario (see Scenario, and WriteSchema for the reference `loadgen help
// scenario` prints) names a batch of items, the request each makes, the
// embedded mock's configuration or a live target, and the strategies to
// compare, each with its expectations. Parse decodes it strictly: every
// problem is an *Error naming the file, the line and the key.
//
// Run runs the strategies in turn, each against a fresh embedded mock, through
// the engine, and returns a reports.Report with each expectation checked. The
// mock is reached in process (mock.InProcess) by default, or over HTTP on a
// loopback port (ListenTCP) or an in-memory listener (ListenMemory); inside a
// testing/synctest bubble the latter runs a scenario in virtual time over
// HTTP, which is how the shipped scenarios are regression-tested.
//
// A strategy with a shared: block (semaphore, token-first, token-bucket and
// adaptive; see SharedKinds) holds its limits in Redis through package sharedlimit, so
// that every process naming the same key stays within them together;
// internal/batchrun, which runs loadgen batch, takes the same block from its
// config or its --shared-* flags. An unreachable Redis at the start is an error
// wrapping sharedlimit.ErrUnreachable; the strategy's events (redis_lost,
// redis_recovered, lease_lost, gate_close) reach a run's timeline.
package loadgen
