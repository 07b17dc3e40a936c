package wire

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

// Call is one decoded model request, independent of the wire format.
type Call struct {
	Model        string
	Input        int // input tokens, by EstimateTokens
	MaxTokens    int
	Stream       bool
	IncludeUsage bool // OpenAI stream_options.include_usage
	// Prefixes are the request's cacheable prefixes (cache_prefix.go); nil when
	// it has none. cacheRead and cacheWrite are the input tokens read from
	// and written to the prompt cache at admission, part of input.
	Prefixes              []Prefix
	CacheRead, CacheWrite int
	// Content is what the request asks of the answer beyond plain text
	// (content.go, composed by mock/compose.go); nil for a plain request.
	Content *ContentReq
	// State is the format's own part of the request, which only the format
	// reads (the Responses API's echo and event sequence); nil for the
	// other formats.
	State any
	// temperature and top_p as sent (nil when absent), and the first
	// message's role: what strictness checks (checkSampling) once the
	// decoder has read them.
	Temperature, TopP json.RawMessage
	FirstRole         string
	// InferenceGeo is an Anthropic request's inference_geo, which its
	// usage reports back; empty when absent.
	InferenceGeo string
	// Pool, set by Decode, names the per-key pool the request is charged
	// to besides its key's limits: a Deployment's Pool (Env). Empty: the
	// limits_by_model pool of its model, if any.
	Pool string
}

// BadRequest is a 400 naming the offending field.
type BadRequest struct {
	Param string // the field, e.g. "messages.0.content"; empty for the body
	Msg   string
	Code  string // OpenAI's error code; empty: derived from format by invalid
}

func (e *BadRequest) Error() string { return e.Msg }

// Refusal is what a Decode that refuses with a status of its own, not the
// 400 of a BadRequest, returns (Azure's 404 DeploymentNotFound); a refusal
// before decoding is a Route.Resolve's Target.Status and Target.Err.
type Refusal struct {
	Status int
	E      APIError
}

func (e *Refusal) Error() string { return e.E.Msg }

