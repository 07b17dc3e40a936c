// Package openaichat is the client side of OpenAI's Chat Completions wire
// format ("openai"). It encodes a request for POST /v1/chat/completions and
// reads its JSON or event-stream response through provider/wire.
package openaichat
