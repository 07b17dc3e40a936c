package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// call is one decoded model request, independent of the wire format.
type call struct {
	model        string
	modelJSON    []byte // model as a JSON string, for hand-built frames
	input        int    // input tokens, by EstimateTokens
	maxTokens    int
	stream       bool
	includeUsage bool // OpenAI stream_options.include_usage
}

// badRequest is a 400 naming the offending field.
type badRequest struct {
	param string // the field, e.g. "messages.0.content"; empty for the body
	msg   string
}

func (e *badRequest) Error() string { return e.msg }

func invalid(param, format string, args ...any) error {
	return &badRequest{param: param, msg: param + ": " + fmt.Sprintf(format, args...)}
}

// wire is one provider's wire format.
type wire interface {
	name() string
	// requestIDHeader is request-id or x-request-id.
	requestIDHeader() string
	// decode parses a request body; errors are *badRequest.
	decode(body []byte, defaultMax int) (*call, error)
	// writeError writes the provider's error envelope.
	writeError(w http.ResponseWriter, status int, e apiError, reqID string)
	// setLimitHeaders writes the rate-limit headers of s.
	setLimitHeaders(h http.Header, s snapshot, now time.Time)
	// overloadStatus is 529 (Anthropic) or 503 (OpenAI).
	overloadStatus() int
	// body renders a complete non-streaming response.
	body(c *call, r *result) ([]byte, error)
	// streamStart, streamDelta, streamEnd and streamError append SSE frames.
	streamStart(b []byte, c *call, r *result) []byte
	streamDelta(b []byte, c *call, r *result, from, to int) []byte
	streamEnd(b []byte, c *call, r *result) []byte
	streamError(b []byte, c *call, r *result) []byte
}

// result is what the server tells a client about an admitted request.
type result struct {
	id      string // message / completion id
	created time.Time
	n       int  // output tokens
	capped  bool // n == max_tokens: stop_reason max_tokens / finish_reason length
}

// apiError is an error answer: kind is the error type (rate_limit_error,
// …), which OpenAI's envelope maps to its own type and code.
type apiError struct {
	kind  string
	msg   string
	param string
	limit string // the limit of a 429
}

// Anthropic error types by status; other 4xx are invalid_request_error and
// other 5xx api_error.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusConflict:
		return "conflict_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529, http.StatusServiceUnavailable:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for the types written here
		b = []byte(`{}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// messageText is the text of a message's content: a string, or an array of
// blocks whose text blocks are concatenated and whose other blocks count the
// length of their JSON.
func messageText(raw json.RawMessage, param string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", invalid(param, "field required")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", invalid(param, "invalid string")
		}
		return s, nil
	case '[':
		var blocks []json.RawMessage
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return "", invalid(param, "invalid array")
		}
		var b strings.Builder
		for i, blk := range blocks {
			var tb struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(blk, &tb); err != nil {
				return "", invalid(fmt.Sprintf("%s.%d", param, i), "want a content block object")
			}
			switch tb.Type {
			case "":
				return "", invalid(fmt.Sprintf("%s.%d.type", param, i), "field required")
			case "text":
				b.WriteString(tb.Text)
			default:
				b.Write(blk)
			}
		}
		return b.String(), nil
	}
	return "", invalid(param, "want a string or an array of content blocks")
}

// messageTokens applies the documented estimate to one message.
func messageTokens(text string) int { return max(1, EstimateTokens(text)) }

// describeJSONError turns encoding/json's errors into a message naming the
// field.
func describeJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return &badRequest{msg: fmt.Sprintf("request body: want a JSON object, got %s", te.Value)}
		}
		return invalid(field, "want %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &badRequest{msg: fmt.Sprintf("request body: invalid JSON at offset %d: %v", se.Offset, err)}
	}
	return &badRequest{msg: "request body: invalid JSON: " + err.Error()}
}

func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "bool":
		return "a boolean"
	case k == "string":
		return "a string"
	case k == "slice":
		return "an array"
	}
	return "an object"
}

// appendSSE appends one frame; event is omitted when empty (OpenAI).
func appendSSE(b []byte, event string, data []byte) []byte {
	if event != "" {
		b = append(b, "event: "...)
		b = append(b, event...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// appendFillerJSON appends tokens [from, to) of the filler text; it needs no
// escaping.
func appendFillerJSON(b []byte, from, to int) []byte {
	for i := from; i < to; i++ {
		b = append(b, fillerWords[fillerIndex(i)]...)
	}
	return b
}
