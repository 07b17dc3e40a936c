// Package wire is the vocabulary the mock's core and its wire formats share:
// the decoded request (Call), what the core decided (Result, APIError,
// Snapshot), the Format interface each format implements and its Spec.
//
// It also holds the helpers more than one format uses (JSON and SSE writing,
// message and content decoding, cache prefixes, the filler text), and imports
// no format and no part of the core.
package wire
