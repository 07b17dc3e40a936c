package provider

import (
	"context"
	"net/http"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one call, independent of the provider's wire format.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	MaxTokens int
	Stream    bool
	// IdempotencyKey, when set, is sent as Idempotency-Key so a server can
	// count attempts of the same call.
	IdempotencyKey string
}

// Response is what a successful attempt returned.
type Response struct {
	ID         string
	Text       string
	StopReason string // the provider's own value (end_turn, max_tokens, stop, length, …)
	Usage      strategies.Usage
	RequestID  string        // the request-id / x-request-id header
	TTFT       time.Duration // time to first token when streaming; 0 otherwise
}

// Provider encodes requests for one provider's API and classifies its
// responses. Implementations are stateless and safe for concurrent use.
type Provider interface {
	// Name is the provider's name: "anthropic" or "openai".
	Name() string
	// NewRequest builds the HTTP request for one attempt. attempt is the
	// 0-based attempt index, sent as X-Stainless-Retry-Count as the SDKs do.
	NewRequest(ctx context.Context, baseURL, apiKey string, r Request, attempt int) (*http.Request, error)
	// Decode reads resp to the end (JSON or SSE) and classifies the attempt.
	// sent is when the request was sent; now returns the current time.
	Decode(resp *http.Response, sent time.Time) (Response, strategies.Outcome)
}
