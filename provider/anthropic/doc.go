// Package anthropic is the client side of Anthropic's Messages API wire
// format ("anthropic"). It encodes a request for POST /v1/messages and
// reads its JSON or event-stream response through provider/wire.
package anthropic
