// Package provider owns the client side of ratelab's HTTP attempts: encoding
// a request for a provider's API, decoding its response (JSON or SSE) and
// classifying the attempt into a strategies.Outcome (status, retry-after,
// rate-limit headers, usage). Each provider is one file implementing
// Provider: anthropic.go (Messages API), openai.go (Chat Completions) and
// openai_responses.go (the Responses API, provider name openai-responses).
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
// Write one file with a type implementing Provider (Name, DefaultBaseURL,
// KeyEnv, NewRequest, Decode) and add it to ByName. Decode calls
// decode(resp, sent, &yourWire, &out, &o), and a case in wireOf returns
// &yourWire, through which Client.Do decodes in place: the file supplies a
// wireFormat (its request-id header, rate-limit header parser, error-body
// parser, stream reader built on NewSSEReader, and JSON body reader), and
// decode runs the classification every provider shares, so all of them
// classify alike. Test it with recorded fixtures under testdata/ and an
// httptest server per status class, as anthropic.go and openai.go are.
package provider
