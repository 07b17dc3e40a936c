package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"

	"github.com/ratelab/ratelab/clock"
)

// call is one decoded model request, independent of the wire format.
type call struct {
	model        string
	input        int // input tokens, by EstimateTokens
	maxTokens    int
	stream       bool
	includeUsage bool // OpenAI stream_options.include_usage
	// prefixes are the request's cacheable prefixes (cache.go); nil when
	// it has none. cacheRead and cacheWrite are the input tokens read from
	// and written to the prompt cache at admission, part of input.
	prefixes              []prefix
	cacheRead, cacheWrite int
	// content is what the request asks of the answer beyond plain text
	// (content.go); nil for a plain request.
	content *contentReq
	// responses is the Responses API's part of the request; nil for the
	// other APIs.
	responses *responsesCall
	// temperature and top_p as sent (nil when absent), and the first
	// message's role: what strictness checks (checkSampling) once the
	// decoder has read them.
	temperature, topP json.RawMessage
	firstRole         string
	// inferenceGeo is an Anthropic request's inference_geo, which its
	// usage reports back; empty when absent.
	inferenceGeo string
}

// badRequest is a 400 naming the offending field.
type badRequest struct {
	param string // the field, e.g. "messages.0.content"; empty for the body
	msg   string
	code  string // OpenAI's error code; empty: derived from format by invalid
}

func (e *badRequest) Error() string { return e.msg }

func invalid(param, format string, args ...any) error {
	return &badRequest{param: param, msg: param + ": " + fmt.Sprintf(format, args...), code: invalidCode(format)}
}

// invalidCode is the OpenAI error code of a 400 made by invalid, from the
// kind of its message: the codes the real API sends for a missing
// parameter, a number out of range, a value of the wrong type, or another
// invalid value.
func invalidCode(format string) string {
	switch {
	case format == "field required":
		return "missing_required_parameter"
	case strings.HasPrefix(format, "must be at least"):
		return "integer_below_min_value"
	case strings.HasPrefix(format, "%d is above the maximum"):
		return "integer_above_max_value"
	case strings.HasPrefix(format, "want "):
		return "invalid_type"
	}
	return "invalid_value"
}

// wire is one provider's wire format.
type wire interface {
	name() string
	// requestIDHeader is request-id or x-request-id, canonical.
	requestIDHeader() string
	// decode parses a request body into c, which is zero; errors are
	// *badRequest.
	decode(body []byte, defaultMax int, c *call) error
	// writeError writes the provider's error envelope.
	writeError(w http.ResponseWriter, status int, e apiError, reqID string)
	// appendLimitHeaders appends the values of the rate-limit headers of
	// s to b, adding each to l.
	appendLimitHeaders(b []byte, l *headerList, s snapshot, now time.Time) []byte
	// overloadStatus is 529 (Anthropic) or 503 (OpenAI).
	overloadStatus() int
	// body appends a complete non-streaming response to b.
	body(b []byte, c *call, r *result) ([]byte, error)
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
	clock   clock.Clock // the Server's: the Responses API's completed_at
	n       int         // output tokens
	capped  bool        // n == max_tokens: stop_reason max_tokens / finish_reason length
	// text holds Output.Text's tokens, JSON-escaped; nil for the filler.
	text []string
}

// apiError is an error answer; its type (rate_limit_error, …) follows
// from the status, and OpenAI's envelope maps it to its own type and code.
type apiError struct {
	msg   string
	param string
	limit string // the limit of a 429
	code  string // OpenAI's error code, when the status alone does not say it
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
	h := w.Header()
	h["Content-Type"] = valueJSON
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	w.Write(b)
}

// message is one message of either API; an absent role decodes as "".
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// absentString is what decoding starts a string field from, to tell an
// absent (or null) field from an empty one; an integer field that must be
// told apart is a pointer, nil when absent or null.
const absentString = "\x00absent"