func Invalid(param, format string, args ...any) error {
	return &BadRequest{Param: param, Msg: param + ": " + fmt.Sprintf(format, args...), Code: invalidCode(format)}
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

// Format is one provider's wire format.
type Format interface {
	Name() string
	// RequestIDHeader is request-id or x-request-id, canonical.
	RequestIDHeader() string
	// Decode parses a request body into c, which is zero; errors are
	// *BadRequest.
	Decode(body []byte, defaultMax int, c *Call) error
	// WriteError writes the provider's error envelope.
	WriteError(w http.ResponseWriter, status int, e APIError, reqID string)
	// AppendLimitHeaders appends the values of the rate-limit headers of
	// s to b, adding each to l.
	AppendLimitHeaders(b []byte, l *HeaderList, s Snapshot, now time.Time) []byte
	// OverloadStatus is 529 (Anthropic) or 503 (OpenAI).
	OverloadStatus() int
	// Body appends a complete non-streaming response to b.
	Body(b []byte, c *Call, r *Result) ([]byte, error)
	// StreamStart, StreamDelta, StreamEnd and StreamError append SSE frames.
	StreamStart(b []byte, c *Call, r *Result) []byte
	StreamDelta(b []byte, c *Call, r *Result, from, to int) []byte
	StreamEnd(b []byte, c *Call, r *Result) []byte
	StreamError(b []byte, c *Call, r *Result) []byte
	// Spec is what the core asks of the format beyond encoding; it is the
	// same for every value of the format with the same Name (a value made
	// per request, Route.Resolve, differs in what it encodes, not in its
	// Spec).
	Spec() *Spec
}

// Catalogues of model names (the core's models.go): the format's requests
// name models of one of them, and the models endpoints answer in its shape.
const (
	CatalogAnthropic = "anthropic"
	CatalogOpenAI    = "openai"
)

// Spec is the part of a format that the core reads as values and plain
// functions rather than encoding calls: where the format is served, how
// its keys, headers and strictness work, and its words for the refusals
// the core decides.
type Spec struct {
	// Path is the format's model endpoint (POST); empty when all of the
	// format's endpoints are in Routes.
	Path string
	// Routes are the format's endpoints besides Path (routes.go's
	// routeTable registers them after the core's /v1/models routes).
	Routes []Route
	// OwnsRequest reports whether req, a request no route matched (a 404
	// or 405) or a request to the core's /v1/models endpoints, is the
	// format's: its route errors take the format's envelope and the models
	// endpoints answer in its shape (wireOf asks each registered format
	// in turn); nil: the core tells Anthropic from OpenAI by path and
	// headers.
	OwnsRequest func(req *http.Request) bool
	// IDPrefix starts the id of an admitted request's message: msg_,
	// chatcmpl-, resp_.
	IDPrefix string
	// Catalog is the model catalogue the format's requests name
	// (CatalogAnthropic, CatalogOpenAI, or the name of CatalogModels).
	Catalog string
	// CatalogModels are the model ids of a catalogue of the format's own,
	// named Catalog; nil: Catalog is one of the core's. The server accepts
	// them and Models.Extra, and its models endpoints list them.
	CatalogModels []string
	// ModelAliases are the catalogue names a model id in a request may
	// stand for, the id itself among them (Vertex AI's
	// claude-sonnet-4-5@20250929 is claude-sonnet-4-5 or
	// claude-sonnet-4-5-20250929); nil: the id itself only.
	ModelAliases func(id string) []string
	// ListModelsBody and ModelBody are the answers of the models endpoints
	// (list and get) in the format's shape; nil: the core's shape for
	// Catalog (Anthropic's or OpenAI's).
	ListModelsBody func(models []Model) any
	ModelBody      func(m Model) any
	// APIKeyHeader is the header that carries the API key besides a bearer
	// token (X-Api-Key), canonical; empty: a bearer token only.
	APIKeyHeader string
	// APIKeyQuery is a query parameter that carries the API key (?key=),
	// read after APIKeyHeader and before a bearer token; empty: none.
	APIKeyQuery string
	// MissingKey is the 401 message of a request that sends no key.
	MissingKey string
	// VersionHeader is a header strictness requires (Anthropic-Version),
	// canonical; empty: none.
	VersionHeader string
	// Headers are sent on every response, with values never modified.
	Headers []Header
	// Processing sends openai-processing-ms, the time from a request's
	// arrival to its response's headers.
	Processing bool
	// AutoCache is true when the API caches a repeated prefix by itself
	// (OpenAI) rather than at cache_control breakpoints (Anthropic).
	AutoCache bool
	// ShouldRetryLimited sends x-should-retry: true with the 429s of rate
	// limits, as Anthropic does (docs/wire.md §1.4, §6).
	ShouldRetryLimited bool
	// QuotaMessage is the message of a 429 for a spent quota: limit is the
	// quota ("1000 requests", "$5.00"), dim its dimension (quota.DIM).
	QuotaMessage func(limit, dim string) string
	// ModelNotFound is the 404 for a model the server does not serve.
	ModelNotFound func(id string) APIError
	// CheckSampling is strictness's check of what Decode read (sampling
	// ranges, the first turn); nil when none.
	CheckSampling func(c *Call) *APIError
	// DecodeCount decodes a count-tokens request for f (a value of the
	// format, as Route.Resolve made it) into c, whose Input is then the
	// count; CountBody is the answer for c. Both are set for a format with
	// an EndpointCountTokens route.
	DecodeCount func(f Format, body []byte, c *Call) error
	CountBody   func(c *Call) any

	// RetryAfterMS sends retry-after-ms with the 429 of a per-key or
	// per-model limit (the core's limited), as Limits.RetryAfterMS does for
	// every format: Azure always sends it.
	RetryAfterMS bool

	// The hooks below are for a format unlike the built-in three (Bedrock
	// Runtime's); each is read by the core in one place, and its zero value
	// is what the built-in formats do.

	// Authenticate, when set, replaces the core's key check (APIKeyHeader,
	// APIKeyQuery, a bearer token, MissingKey), open mode included
	// (auth.go): it returns the key req is limited as ("" in open mode), or
	// ok false and the 401's message. It may read req's body to verify a
	// signature, putting back a body that reads the same.
	Authenticate func(req *http.Request, creds Credentials) (key string, ok bool, why string)
	// StreamContentType is the Content-Type of a streamed answer; nil:
	// text/event-stream (ValueEventStream) (handle.go's stream).
	StreamContentType []string
	// AttemptIndex, when set, replaces the core's reading of a request's
	// attempt index (X-Stainless-Retry-Count) with the format's SDKs'
	// header: 0 for the first attempt, -1 when the request does not say
	// (ids.go's attemptIndex; what Faults.Script and the call log count).
	AttemptIndex func(req *http.Request) int
}

// Endpoint is what a Route serves: the core's handler for it.
type Endpoint int

const (
	// EndpointModel is a model request (the pipeline of Path).
	EndpointModel Endpoint = iota
	// EndpointCountTokens answers the input-token estimate of a model
	// request (Spec.DecodeCount, Spec.CountBody).
	EndpointCountTokens
	// EndpointListModels and EndpointGetModel are the models endpoints;
	// the model of EndpointGetModel is the path's {id}.
	EndpointListModels
	EndpointGetModel
)

// Route is one of a format's endpoints besides Spec.Path.
type Route struct {
	Method string
	// Path is a gorilla/mux template; its variables go to Resolve.
	Path string
	// Endpoint is what the route serves, by the registered value of the
	// format, when Resolve is nil.
	Endpoint Endpoint
	// Resolve reads a request to the route (its path's variables, its
	// query): the value of the format that serves it, made per request
	// (the model named in the path, whether the method streams), and the
	// endpoint; or a refusal (Target.Err), which the core answers in
	// Target.Format's envelope before authentication. env is the server's
	// configuration as formats see it (its deployments, its content filter).
	Resolve func(req *http.Request, vars map[string]string, env *Env) Target
}

// Target is a Route's Resolve's answer.
type Target struct {
	Format   Format
	Endpoint Endpoint
	// Status and Err refuse the request; Err nil: serve it.
	Status int
	Err    *APIError
}

// Model is one model of a catalogue, as the models endpoints describe it.
type Model struct {
	ID, DisplayName string
	Created         time.Time
}

// Credentials are what the server is configured to accept, for
// Spec.Authenticate.
type Credentials struct {
	// Keys are the accepted API keys (Config.APIKeys); none: open mode.
	Keys map[string]bool
	// Secrets maps an access key id to its secret key
	// (Config.AWSSecretKeys), for a signature verified for real.
	Secrets map[string]string
	// MaxBody is the largest body the server reads (mock.MaxBodyBytes):
	// an authenticator that reads the body reads no more than one byte
	// past it.
	MaxBody int
}

// Env is the server as a format's Route.Resolve sees it: built once per server by
// the core (mock/server.go, New) from its configuration.
type Env struct {
	// Accepts reports whether requests may name model of catalog (the
	// catalogue, models:).
	Accepts func(catalog, model string) bool
	// Deployments are names a request may address a model by, each with
	// the pool its requests are charged to (Azure's deployments, the
	// azure: block of mock/config.go); nil: none configured.
	Deployments map[string]Deployment
	// Filtered draws whether the content filter refuses a request, at its
	// configured rate, from a seeded source of its own; false at rate 0.
	Filtered func() bool
}

// Deployment is a name a request may address a model by.
type Deployment struct {
	// Model is the model it serves.
	Model string
	// Pool is the name of its per-key pool (Call.Pool); empty when it has
	// no limits of its own.
	Pool string
}

// Header is one header and its value, canonical.
type Header struct {
	Name  string
	Value []string
}

// OrganizationID is the organization every Anthropic response names, a
// fixed, made-up one.
var OrganizationID = []string{"5f0c2a49-6d6f-4b63-8b6c-6c6d6f636b6c"}

// Result is what the server tells a client about an admitted request.
type Result struct {
	ID      string // message / completion id
	Created time.Time
	Clock   clock.Clock // the Server's: the Responses API's completed_at
	N       int         // output tokens
	Capped  bool        // n == max_tokens: stop_reason max_tokens / finish_reason length
	// Text holds Output.Text's tokens, JSON-escaped; nil for the filler.
	Text []string
}

// APIError is an error answer; its type (rate_limit_error, …) follows
// from the status, and OpenAI's envelope maps it to its own type and code.
type APIError struct {
	Msg   string
	Param string
	Limit string // the limit of a 429
	Code  string // OpenAI's error code, when the status alone does not say it
	// NullCode asks OpenAI's envelope for code null where the status would
	// give one: a 404 for an object that does not exist (a batch, a file;
	// the batch APIs, mock/batches.go), not for an unknown URL. Anthropic's
	// envelope has no code and ignores it.
	NullCode bool
}

func WriteJSONBody(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for the types written here
		b = []byte(`{}`)
	}
	h := w.Header()
	h["Content-Type"] = ValueJSON
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	w.Write(b)
}

