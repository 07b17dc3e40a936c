// Package wire is what every wire format of package provider shares: the
// request and response independent of any format, the Format interface a
// format implements, and Decode, which runs one attempt's decoding the same
// way for all of them.
//
// Decode reads SSE and classifies the status, retry-after, x-should-retry and
// rate-limit headers, error bodies and a stream cut short. Each format is one
// package implementing Format (provider/anthropic, provider/openaichat,
// provider/openairesponses, …); package provider registers them by name and
// holds the Client.
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ratelab/ratelab/clock"
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

// Format is one provider's wire format: how a request is encoded, and
// (Spec) the parts of a response that differ between formats, which Decode
// runs in the order every format shares. Implementations are small comparable
// values (a struct of options, usually empty), stateless and safe for
// concurrent use; a format also implements provider.Provider by giving
// itself a Decode method that calls Decode(resp, sent, its Spec, &out, &o).
type Format interface {
	// Name is the provider's name, as provider.ByName knows it.
	Name() string
	// DefaultBaseURL is the production endpoint a Client uses when its
	// BaseURL is empty.
	DefaultBaseURL() string
	// KeyEnv names the environment variable that conventionally holds the
	// provider's API key.
	KeyEnv() string
	// NewRequest builds the HTTP request for one attempt (NewPost does the
	// shared part). attempt is the 0-based attempt index, sent as
	// X-Stainless-Retry-Count as the SDKs do. An empty baseURL means
	// DefaultBaseURL; an empty apiKey sends no credentials.
	NewRequest(ctx context.Context, baseURL, apiKey string, r Request, attempt int) (*http.Request, error)

	// Spec is the format's part of Decode; it is the same for every
	// value of the format.
	Spec() *Spec
}

// Spec is what Decode needs of one format, as functions, not methods: a
// call in flight fits within an 8 KiB stack only without the method
// wrappers an interface call adds (see Decode).
type Spec struct {
	// RequestID is the canonical name of the header carrying the request
	// id.
	RequestID string
	// Limits parses the rate-limit headers of a response received at
	// received.
	Limits func(h http.Header, received time.Time) strategies.Limits
	// ParseError reads an error body in the format's error shape; false
	// when it is not that shape.
	ParseError func(body []byte) (ErrorBody, bool)
	// Quota reports whether an error response is a refusal for a spent
	// quota or spend cap, which no retry fixes; nil: none is.
	Quota func(e *APIError) bool
	// Event reads one event of a stream into s and says whether it was the
	// last; Decode owns the reading loop.
	Event func(s *Stream, ev SSEEvent) (last bool)
	// Body reads a successful JSON response, already checked to be valid,
	// into out. (By value: a pointer passed to a func value escapes.)
	Body func(v gjson.Result, out Response) Response

	// The optional parts, nil for the formats that need none (Anthropic's
	// and OpenAI's):

	// EventStream reads a stream framed as EventStreamType says (Bedrock's
	// binary application/vnd.amazon.eventstream) into the SSEEvents that
	// Event reads; nil: the format's streams are SSE.
	EventStream     func(r io.Reader) EventReader
	EventStreamType string
	// ErrorType reads an error's type from the response headers (Bedrock's
	// x-amzn-ErrorType) when the body does not carry it; "" when absent.
	ErrorType func(h http.Header) string
	// Kind reclassifies an error response that the status alone
	// classified as k (a Bedrock 429 that is an overload, a 400 that is a
	// spent quota); Quota is applied before it.
	Kind func(e *APIError, k strategies.Kind) strategies.Kind
}

// EventReader reads the events of a stream: Next returns io.EOF when it
// ends cleanly between events. SSEReader is one.
type EventReader interface {
	Next() (SSEEvent, error)
}

// Header values shared by every request, never modified: setting them
// costs no allocation per attempt.
var (
	contentJSON = []string{"application/json"}
	acceptJSON  = []string{"application/json"}
	acceptSSE   = []string{"text/event-stream"}
	retryCounts = func() (v [16][]string) {
		for i := range v {
			v[i] = []string{strconv.Itoa(i)}
		}
		return v
	}()
)

// NewPost builds POST url with body as JSON and the headers every format
// sends (Content-Type, Accept, X-Stainless-Retry-Count, Idempotency-Key),
// and returns the request's header map, with canonical keys, for the
// format's own (auth). name is the format's, for errors.
func NewPost(ctx context.Context, name, url string, body any, r Request, attempt int) (*http.Request, http.Header, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("provider: encode %s request: %w", name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("provider: %s request: %w", name, err)
	}
	return req, commonHeaders(req, r, attempt), nil
}

// commonHeaders sets the headers every provider sends and returns the
// request's header map, with canonical keys.
func commonHeaders(req *http.Request, r Request, attempt int) http.Header {
	h := req.Header
	h["Content-Type"] = contentJSON
	if r.Stream {
		h["Accept"] = acceptSSE
	} else {
		h["Accept"] = acceptJSON
	}
	if attempt >= 0 && attempt < len(retryCounts) {
		h["X-Stainless-Retry-Count"] = retryCounts[attempt]
	} else {
		h["X-Stainless-Retry-Count"] = []string{strconv.Itoa(attempt)}
	}
	if r.IdempotencyKey != "" {
		h["Idempotency-Key"] = []string{r.IdempotencyKey}
	}
	return h
}

// NonNil returns m, or an empty slice for nil (a JSON array, not null).
func NonNil(m []Message) []Message {
	if m == nil {
		return []Message{}
	}
	return m
}

// JoinURL appends path to base (or def when base is empty) without
// doubling slashes.
func JoinURL(base, def, path string) string {
	if base == "" {
		base = def
	}
	return strings.TrimRight(base, "/") + path
}

// clockKey is the context key of a Client's Clock, on the requests it sends.
type clockKey struct{}

// WithClock returns ctx carrying c, the clock Decode measures latency and
// time to first token on and dates rate-limit resets with for a response
// to a request made with that context.
func WithClock(ctx context.Context, c clock.Clock) context.Context {
	return context.WithValue(ctx, clockKey{}, c)
}

// clockOf is the clock of the Client that sent resp's request: clock.Real
// unless it had one.
func clockOf(resp *http.Response) clock.Clock {
	if resp.Request != nil {
		if c, ok := resp.Request.Context().Value(clockKey{}).(clock.Clock); ok {
			return c
		}
	}
	return clock.Real
}
