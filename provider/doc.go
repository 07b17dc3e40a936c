// Package provider owns the client side of ratelab's HTTP attempts: encoding
// a request for a provider's API, decoding its response (JSON or SSE) and
// classifying the attempt into a strategies.Outcome (status, retry-after,
// rate-limit headers, usage). Each provider is one file implementing Provider.
package provider