// Message is one message of either API; an absent role decodes as "".
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// AbsentString is what decoding starts a string field from, to tell an
// absent (or null) field from an empty one; an integer field that must be
// told apart is a pointer, nil when absent or null.
const AbsentString = "\x00absent"

// DecodeRequest decodes a request body (or a part of one) into *v, which
// holds the values decoding starts from (the absent sentinels), as
// json.Unmarshal would. segmentio/encoding's decoder, a drop-in for
// encoding/json, decodes a valid body in about a third of the time with
// half the allocations (BenchmarkHandlerJSON); a body it refuses is decoded
// again by encoding/json, whose errors the 400s are worded from.
// FuzzDecodeRequest holds the two decoders to the same verdict and the same
// values for any body.
func DecodeRequest[T any](body []byte, v *T) error {
	start := *v
	if segjson.Unmarshal(body, v) == nil {
		return nil
	}
	*v = start
	return json.Unmarshal(body, v)
}

// RequestPool holds the structs the requests of one API are decoded into.
// A request's fields are copied out of its struct (its slices are the
// decoder's own allocations), and put clears the struct before it goes
// back: a pooled struct would otherwise keep a large body's decoded
// messages past the collection decodeBudget forces to give that memory
// back (a pool's items outlive one collection).
type RequestPool[T any] struct{ p sync.Pool }

