// Package anthropic is the Anthropic Messages API's wire format on the
// server side (docs/wire.md §1). It decodes a request with its content
// fields, and writes the Message, its stream events, the error envelope and
// the anthropic-ratelimit-* headers from what the core decided.
package anthropic