// decodeRequest decodes a request body (or a part of one) into *v, which
// holds the values decoding starts from (the absent sentinels), as
// json.Unmarshal would. segmentio/encoding's decoder, a drop-in for
// encoding/json, decodes a valid body in about a third of the time with
// half the allocations (BenchmarkHandlerJSON); a body it refuses is decoded
// again by encoding/json, whose errors the 400s are worded from.
// FuzzDecodeRequest holds the two decoders to the same verdict and the same
// values for any body.
func decodeRequest[T any](body []byte, v *T) error {
	start := *v
	if segjson.Unmarshal(body, v) == nil {
		return nil
	}
	*v = start
	return json.Unmarshal(body, v)
}

// requestPool holds the structs the requests of one API are decoded into.
// A request's fields are copied out of its struct (its slices are the
// decoder's own allocations), and put clears the struct before it goes
// back: a pooled struct would otherwise keep a large body's decoded
// messages past the collection decodeBudget forces to give that memory
// back (a pool's items outlive one collection).
type requestPool[T any] struct{ p sync.Pool }

func (p *requestPool[T]) get() *T {
	if v, ok := p.p.Get().(*T); ok {
		return v
	}
	return new(T)
}

func (p *requestPool[T]) put(v *T) {
	var zero T
	*v = zero
	p.p.Put(v)
}

// isNull reports whether the raw JSON value v is null.
func isNull(v []byte) bool { return string(v) == "null" }

func checkModel(model string) error {
	switch model {
	case absentString:
		return invalid("model", "field required")
	case "":
		return invalid("model", "must not be empty")
	}
	return nil
}

func checkMaxTokens(name string, v int64) (int, error) {
	switch {
	case v < 1:
		return 0, invalid(name, "must be at least 1, got %d", v)
	case v > MaxOutputTokens:
		return 0, invalid(name, "%d is above the maximum of %d", v, MaxOutputTokens)
	}
	return int(v), nil
}

func checkMessages(m []message) error {
	switch {
	case m == nil:
		return invalid("messages", "field required")
	case len(m) == 0:
		return invalid("messages", "at least one message is required")
	}
	return nil
}

// msgPath names a field of message i, e.g. messages.0.role; i < 0 names the
// system prompt.
func msgPath(i int, field string) string {
	if i < 0 {
		return "system"
	}
	return "messages." + strconv.Itoa(i) + "." + field
}

// describeBodyError explains a decoding error. Messages are decoded in one
// pass for speed; when that fails, the messages are decoded one by one to
// name the one that is wrong.
func describeBodyError(body []byte, err error) error {
	var raw struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(body, &raw) == nil {
		for i, m := range raw.Messages {
			var msg message
			if json.Unmarshal(m, &msg) != nil {
				return invalid("messages."+strconv.Itoa(i), "want a message object with role and content")
			}
		}
	}
	return describeJSONError(err)
}

// contentLen is the length in characters of the content of message i (or
// of the system prompt, for i < 0): a string, or an array of blocks whose
// text blocks count their text and whose other blocks count the length of
// their JSON. The body has already been checked to be valid JSON.
func contentLen(raw json.RawMessage, i int) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, invalid(msgPath(i, "content"), "field required")
	}
	switch raw[0] {
	case '"':
		return stringLen(raw, i)
	case '[':
		var blocks []json.RawMessage
		if err := decodeRequest(raw, &blocks); err != nil {
			return 0, invalid(msgPath(i, "content"), "invalid array")
		}
		n := 0
		for j, blk := range blocks {
			var tb struct {
				Type *string         `json:"type"`
				Text json.RawMessage `json:"text"`
			}
			if err := decodeRequest(blk, &tb); err != nil {
				return 0, invalid(fmt.Sprintf("%s.%d", msgPath(i, "content"), j), "want a content block object")
			}
			switch {
			case tb.Type == nil || *tb.Type == "":
				return 0, invalid(fmt.Sprintf("%s.%d.type", msgPath(i, "content"), j), "field required")
			case *tb.Type == "text":
				if len(tb.Text) == 0 || tb.Text[0] != '"' {
					return 0, invalid(fmt.Sprintf("%s.%d.text", msgPath(i, "content"), j), "want a string")
				}
				l, err := stringLen(tb.Text, i)
				if err != nil {
					return 0, err
				}
				n += l
			default:
				n += utf8.RuneCount(blk)
			}
		}
		return n, nil
	}
	return 0, invalid(msgPath(i, "content"), "want a string or an array of content blocks")
}