func (p *RequestPool[T]) Get() *T {
	if v, ok := p.p.Get().(*T); ok {
		return v
	}
	return new(T)
}

func (p *RequestPool[T]) Put(v *T) {
	var zero T
	*v = zero
	p.p.Put(v)
}

// IsNull reports whether the raw JSON value v is null.
func IsNull(v []byte) bool { return string(v) == "null" }

func CheckModel(model string) error {
	switch model {
	case AbsentString:
		return Invalid("model", "field required")
	case "":
		return Invalid("model", "must not be empty")
	}
	return nil
}

func CheckMaxTokens(name string, v int64) (int, error) {
	switch {
	case v < 1:
		return 0, Invalid(name, "must be at least 1, got %d", v)
	case v > MaxOutputTokens:
		return 0, Invalid(name, "%d is above the maximum of %d", v, MaxOutputTokens)
	}
	return int(v), nil
}

func CheckMessages(m []Message) error {
	switch {
	case m == nil:
		return Invalid("messages", "field required")
	case len(m) == 0:
		return Invalid("messages", "at least one message is required")
	}
	return nil
}

// MsgPath names a field of message i, e.g. messages.0.role; i < 0 names the
// system prompt.
func MsgPath(i int, field string) string {
	if i < 0 {
		return "system"
	}
	return "messages." + strconv.Itoa(i) + "." + field
}

// DescribeBodyError explains a decoding error. Messages are decoded in one
// pass for speed; when that fails, the messages are decoded one by one to
// name the one that is wrong.
func DescribeBodyError(body []byte, err error) error {
	var raw struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(body, &raw) == nil {
		for i, m := range raw.Messages {
			var msg Message
			if json.Unmarshal(m, &msg) != nil {
				return Invalid("messages."+strconv.Itoa(i), "want a message object with role and content")
			}
		}
	}
	return DescribeJSONError(err)
}

