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
package strategies
