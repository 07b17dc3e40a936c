// Package bedrock is the Amazon Bedrock Runtime wire format of package
// provider: Converse and ConverseStream (docs/bedrock.md). Requests are
// signed with AWS Signature Version 4 by aws-sdk-go-v2's signer, or carry
// a Bedrock API key as a bearer token; streams are read with aws-sdk-go-v2's
// eventstream decoder.
package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/tidwall/gjson"

	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// DefaultRegion is the region of a Format without one.
const DefaultRegion = "us-east-1"

// Format is Bedrock Runtime's Converse API: POST
// {base}/model/{modelId}/converse, or converse-stream for a stream, where
// the base is https://bedrock-runtime.{region}.amazonaws.com and modelId a
// foundation model (anthropic.claude-sonnet-4-5-20250929-v1:0), an
// inference profile (us.anthropic.…) or an ARN.
//
// The API key is either AKID:SECRET (or AKID:SECRET:SESSION_TOKEN), which
// signs each request with SigV4 for Region, or a Bedrock API key (no
// colon), sent as Authorization: Bearer, as the SDKs send
// AWS_BEARER_TOKEN_BEDROCK.
type Format struct {
	// Region is the signing region; empty is DefaultRegion.
	Region string
}

var _ wire.Format = Format{}

// Name returns "bedrock".
func (Format) Name() string { return "bedrock" }

func (f Format) region() string {
	if f.Region == "" {
		return DefaultRegion
	}
	return f.Region
}

// DefaultBaseURL returns https://bedrock-runtime.{region}.amazonaws.com.
func (f Format) DefaultBaseURL() string {
	return "https://bedrock-runtime." + f.region() + ".amazonaws.com"
}

// KeyEnv returns AWS_BEARER_TOKEN_BEDROCK, the Bedrock API key the AWS
// SDKs read; it may also hold AKID:SECRET (see Format).
func (Format) KeyEnv() string { return "AWS_BEARER_TOKEN_BEDROCK" }

type textBlock struct {
	Text string `json:"text,omitempty"`
	// CachePoint marks a prompt-cache checkpoint after the blocks before
	// it: {"type": "default"}.
	CachePoint *cachePoint `json:"cachePoint,omitempty"`
}

type cachePoint struct {
	Type string `json:"type"`
}

type message struct {
	Role    string      `json:"role"`
	Content []textBlock `json:"content"`
}

type converseRequest struct {
	Messages        []message       `json:"messages"`
	System          []textBlock     `json:"system,omitempty"`
	InferenceConfig inferenceConfig `json:"inferenceConfig"`
}

type inferenceConfig struct {
	MaxTokens int `json:"maxTokens,omitempty"`
}

// modelPath escapes a model id for the path as the AWS SDKs do: every
// character outside the unreserved set, ":" and "/" included.
func modelPath(id string) string {
	return strings.ReplaceAll(url.PathEscape(id), ":", "%3A")
}

// Header values shared by every request.
var acceptEventStream = []string{"application/vnd.amazon.eventstream"}

