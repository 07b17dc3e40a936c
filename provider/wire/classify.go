package wire

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// Sentinel errors of attempts that got a response but not a usable one.
var (
	// ErrIncompleteStream means a stream ended (or broke) before its final
	// event: message_stop for Anthropic, data: [DONE] for OpenAI.
	ErrIncompleteStream = errors.New("provider: stream ended before its final event")
	// ErrInvalidResponse means a 2xx body could not be decoded.
	ErrInvalidResponse = errors.New("provider: invalid response body")
)

// APIError is an error a provider reported: a non-2xx response, or an error
// event inside a stream that had started with 200. Type and Message come from
// the body (Anthropic error.type, OpenAI error.type or error.code); both may
// be empty when the body was not the provider's error shape. Code is the
// finer code some errors carry (Anthropic error.details.error_code, OpenAI
// error.code), empty when absent.
type APIError struct {
	Status    int
	Type      string
	Code      string
	Message   string
	RequestID string
}

// ErrorBody is what a provider's error body says: its type, its finer
// code and its message, and the delay it asks for before a retry when the
// body carries one (Google's google.rpc.RetryInfo retryDelay): Decode
// takes it as the Outcome's RetryAfter when no header gave one.
type ErrorBody struct {
	Type, Code, Message string
	RetryAfter          time.Duration
	HasRetryAfter       bool
}

// Error implements error.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: status %d", e.Status)
	if e.Type != "" {
		b.WriteString(" ")
		b.WriteString(e.Type)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// KindOf classifies an HTTP status: 2xx Success, 429 Throttled, 529 and 503
// Overloaded, anything else Failed.
func KindOf(status int) strategies.Kind {
	switch {
	case status >= 200 && status < 300:
		return strategies.Success
	case status == http.StatusTooManyRequests:
		return strategies.Throttled
	case status == 529 || status == http.StatusServiceUnavailable:
		return strategies.Overloaded
	default:
		return strategies.Failed
	}
}

// maxRetryAfter bounds a server delay so that converting it to a Duration
// cannot overflow; longer values are treated as absent.
const maxRetryAfter = 100 * 365 * 24 * time.Hour

// ParseRetryAfter returns the delay the server asked for, in the order the
// official SDKs read it: retry-after-ms (float milliseconds), then
// retry-after as float seconds, then retry-after as an HTTP date relative to
// now. A negative delay (or a date in the past) becomes 0. ok is false when no
// header holds a usable value (absent, malformed, NaN, infinite, absurdly
// large); a header that is unusable falls through to the next one.
func ParseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if d, ok := parseFloatDuration(v, time.Millisecond); ok {
			return d, true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if d, ok := parseFloatDuration(v, time.Second); ok {
		return d, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func parseFloatDuration(v string, unit time.Duration) (time.Duration, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	if f < 0 {
		return 0, true
	}
	d := f * float64(unit)
	if d > float64(maxRetryAfter) {
		return 0, false
	}
	return time.Duration(d), true
}

// ParseShouldRetry reads x-should-retry: a pointer to true or false, or nil
// when the header is absent or is neither. Every call returns the same two
// pointers, which no one may write through: a response costs no allocation.
func ParseShouldRetry(h http.Header) *bool {
	switch strings.ToLower(strings.TrimSpace(h.Get("X-Should-Retry"))) {
	case "true":
		return &shouldRetry[1]
	case "false":
		return &shouldRetry[0]
	}
	return nil
}

// shouldRetry are the values ParseShouldRetry points to: false, true.
var shouldRetry = [2]bool{false, true}

// headerOutcome sets *o to the parts of an Outcome that come from the
// status line and headers alone.
func headerOutcome(resp *http.Response, received time.Time, f *Spec, o *strategies.Outcome) {
	*o = strategies.Outcome{
		Kind:        KindOf(resp.StatusCode),
		Status:      resp.StatusCode,
		ShouldRetry: ParseShouldRetry(resp.Header),
	}
	o.Limits = f.Limits(resp.Header, received)
	o.RetryAfter, o.HasRetryAfter = ParseRetryAfter(resp.Header, received)
}

// ParseInt reads an integer header; 0 when absent or malformed.
func ParseInt(h http.Header, key string) int64 {
	v := strings.TrimSpace(h.Get(key))
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<62 {
			return 0
		}
		return int64(f)
	}
	return n
}
