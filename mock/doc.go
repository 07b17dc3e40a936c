// Package mock is a faithful mock of the Anthropic Messages API, the OpenAI
// Chat Completions API and the OpenAI Responses API that enforces what real
// providers enforce: concurrency caps, requests and tokens per minute,
// per-token latency, 429s with retry-after and rate-limit headers, 529
// overload and injected faults.
//
// It owns the routes (POST /v1/messages, /v1/messages/count_tokens,
// /v1/chat/completions and /v1/responses, GET /v1/models, /_admin/ and
// /metrics), the wire formats (JSON and SSE, errors in each provider's
// envelope), admission, the latency model, faults, the admin API and
// Prometheus metrics. It shares no code with the clients it measures.
//
// A model request passes, in order: authentication, the body limit
// (MaxBodyBytes) and decoding, injected faults, the global Capacity, the
// per-key Limits, then latency and content. Token buckets refill
// continuously; output tokens are reserved from max_tokens at admission and
// settled to the tokens produced at the end. A request's concurrency slot is
// released before the last byte of its response is written, so a client that
// starts its next call as soon as it has read a response is never rejected
// for the call that just ended.
//
// A Server serves on any net.Listener, so tests can run it in virtual time
// with testing/synctest over an in-memory listener (internal/memnet). Its
// latencies are absolute deadlines (token i is due at admission + time to
// first token + i × per-token latency), and its random choices (jitter,
// output lengths, faults) come from a source seeded by Config.Seed.
//
// The content follows the request: tool calls (tool_use blocks, tool_calls)
// and structured output whose JSON is generated from the request's JSON
// Schema by mock/schemagen, text cut at stop sequences, n choices with
// logprobs, and natural stops below max_tokens when Output.Length says so.
//
// The token estimate is documented on EstimateTokens.
package mock