// NewRequest builds POST {base}/model/{modelId}/converse (or
// converse-stream), signed with SigV4 or carrying a bearer token, with
// amz-sdk-request naming the attempt as the AWS SDKs do.
func (f Format) NewRequest(ctx context.Context, baseURL, apiKey string, r wire.Request, attempt int) (*http.Request, error) {
	body := converseRequest{InferenceConfig: inferenceConfig{MaxTokens: r.MaxTokens}, Messages: []message{}}
	if r.System != "" {
		body.System = []textBlock{{Text: r.System}}
		switch r.SystemCache {
		case "":
		case "5m":
			body.System = append(body.System, textBlock{CachePoint: &cachePoint{Type: "default"}})
		default:
			return nil, fmt.Errorf("provider: bedrock request: SystemCache %q (Bedrock's cache points have one TTL: want 5m)", r.SystemCache)
		}
	} else if r.SystemCache != "" {
		return nil, fmt.Errorf("provider: bedrock request: SystemCache %q without a system prompt to cache", r.SystemCache)
	}
	for _, m := range r.Messages {
		body.Messages = append(body.Messages, message{Role: m.Role, Content: []textBlock{{Text: m.Content}}})
	}
	op := "/converse"
	if r.Stream {
		op = "/converse-stream"
	}
	req, h, err := wire.NewPost(ctx, "bedrock", wire.JoinURL(baseURL, f.DefaultBaseURL(), "/model/"+modelPath(r.Model)+op), body, r, attempt)
	if err != nil {
		return nil, err
	}
	if r.Stream {
		h["Accept"] = acceptEventStream
	}
	h["Amz-Sdk-Request"] = []string{"attempt=" + strconv.Itoa(attempt+1)}
	if apiKey == "" {
		return req, nil
	}
	parts := strings.SplitN(apiKey, ":", 3)
	if len(parts) == 1 {
		h["Authorization"] = []string{"Bearer " + apiKey}
		return req, nil
	}
	creds := aws.Credentials{AccessKeyID: parts[0], SecretAccessKey: parts[1]}
	if len(parts) == 3 {
		creds.SessionToken = parts[2]
	}
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return nil, fmt.Errorf("provider: bedrock request: the API key is AKID:SECRET[:SESSION_TOKEN] with both parts non-empty, or a Bedrock API key without a colon")
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	sum := sha256.Sum256(b)
	// SignHTTP signs every header present: the ones the AWS SDKs would
	// not send stay out (X-Stainless-Retry-Count is ratelab's attempt
	// count for the mock; Idempotency-Key is sent when asked for).
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "bedrock", f.region(), time.Now()); err != nil {
		return nil, fmt.Errorf("provider: bedrock request: sign: %w", err)
	}
	return req, nil
}

// Decode reads a Converse response, or a ConverseStream event stream.
func (Format) Decode(resp *http.Response, sent time.Time) (out wire.Response, o strategies.Outcome) {
	wire.Decode(resp, sent, &spec, &out, &o)
	return out, o
}

// Spec returns Bedrock's part of wire.Decode.
func (Format) Spec() *wire.Spec { return &spec }

var spec = wire.Spec{
	RequestID:       "X-Amzn-Requestid",
	Limits:          func(http.Header, time.Time) strategies.Limits { return strategies.Limits{} }, // Bedrock sends none
	ParseError:      parseError,
	Event:           event,
	Body:            decodeBody,
	EventStream:     newEventReader,
	EventStreamType: "application/vnd.amazon.eventstream",
	ErrorType:       errorType,
	Kind:            kind,
}

// decodeBody reads a Converse response: output.message.content's text
// blocks, stopReason, usage.
func decodeBody(v gjson.Result, out wire.Response) wire.Response {
	f := gjson.GetMany(v.Raw, "output.message.content", "stopReason", "usage.inputTokens", "usage.outputTokens",
		"usage.cacheReadInputTokens", "usage.cacheWriteInputTokens")
	var b strings.Builder
	f[0].ForEach(func(_, block gjson.Result) bool {
		if t := block.Get("text"); t.Exists() {
			b.WriteString(t.String())
		}
		return true
	})
	out.Text, out.StopReason = b.String(), f[1].String()
	out.Usage = strategies.Usage{InputTokens: int(f[2].Int()), OutputTokens: int(f[3].Int()),
		CacheReadInputTokens: int(f[4].Int()), CacheCreationInputTokens: int(f[5].Int())}
	return out
}

