package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/internal/tokenest"
	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// Client sends attempts to one provider endpoint with one key. Its zero
// BaseURL means the provider's DefaultBaseURL and its nil HTTP means
// http.DefaultClient; for load, give it an http.Client built on NewTransport.
// A Client is safe for concurrent use.
//
// A Client learns the prompt cache: after a response to a request whose
// system prompt it asked the provider to cache (Request.SystemCache), it
// remembers how many input tokens the provider reported reading from or
// writing to its cache, and until when that entry lives (the TTL after its
// last use), so that Cost can tell a strategy which part of the next call
// with the same model and system prompt is a cache read. It does so only
// for a provider whose limits leave cache reads out (Anthropic); OpenAI's
// limits count cached input, so its Cost is the whole prompt.
type Client struct {
	Provider Provider
	BaseURL  string
	APIKey   string
	HTTP     *http.Client
	// Clock measures latency and time to first token and dates rate-limit
	// resets; nil is clock.Real. Under a simulated clock, HTTP must not
	// block outside it: use an in-process transport such as mock's
	// InProcess.
	Clock clock.Clock

	cacheMu sync.Mutex
	cached  map[cachedKey]cachedPrefix
}

// cachedKey identifies a cached prefix: the model and the system prompt up
// to its breakpoint (the request's other parts follow it).
type cachedKey struct{ model, system, ttl string }

// cachedPrefix is a prefix the provider reported cached: its tokens, and
// when the provider's entry expires unless a call reads it again.
type cachedPrefix struct {
	tokens int
	until  time.Time
}

// cacheTTLs are the lifetimes of Anthropic's cache_control entries.
var cacheTTLs = map[string]time.Duration{"5m": 5 * time.Minute, "1h": time.Hour}

// cacheReadsUncounted is implemented by providers whose limits leave
// prompt-cache reads out (anthropic.Format), so that a call's Cost leaves
// them out too.
type cacheReadsUncounted interface{ CacheReadsUncounted() }

// learnCache records what the response to r (an attempt that ended with o
// at now) reported of its cached prefix: the tokens read from and written
// to the cache, together the prefix up to the breakpoint, which the next
// call with that prefix reads; a success reporting none forgets the prefix
// (the provider did not cache it: too short, or caching is off).
func (c *Client) learnCache(now time.Time, r *Request, o *strategies.Outcome) {
	ttl, ok := cacheTTLs[r.SystemCache]
	if !ok || r.System == "" || o.Kind != strategies.Success {
		return
	}
	if _, ok := c.Provider.(cacheReadsUncounted); !ok {
		return
	}
	k := cachedKey{r.Model, r.System, r.SystemCache}
	n := o.Usage.CacheReadInputTokens + o.Usage.CacheCreationInputTokens
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	if n == 0 {
		delete(c.cached, k)
		return
	}
	if c.cached == nil {
		c.cached = make(map[cachedKey]cachedPrefix)
	}
	c.cached[k] = cachedPrefix{tokens: n, until: now.Add(ttl)}
}

// cachedTokens returns the input tokens of r that the provider is expected
// to read from its cache at now: 0 unless a response to a request with the
// same model and system prompt reported them cached within their TTL.
func (c *Client) cachedTokens(now time.Time, r Request) int {
	if r.SystemCache == "" || r.System == "" {
		return 0
	}
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	e, ok := c.cached[cachedKey{r.Model, r.System, r.SystemCache}]
	if !ok || !now.Before(e.until) {
		return 0
	}
	return e.tokens
}

// Do makes exactly one HTTP request for r (attempt is its 0-based index) and
// reads the response to the end. It never returns an error separately: every
// way an attempt can end is an Outcome (Failed with Status 0 for a
// connection error, Canceled when ctx ended it), and the Response is
// meaningful when the Outcome's Kind is Success. Errors never contain the
// API key.
func (c *Client) Do(ctx context.Context, r Request, attempt int) (out Response, o strategies.Outcome) {
	c.DoInto(ctx, &r, attempt, &out, &o)
	return out, o
}

// DoInto is Do, writing the Response into *out and the Outcome into *o:
// none of its callers' frames then holds a copy of them (engine.ClientInto).
func (c *Client) DoInto(ctx context.Context, r *Request, attempt int, out *Response, o *strategies.Outcome) {
	clk := clock.Real
	if c.Clock != nil {
		// Decode finds it there (wire.WithClock): Provider.Decode's
		// signature stays that of a function of the response alone.
		clk, ctx = c.Clock, wire.WithClock(ctx, c.Clock)
	}
	*out = Response{}
	resp, sent := c.send(ctx, clk, r, attempt, o)
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if f := formatOf(c.Provider); f != nil {
		wire.Decode(resp, sent, f.Spec(), out, o)
	} else {
		decodeWith(c.Provider, resp, sent, out, o)
	}
	o.Err = c.redact(o.Err)
	c.learnCache(clk.Now(), r, o)
}

// failed sets *o to an attempt that got no response, for err, in a frame
// of its own (an Outcome literal would be a quarter kilobyte of send's).
//
//go:noinline
func (c *Client) failed(err error, o *strategies.Outcome) {
	*o = strategies.Outcome{Kind: strategies.Failed, Err: c.redact(err)}
}

// decodeWith decodes resp with p.Decode into *out and *o, in a frame of
// its own (Do's stays small: see wire.Decode).
//
//go:noinline
func decodeWith(p Provider, resp *http.Response, sent time.Time, out *Response, o *strategies.Outcome) {
	*out, *o = p.Decode(resp, sent)
}

