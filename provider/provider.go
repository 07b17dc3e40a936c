package provider

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
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
	Model  string
	System string
	// SystemCache, when set, asks the provider to cache the system prompt
	// for this long after its last use: Anthropic's cache_control
	// breakpoint on it, "5m" (ephemeral, the default TTL) or "1h". The
	// OpenAI APIs ignore it: they cache a repeated prefix of 1,024 tokens
	// or more by themselves.
	SystemCache string
	Messages    []Message
	MaxTokens   int
	Stream      bool
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
//
// Adding a provider means adding one file that implements this interface and
// one line in ByName. The helpers a provider needs are shared:
// ParseRetryAfter, ParseShouldRetry, KindOf, NewSSEReader and APIError.
type Provider interface {
	// Name is the provider's name: "anthropic", "openai" or
	// "openai-responses".
	Name() string
	// DefaultBaseURL is the production endpoint a Client uses when its
	// BaseURL is empty.
	DefaultBaseURL() string
	// KeyEnv names the environment variable that conventionally holds the
	// provider's API key (ANTHROPIC_API_KEY, OPENAI_API_KEY).
	KeyEnv() string
	// NewRequest builds the HTTP request for one attempt. attempt is the
	// 0-based attempt index, sent as X-Stainless-Retry-Count as the SDKs do.
	// An empty baseURL means DefaultBaseURL; an empty apiKey sends no
	// credentials.
	NewRequest(ctx context.Context, baseURL, apiKey string, r Request, attempt int) (*http.Request, error)
	// Decode reads resp to the end (JSON or SSE, chosen by its Content-Type)
	// and classifies the attempt. sent is when the request was sent; Latency
	// and TTFT are measured from it, on the Clock of the Client that sent
	// the request (clock.Real otherwise). Decode does not close resp.Body.
	Decode(resp *http.Response, sent time.Time) (Response, strategies.Outcome)
}

var providers = map[string]func() Provider{
	"anthropic": func() Provider { return Anthropic{} },
	"openai":    func() Provider { return OpenAI{} },
	// The Responses API, the one the AI SDK's default OpenAI provider calls.
	"openai-responses": func() Provider { return OpenAIResponses{} },
}

// ByName returns the provider called name ("anthropic", "openai" or
// "openai-responses"), with its default options.
func ByName(name string) (Provider, error) {
	if f, ok := providers[strings.ToLower(name)]; ok {
		return f(), nil
	}
	return nil, fmt.Errorf("provider: unknown provider %q (want one of %s)", name, strings.Join(Names(), ", "))
}

// Names lists the providers ByName knows, sorted.
func Names() []string {
	names := make([]string, 0, len(providers))
	for n := range providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