// event reads one ConverseStream event: the text deltas, messageStop's
// stopReason, and metadata's usage, the last event. An exception message
// ends the attempt as Failed, as a stream that has begun is not retried.
func event(s *wire.Stream, ev wire.SSEEvent) bool {
	if exc, ok := strings.CutPrefix(ev.Event, exceptionPrefix); ok {
		s.Fail(exc, gjson.GetBytes(ev.Data, "message").String())
		return true
	}
	if !gjson.ValidBytes(ev.Data) {
		s.Invalid(fmt.Errorf("event %q: %w", ev.Event, wire.ErrNotJSON))
		return true
	}
	switch ev.Event {
	case "contentBlockDelta":
		if t := gjson.GetBytes(ev.Data, "delta.text"); t.Exists() {
			s.Delta(t.String())
		}
	case "messageStop":
		s.Out.StopReason = gjson.GetBytes(ev.Data, "stopReason").String()
	case "metadata":
		f := gjson.GetManyBytes(ev.Data, "usage.inputTokens", "usage.outputTokens", "usage.cacheReadInputTokens", "usage.cacheWriteInputTokens")
		s.Out.Usage = strategies.Usage{InputTokens: int(f[0].Int()), OutputTokens: int(f[1].Int()),
			CacheReadInputTokens: int(f[2].Int()), CacheCreationInputTokens: int(f[3].Int())}
		return true
	}
	return false
}

// exceptionPrefix marks an exception message among the Events the reader
// returns: "exception:" and the :exception-type (throttlingException, …).
const exceptionPrefix = "exception:"

// eventReader reads eventstream messages with aws-sdk-go-v2's decoder
// (which checks both CRCs) as Events: an event message is its
// :event-type and payload, an exception message exceptionPrefix and its
// :exception-type, an error message exceptionPrefix and its :error-code.
type eventReader struct {
	r   io.Reader
	dec *eventstream.Decoder
	buf []byte
}

func newEventReader(r io.Reader) wire.EventReader {
	return &eventReader{r: r, dec: eventstream.NewDecoder()}
}

func (e *eventReader) Next() (wire.SSEEvent, error) {
	msg, err := e.dec.Decode(e.r, e.buf[:0])
	if err != nil {
		return wire.SSEEvent{}, err
	}
	e.buf = msg.Payload
	str := func(name string) string {
		if v := msg.Headers.Get(name); v != nil {
			return v.String()
		}
		return ""
	}
	switch t := str(":message-type"); t {
	case "event":
		return wire.SSEEvent{Event: str(":event-type"), Data: msg.Payload}, nil
	case "exception":
		return wire.SSEEvent{Event: exceptionPrefix + str(":exception-type"), Data: msg.Payload}, nil
	case "error":
		return wire.SSEEvent{Event: exceptionPrefix + str(":error-code"), Data: []byte(`{"message":` + strconv.Quote(str(":error-message")) + `}`)}, nil
	default:
		return wire.SSEEvent{}, fmt.Errorf("provider: bedrock event stream: message type %q", t)
	}
}

// parseError reads Bedrock's error body, {"message": …}; the type is in
// x-amzn-ErrorType (errorType).
func parseError(body []byte) (wire.ErrorBody, bool) {
	if !gjson.ValidBytes(body) {
		return wire.ErrorBody{}, false
	}
	m := gjson.GetBytes(body, "message")
	if !m.Exists() {
		m = gjson.GetBytes(body, "Message")
	}
	if !m.Exists() {
		return wire.ErrorBody{}, false
	}
	return wire.ErrorBody{Type: gjson.GetBytes(body, "__type").String(), Message: m.String()}, true
}

// errorType is x-amzn-ErrorType up to its first colon, as the SDKs read
// it: ThrottlingException:http://internal.amazon.com/coral/… is
// ThrottlingException.
func errorType(h http.Header) string {
	v := h.Get("X-Amzn-Errortype")
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// kind classifies Bedrock's errors beyond their status: a
// ModelNotReadyException is a 429 for a model that cannot serve yet, an
// overload, not a rate limit; a ServiceQuotaExceededException (400) is a
// quota no retry fixes.
func kind(e *wire.APIError, k strategies.Kind) strategies.Kind {
	switch e.Type {
	case "ModelNotReadyException":
		return strategies.Overloaded
	case "ServiceQuotaExceededException":
		return strategies.Quota
	}
	return k
}
