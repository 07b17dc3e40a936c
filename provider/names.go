package provider

import (
	"io"
	"net/http"
	"time"

	"github.com/ratelab/ratelab/provider/anthropic"
	"github.com/ratelab/ratelab/provider/bedrock"
	"github.com/ratelab/ratelab/provider/openaichat"
	"github.com/ratelab/ratelab/provider/openairesponses"
	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// The names this package has always exported, now defined where they
// belong: the vocabulary every format shares in package wire, each format
// in its own package. They are aliases, so a provider.Request is a
// wire.Request and provider.Anthropic{} is anthropic.Format{}.

type (
	// Message is wire.Message: one turn of a conversation.
	Message = wire.Message
	// Request is wire.Request: one call, independent of the wire format.
	Request = wire.Request
	// Response is wire.Response: what a successful attempt returned.
	Response = wire.Response
	// APIError is wire.APIError: an error a provider reported.
	APIError = wire.APIError
	// SSEEvent is wire.SSEEvent: one server-sent event.
	SSEEvent = wire.SSEEvent
	// SSEReader is wire.SSEReader: a reader of server-sent events.
	SSEReader = wire.SSEReader

	// Anthropic is the Anthropic Messages API (package anthropic).
	Anthropic = anthropic.Format
	// OpenAI is the OpenAI Chat Completions API (package openaichat).
	OpenAI = openaichat.Format
	// OpenAIResponses is the OpenAI Responses API (package
	// openairesponses).
	OpenAIResponses = openairesponses.Format
	// Bedrock is Amazon Bedrock Runtime's Converse API (package bedrock).
	Bedrock = bedrock.Format
)

// AnthropicVersion is the anthropic-version header the official SDKs send
// (anthropic.Version).
const AnthropicVersion = anthropic.Version

// MaxSSELine bounds one line of an event stream (wire.MaxSSELine).
const MaxSSELine = wire.MaxSSELine

// Sentinel errors of attempts that got a response but not a usable one:
// the same values as wire's, so errors.Is matches either.
var (
	// ErrIncompleteStream means a stream ended (or broke) before its final
	// event: message_stop for Anthropic, data: [DONE] for OpenAI.
	ErrIncompleteStream = wire.ErrIncompleteStream
	// ErrInvalidResponse means a 2xx body could not be decoded.
	ErrInvalidResponse = wire.ErrInvalidResponse
)

// NewSSEReader returns a reader of the events in r (wire.NewSSEReader).
func NewSSEReader(r io.Reader) *SSEReader { return wire.NewSSEReader(r) }

// KindOf classifies an HTTP status (wire.KindOf).
func KindOf(status int) strategies.Kind { return wire.KindOf(status) }

// ParseRetryAfter returns the delay the server asked for
// (wire.ParseRetryAfter).
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	return wire.ParseRetryAfter(h, now)
}

// ParseShouldRetry reads x-should-retry (wire.ParseShouldRetry).
func ParseShouldRetry(h http.Header) *bool { return wire.ParseShouldRetry(h) }

// AnthropicLimits parses Anthropic's rate-limit headers (anthropic.Limits).
func AnthropicLimits(h http.Header, received time.Time) strategies.Limits {
	return anthropic.Limits(h, received)
}

// OpenAILimits parses OpenAI's rate-limit headers (openaichat.Limits).
func OpenAILimits(h http.Header, received time.Time) strategies.Limits {
	return openaichat.Limits(h, received)
}
