// Package archtest holds the tests that keep the tree's architecture: the
// clock rule (code a simulated run reaches blocks only through package
// clock) and the import boundary between the server (mock/, cmd/mockllm)
// and the client (strategies, engine, provider/..., batch/..., …). It has no
// code of its own.
//
// The clock rule (TestClockRule) walks engine/, strategies/ and mock/, every
// subpackage included, and fails on a bare channel send, receive or select,
// a timer of the time package (Sleep, After, AfterFunc, NewTimer, Tick,
// NewTicker) or a sync.WaitGroup, outside the functions its allowlist names
// with the reason each is safe.
//
// The import boundary (TestImportBoundary) states the rule "server and
// client share no behaviour": each forbidden arrow is named in a table, and
// the only packages both sides may import are the leaf vocabulary packages
// (package clock, the configuration helpers internal/fielderr and
// internal/strict, the key fingerprint internal/keyid, the token estimate
// internal/tokenest, the latency histogram internal/durhist, the lease
// script internal/leasescript, the URL redaction internal/redact, and the
// data packages internal/reportcard and profiles). loadgen and cmd/loadgen
// run both sides and are on neither.
package archtest