// send builds the request for *r and sends it, at sent. When it gets no
// response, it returns a nil resp and sets *o to how the attempt ended:
// Failed, or Canceled when ctx ended it while it was sent.
func (c *Client) send(ctx context.Context, clk clock.Clock, r *Request, attempt int, o *strategies.Outcome) (resp *http.Response, sent time.Time) {
	req, err := c.Provider.NewRequest(ctx, c.BaseURL, c.APIKey, *r, attempt)
	if err != nil {
		c.failed(err, o)
		return nil, sent
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	sent = clk.Now()
	if resp, err = hc.Do(req); err != nil {
		// A response with an error (CheckRedirect's) is already closed.
		c.failed(err, o)
		o.Latency = clock.Since(clk, sent)
		if ctx.Err() != nil {
			o.Kind = strategies.Canceled
		}
		return nil, sent
	}
	return resp, sent
}

// Cost returns what r is expected to consume, for a strategy's Acquire: the
// provider's name, the key's fingerprint (strategies.Fingerprint, the format
// state files and the mock use too), EstimateTokens(r), the part of it the
// provider is expected to read from its prompt cache and leave out of its
// limits (see Client), and r.MaxTokens.
func (c *Client) Cost(r Request) strategies.Cost {
	in := EstimateTokens(r)
	return strategies.Cost{
		Provider:          c.Provider.Name(),
		Key:               keyFingerprint(c.APIKey),
		InputTokens:       in,
		CachedInputTokens: min(c.cachedTokens(clock.Or(c.Clock).Now(), r), in),
		MaxTokens:         r.MaxTokens,
	}
}

// keyFingerprint is strategies.Fingerprint(apiKey), remembered: a run uses
// one key for every call, so the last one is kept rather than hashed per
// call.
func keyFingerprint(apiKey string) string {
	if fp := lastFingerprint.Load(); fp != nil && fp.key == apiKey {
		return fp.fp
	}
	fp := &fingerprint{key: apiKey, fp: strategies.Fingerprint(apiKey)}
	lastFingerprint.Store(fp)
	return fp.fp
}

type fingerprint struct{ key, fp string }

var lastFingerprint atomic.Pointer[fingerprint]

// redact returns err with every occurrence of the client's key replaced by
// "[REDACTED]", in its own message and in an APIError's message.
func (c *Client) redact(err error) error {
	return Redact(err, c.APIKey)
}

// Redact returns err with every occurrence of secret in its message
// replaced by "[REDACTED]". An *APIError stays an *APIError (redacted); other
// errors become an error that still answers errors.Is for what err wrapped
// (context.Canceled, ErrIncompleteStream, …) but no longer unwraps to the
// original, whose message holds the secret. Short secrets (under 4
// characters) are not treated as secrets, since they would mangle ordinary
// words.
func Redact(err error, secret string) error {
	if err == nil || len(secret) < 4 {
		return err
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) && err == error(apiErr) {
		if !strings.Contains(apiErr.Message, secret) && !strings.Contains(apiErr.Type, secret) {
			return err
		}
		e := *apiErr
		e.Message = strings.ReplaceAll(e.Message, secret, "[REDACTED]")
		e.Type = strings.ReplaceAll(e.Type, secret, "[REDACTED]")
		return &e
	}
	msg := err.Error()
	if !strings.Contains(msg, secret) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(msg, secret, "[REDACTED]"), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Is lets errors.Is see what the original wrapped without exposing it to
// errors.As or Unwrap, through which the secret could be printed.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }

// NewTransport returns an http.Transport sized for concurrency simultaneous
// attempts against one host: every attempt can keep its connection idle
// between calls (MaxIdleConnsPerHost = concurrency) so a run reuses
// connections instead of dialling (and exhausting ephemeral ports), with no
// cap on connections per host (the strategy is what bounds concurrency),
// proxies from the environment, and HTTP/2 attempted over TLS. There is no
// response timeout: a long generation is not an error; use ctx for deadlines.
func NewTransport(concurrency int) *http.Transport {
	if concurrency < 1 {
		concurrency = 1
	}
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          max(concurrency, 100),
		MaxIdleConnsPerHost:   concurrency,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// EstimateTokens estimates r's input tokens before sending it, for
// strategies.Cost.InputTokens: the sum, over the system prompt (when present)
// and each message, of max(1, ceil(characters / 4)), counting Unicode code
// points. Four characters per token is the usual rule of thumb for English
// with both providers' tokenizers, and it is exactly the rule ratelab's mock
// uses for usage.input_tokens, so a token budget against the mock is exact.
// Against a real provider it is an estimate for budgeting, not a count (real
// tokenizers also add a few framing tokens per message); the server's
// reported usage is what gets settled.
func EstimateTokens(r Request) int {
	n := 0
	if r.System != "" {
		n += tokenest.Part(r.System)
	}
	for _, m := range r.Messages {
		n += tokenest.Part(m.Content)
	}
	return n
}

// String describes the client without its key.
func (c *Client) String() string {
	base := c.BaseURL
	if base == "" && c.Provider != nil {
		base = c.Provider.DefaultBaseURL()
	}
	name := "<nil>"
	if c.Provider != nil {
		name = c.Provider.Name()
	}
	if len(c.APIKey) >= 4 {
		base = strings.ReplaceAll(base, c.APIKey, "[REDACTED]")
	}
	key := "none"
	if c.APIKey != "" {
		key = keyFingerprint(c.APIKey)
	}
	return fmt.Sprintf("provider.Client{%s %s key=%s}", name, base, key)
}
