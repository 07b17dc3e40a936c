// Package mock is a mock LLM provider that answers the Anthropic, OpenAI (Chat
// Completions, Responses, Azure OpenAI), Gemini (AI Studio, Vertex AI) and
// Amazon Bedrock APIs as the real ones do, over their own wire formats.
//
// It enforces what real providers enforce (concurrency caps, requests and
// tokens per minute, per-token latency, 429s with retry-after and rate-limit
// headers, 529 overload, injected faults), so clients can be measured against
// it.
//
// It owns the routes (POST /v1/messages, /v1/messages/count_tokens,
// /v1/chat/completions, /v1/responses and Bedrock's /model/{modelId}/…,
// GET /v1/models, /_admin/ and /metrics), the wire formats (JSON, SSE and
// Bedrock's event stream, errors in each provider's envelope), admission,
// the latency model, faults, the admin API and Prometheus metrics. It
// shares no code with the clients it measures.
//
// A model request passes, in order: authentication, the body limit
// (MaxBodyBytes) and decoding, injected faults, the global Capacity, the
// spend Quota, then its key's Limits with its model's pool and the
// organization's (internal/admission), then latency and content. Token buckets refill
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
//
// # Files and packages
//
// Each file and package has one job:
//
//   - server.go: the Server, its options, New, Serve, Shutdown, Close,
//     SetLimits, Reset and the schedule.
//   - routes.go: the route table, the registry of wire formats (formats),
//     the router and its 404/405s, and the envelope of a request that is
//     not a model request (wireOf).
//   - handle.go: one model request from arrival to its last byte: decode,
//     faults, admission, the latency plan, the JSON or stream answer.
//   - compose.go: what an answer with content fields says (tool calls,
//     structured output, stop sequences, choices) and how long it is.
//   - auth.go: the API key of a request.
//   - body.go: reading a request body under MaxBodyBytes, BodyTimeout and
//     the shared DecodeBudget.
//   - envelope.go: the connection envelope (header limits, net/http's own
//     plain-text 431 and 400 rewritten as JSON).
//   - recover.go: panics answered as 500s in the API's envelope.
//   - ids.go: request and message ids, and a request's attempt index.
//   - health.go: /healthz and /readyz.
//   - count_tokens.go: the count-tokens endpoints of every format
//     (wire.EndpointCountTokens: /v1/messages/count_tokens, :countTokens).
//   - models.go: the model catalogues, GET /v1/models, and strictness's
//     checks of a decoded request.
//   - store.go: the core's side of Config.Store, the concurrency slots
//     shared between replicas (RedisStore is admission's).
//   - config.go, dist.go, profile.go, flags.go: the configuration (its
//     admission types are aliases of internal/admission's), its
//     output-length distributions, provider profiles and command-line
//     flags.
//   - stats.go, calls.go, metrics.go: counters (Stats), per-call accounting
//     (Calls) and Prometheus metrics.
//   - batches.go, batches_anthropic.go, batches_openai.go, files.go: the
//     provider batch APIs (Message Batches; OpenAI's Batch API over its
//     Files API), endpoints of the core whose requests are answered by the
//     registered formats (docs/batch-api.md).
//   - admin.go, admin_pools.go: the /_admin/ API.
//   - arrival*.go: when a request arrived (kernel timestamps on Linux).
//   - inproc.go: InProcess, an http.RoundTripper that serves without a
//     network.
//   - tokens.go: EstimateTokens and the filler text.
//   - internal/admission: admission, a leaf package that knows no wire
//     format: token buckets and concurrency per key, per-model pools, the
//     organization's pool, long-context limits, the acceleration ramp,
//     spend quotas and prices, the prompt cache, the configuration types it
//     reads and RedisStore. handle.go calls it (Key.Admit with its levels,
//     Key.Release, Key.Snapshot) and words its verdicts in each format's
//     envelope.
//   - internal/wire: the vocabulary the core and the formats share (Call,
//     Result, APIError, Snapshot, wire.Format and its Spec, JSON and SSE
//     helpers, content and cache-prefix decoding).
//   - internal/anthropic, internal/openaichat, internal/openairesponses,
//     internal/gemini (AI Studio and Vertex AI), internal/vertexanthropic,
//     internal/bedrock: one wire format each: its request decoding and
//     content fields, its response, stream frames, error envelope and
//     rate-limit headers, and its Spec, with its routes when the path names
//     the model (docs/architecture.md, "Adding a wire format"); Bedrock's
//     also its SigV4 authentication.
//   - internal/eventstream: the application/vnd.amazon.eventstream framing
//     of Bedrock's streams.
//   - internal/azure: Azure OpenAI, the two OpenAI formats wrapped under
//     Azure's paths, api-version, deployments, envelope and content-filter
//     annotations (docs/azure.md); its azure: block is config.go's.
//   - schemagen: documents generated from a JSON Schema, for tool calls and
//     structured output.
//   - mocktest: a Server on loopback for tests, as httptest.Server.
//
// A test file is named after the file it tests, or after the subject it
// serves over HTTP: admission_*_test.go are admission's rules as the server
// answers them (handle.go with internal/admission, whose own unit tests are
// there), a format's name its wire format (internal/<format>), *_sdk_test.go,
// *_node_test.go and *_python_test.go the official clients against it.
//
// # Call accounting
//
// In CallStats, an attempt is one model request (POST /v1/messages or
// /v1/chat/completions) that passed authentication; it lasts from its
// arrival (its body read) until its answer was decided: a rejection, or the
// release of its slot just before the last byte of its response.
//
// # Grouping attempts into calls
//
// A retry resends the same request, so attempts are grouped by a fingerprint:
// the API key and the request body, or the API key and the Idempotency-Key
// header when one is sent. An attempt joins the oldest call of its
// fingerprint that has not succeeded and has no attempt in flight (a retry is
// sent after the previous attempt ended); otherwise it starts a new call. An
// X-Stainless-Retry-Count of 0 (what the official SDKs send on a first
// attempt) always starts a new call.
//
// Two items that send identical bodies are therefore told apart when the
// client sends X-Stainless-Retry-Count or distinct Idempotency-Keys, or when
// their attempts overlap in time. Without those headers, an identical
// request arriving while an earlier one is waiting to be retried is counted
// as that earlier call's retry (one call, more attempts), and once a call has
// succeeded an identical request is a new call. Scenarios make every item
// distinct ("{i}" in the prompt, ids in the items file), so this only
// matters for a client that sends the same request twice on purpose.
//
// A call that never succeeded is failed; one still waiting for a retry counts
// as failed until it succeeds. At most MaxOpenCalls failed calls are
// remembered for retries to join: beyond that they are forgotten (still
// counted as failed), and a late retry of one of them starts a new call.
package mock
