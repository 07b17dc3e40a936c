// Package openaichat is the OpenAI Chat Completions wire format on the
// server side (docs/wire.md §2). It decodes a request with its content
// fields, and writes the completion, its chunks, the error envelope and the
// x-ratelimit-* headers from what the core decided.
package openaichat
