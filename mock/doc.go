// Package mock is a faithful mock of the Anthropic Messages API and the
// OpenAI Chat Completions API that enforces what real providers enforce:
// concurrency caps, requests and tokens per minute, per-token latency, 429s
// with retry-after and rate-limit headers, 529 overload and injected faults.
package mock
