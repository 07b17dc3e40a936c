// Package openairesponses is the client side of OpenAI's Responses API wire
// format ("openai-responses"). It encodes a request for POST /v1/responses
// and reads its JSON or event-stream response through provider/wire.
package openairesponses