// stringLen is the length in characters of a JSON string literal's value;
// it decodes only strings with escapes.
func stringLen(raw []byte, i int) (int, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return utf8.RuneCount(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, invalid(msgPath(i, "content"), "invalid string")
	}
	return utf8.RuneCountInString(s), nil
}

// messageTokens applies the documented estimate to one message of n
// characters.
func messageTokens(n int) int { return max(1, (n+3)/4) }

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

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

// appendText appends tokens [from, to) of r's text, JSON-escaped: the
// configured Output.Text, or the filler.
func appendText(b []byte, r *result, from, to int) []byte {
	if r.text == nil {
		return appendFillerJSON(b, from, to)
	}
	for _, t := range r.text[from:to] {
		b = append(b, t...)
	}
	return b
}

// textTokens splits text into its tokens, four characters each (the last
// may be shorter), each JSON-escaped for a string literal as encoding/json
// escapes it. The tokens share one string: tool calls and structured
// output split every document they send.
func textTokens(text string) []string {
	esc := make([]byte, 0, len(text)+len(text)/8)
	ends := make([]int, 0, (len(text)+3)/4)
	chars := 0
	for i, r := range text {
		c := text[i] // an invalid byte is r = U+FFFD, written as such
		switch {
		case c == '"' || c == '\\':
			esc = append(esc, '\\', c)
		case c == '\n':
			esc = append(esc, `\n`...)
		case c == '\r':
			esc = append(esc, `\r`...)
		case c == '\t':
			esc = append(esc, `\t`...)
		case c == '\b':
			esc = append(esc, `\b`...)
		case c == '\f':
			esc = append(esc, `\f`...)
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			esc = append(esc, `\u00`...)
			esc = append(esc, hexDigits[c>>4], hexDigits[c&0xf])
		case r == '\u2028' || r == '\u2029':
			esc = append(esc, `\u202`...)
			esc = append(esc, hexDigits[r&0xf])
		default:
			esc = utf8.AppendRune(esc, r)
		}
		if chars++; chars%4 == 0 {
			ends = append(ends, len(esc))
		}
	}
	if chars%4 != 0 {
		ends = append(ends, len(esc))
	}
	all := string(esc)
	out := make([]string, len(ends))
	start := 0
	for i, e := range ends {
		out[i] = all[start:e]
		start = e
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

const hexDigits = "0123456789abcdef"

// appendFillerJSON appends tokens [from, to) of the filler text; it needs no
// escaping.
func appendFillerJSON(b []byte, from, to int) []byte {
	for i := from; i < to; i++ {
		b = append(b, fillerWords[fillerIndex(i)]...)
	}
	return b
}

// headerList is the names of headers whose values are appended to one
// buffer, and where each value ends, so that they are set from one string
// (set): a dozen rate-limit headers on every response would otherwise cost
// two allocations each.
type headerList struct {
	names [12]string // canonical
	ends  [12]int
	n     int
}

// add records that the value of header name ends at len(b).
func (l *headerList) add(name string, b []byte) {
	l.names[l.n], l.ends[l.n] = name, len(b)
	l.n++
}

// set sets each header of l to its value in all, whose first starts at
// from, each in its own slot of vals (the []string net/http keeps).
func (l *headerList) set(h http.Header, all string, from int, vals []string) {
	for i, name := range l.names[:l.n] {
		vals[i] = all[from:l.ends[i]]
		from = l.ends[i]
		h[name] = vals[i : i+1 : i+1]
	}
}

// Constant header values, shared: net/http never modifies them.
var (
	valueJSON        = []string{"application/json"}
	valueEventStream = []string{"text/event-stream; charset=utf-8"}
	valueNoCache     = []string{"no-cache"}
	valueFalse       = []string{"false"}
)