// ContentLen is the length in characters of the content of message i (or
// of the system prompt, for i < 0): a string, or an array of blocks whose
// text blocks count their text and whose other blocks count the length of
// their JSON. The body has already been checked to be valid JSON.
func ContentLen(raw json.RawMessage, i int) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, Invalid(MsgPath(i, "content"), "field required")
	}
	switch raw[0] {
	case '"':
		return stringLen(raw, i)
	case '[':
		var blocks []json.RawMessage
		if err := DecodeRequest(raw, &blocks); err != nil {
			return 0, Invalid(MsgPath(i, "content"), "invalid array")
		}
		n := 0
		for j, blk := range blocks {
			var tb struct {
				Type *string         `json:"type"`
				Text json.RawMessage `json:"text"`
			}
			if err := DecodeRequest(blk, &tb); err != nil {
				return 0, Invalid(fmt.Sprintf("%s.%d", MsgPath(i, "content"), j), "want a content block object")
			}
			switch {
			case tb.Type == nil || *tb.Type == "":
				return 0, Invalid(fmt.Sprintf("%s.%d.type", MsgPath(i, "content"), j), "field required")
			case *tb.Type == "text":
				if len(tb.Text) == 0 || tb.Text[0] != '"' {
					return 0, Invalid(fmt.Sprintf("%s.%d.text", MsgPath(i, "content"), j), "want a string")
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
	return 0, Invalid(MsgPath(i, "content"), "want a string or an array of content blocks")
}

// stringLen is the length in characters of a JSON string literal's value;
// it decodes only strings with escapes.
func stringLen(raw []byte, i int) (int, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return utf8.RuneCount(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, Invalid(MsgPath(i, "content"), "invalid string")
	}
	return utf8.RuneCountInString(s), nil
}

// MessageTokens applies the documented estimate to one message of n
// characters.
func MessageTokens(n int) int { return max(1, (n+3)/4) }

// AppendJSONString appends s as a JSON string.
func AppendJSONString(b []byte, s string) []byte {
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

// DescribeJSONError turns encoding/json's errors into a message naming the
// field.
func DescribeJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return &BadRequest{Msg: fmt.Sprintf("request body: want a JSON object, got %s", te.Value)}
		}
		return Invalid(field, "want %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &BadRequest{Msg: fmt.Sprintf("request body: invalid JSON at offset %d: %v", se.Offset, err)}
	}
	return &BadRequest{Msg: "request body: invalid JSON: " + err.Error()}
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

// AppendSSE appends one frame; event is omitted when empty (OpenAI).
func AppendSSE(b []byte, event string, data []byte) []byte {
	if event != "" {
		b = append(b, "event: "...)
		b = append(b, event...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// AppendText appends tokens [from, to) of r's text, JSON-escaped: the
// configured Output.Text, or the filler.
func AppendText(b []byte, r *Result, from, to int) []byte {
	if r.Text == nil {
		return appendFillerJSON(b, from, to)
	}
	for _, t := range r.Text[from:to] {
		b = append(b, t...)
	}
	return b
}

// TextTokens splits text into its tokens, four characters each (the last
// may be shorter), each JSON-escaped for a string literal as encoding/json
// escapes it. The tokens share one string: tool calls and structured
// output split every document they send.
func TextTokens(text string) []string {
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
		b = append(b, FillerWords[FillerIndex(i)]...)
	}
	return b
}

// HeaderList is the names of headers whose values are appended to one
// buffer, and where each value ends, so that they are set from one string
// (set): a dozen rate-limit headers on every response would otherwise cost
// two allocations each.
type HeaderList struct {
	Names [12]string // canonical
	ends  [12]int
	N     int
}

// Add records that the value of header name ends at len(b).
func (l *HeaderList) Add(name string, b []byte) {
	l.Names[l.N], l.ends[l.N] = name, len(b)
	l.N++
}

// Set sets each header of l to its value in all, whose first starts at
// from, each in its own slot of vals (the []string net/http keeps).
func (l *HeaderList) Set(h http.Header, all string, from int, vals []string) {
	for i, name := range l.Names[:l.N] {
		vals[i] = all[from:l.ends[i]]
		from = l.ends[i]
		h[name] = vals[i : i+1 : i+1]
	}
}

// Constant header values, shared: net/http never modifies them.
var (
	ValueJSON        = []string{"application/json"}
	ValueEventStream = []string{"text/event-stream; charset=utf-8"}
	ValueNoCache     = []string{"no-cache"}
	ValueFalse       = []string{"false"}
)

// RawFloat is a decoded number as the JSON it was, for checkRange; nil
// when absent.
func RawFloat(v *float64) json.RawMessage {
	if v == nil {
		return nil
	}
	return strconv.AppendFloat(nil, *v, 'g', -1, 64)
}

// MaxOutputTokens is the largest max_tokens a request may ask for.
const MaxOutputTokens = 128000

// CheckRange checks a number in [0, hi] for strictness; null is absent.
// anthropicStyle words the error as the Messages API does.
func CheckRange(v []byte, name string, hi float64, anthropicStyle bool) *APIError {
	if IsNull(v) {
		return nil
	}
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return &APIError{Msg: name + ": want a number, got " + string(v), Param: name, Code: "invalid_type"}
	}
	if x >= 0 && x <= hi {
		return nil
	}
	if anthropicStyle {
		return &APIError{Msg: fmt.Sprintf("%s: range: 0..%g, got %g", name, hi, x), Param: name}
	}
	if x < 0 {
		return &APIError{Msg: fmt.Sprintf("Invalid '%s': decimal below minimum value. Expected a value >= 0, but got %g instead.", name, x), Param: name, Code: "decimal_below_min_value"}
	}
	return &APIError{Msg: fmt.Sprintf("Invalid '%s': decimal above maximum value. Expected a value <= %g, but got %g instead.", name, hi, x), Param: name, Code: "decimal_above_max_value"}
}

// StrPtr is a pointer to s, nil for "": a JSON null.
func StrPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
