// Package loadgen owns scenario files (schema, strict parsing, validation) and
// running each strategy of a scenario against a target, checking expectations.
package loadgen
