// Package provider owns the client side of ratelab's HTTP attempts: encoding a
// request for a provider's API, decoding its response (JSON or SSE) and
// classifying the attempt into a strategies.Outcome (status, retry-after,
// rate-limit headers, usage).
//
// Each wire format is a package implementing wire.Format: provider/anthropic
// (Messages API), provider/openaichat (Chat Completions, provider name
// openai), provider/openairesponses (the Responses API, openai-responses),
// provider/azureopenai, provider/gemini, provider/vertex,
// provider/vertexanthropic and provider/bedrock; provider/wire holds what they
// share (the request and response, SSE reading, and Decode, which classifies
// every format alike).
//
// A Client binds a Provider to a base URL, a key and an *http.Client (built
// on NewTransport for load); Client.Do makes exactly one HTTP request and
// never returns an error apart from its Outcome:
//
//	Kind        when
//	Success     2xx, read to the end (a stream to its final event)
//	Throttled   429
//	Overloaded  529 (Anthropic) or 503
//	Failed      any other status; Status 0 for a connection error; Status
//	            200 for a stream cut mid-way or carrying an error event
//	Canceled    the caller's context ended the attempt
//
// API keys never appear in errors: Client redacts them, and Describe turns an
// Outcome into the (status, type, message) a result records.
//
// # Adding a provider
//
// Write one package with a type implementing wire.Format (Name,
// DefaultBaseURL, KeyEnv, NewRequest, Spec) and Provider's Decode, add it
// to formats (provider.go), and give it an entry in the conformance table
// (formats_test.go), which runs the same checks against the real mock for
// every format. Spec supplies what differs between formats (request-id
// header, rate-limit header parser, error-body parser, stream event reader,
// JSON body reader) as plain functions, not methods, so the call path stays
// within a worker's 8 KiB stack; wire.Decode runs the classification every
// format shares, and Client.Do decodes a registered format in place.
package provider
