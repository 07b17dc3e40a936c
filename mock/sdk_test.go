package mock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	anthropicstream "github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// These tests point the official SDKs at the mock. Each runs inside a
// testing/synctest bubble: the mock serves an in-memory listener that the
// SDK's HTTP client dials, so latencies and the SDKs' retry sleeps take
// exact virtual time and the tests can assert on durations to the
// nanosecond without waiting for them.

const (
	sdkKey          = "sk-ratelab-test"
	sdkModel        = "claude-sonnet-4-5"
	sdkOpenAIModel  = "gpt-4o-mini"
	sdkBaseURL      = "http://mock.test"
	sdkOpenAIPrefix = "/v1"
)

// attempt is one HTTP attempt an SDK made, as the client saw it.
type attempt struct {
	at         time.Time
	path       string
	retryCount string // X-Stainless-Retry-Count
	status     int    // 0 if the attempt got no response
	retryAfter string // the response's retry-after header
}

// tape is an http.RoundTripper that records every attempt it forwards.
type tape struct {
	next http.RoundTripper
	// hideRetryAfter removes retry-after from responses before the SDK
	// sees them (it is still recorded), so the SDK falls back to backoff.
	hideRetryAfter bool

	mu       sync.Mutex
	attempts []attempt
}

func (t *tape) RoundTrip(req *http.Request) (*http.Response, error) {
	a := attempt{at: time.Now(), path: req.URL.Path, retryCount: req.Header.Get("X-Stainless-Retry-Count")}
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		a.status = resp.StatusCode
		a.retryAfter = resp.Header.Get("retry-after")
		if t.hideRetryAfter {
			resp.Header.Del("retry-after")
			resp.Header.Del("retry-after-ms")
		}
	}
	t.mu.Lock()
	t.attempts = append(t.attempts, a)
	t.mu.Unlock()
	return resp, err
}

// log returns the attempts recorded so far and forgets them.
func (t *tape) log() []attempt {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.attempts
	t.attempts = nil
	return a
}

// harness is a mock server on an in-memory listener and an HTTP client that
// reaches it through a tape. It must be created inside a synctest bubble.
type harness struct {
	srv  *mock.Server
	hc   *http.Client
	tape *tape
}

// startMock parses yaml as a mock.Config and serves it in the current
// bubble until the test ends.
func startMock(t *testing.T, yaml string) *harness {
	t.Helper()
	cfg, err := mock.ParseConfig([]byte(yaml), "sdk_test.yaml")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	srv := mocktest.Start(t, cfg, mocktest.InMemory())
	tp := &tape{next: srv.Transport}
	return &harness{srv: srv.Mock, hc: &http.Client{Transport: tp}, tape: tp}
}

func (h *harness) anthropic(opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{
		aoption.WithoutEnvironmentDefaults(),
		aoption.WithAPIKey(sdkKey),
		aoption.WithBaseURL(sdkBaseURL),
		aoption.WithHTTPClient(h.hc),
	}, opts...)...)
}

func (h *harness) openai(opts ...ooption.RequestOption) openai.Client {
	return openai.NewClient(append([]ooption.RequestOption{
		ooption.WithAPIKey(sdkKey),
		ooption.WithBaseURL(sdkBaseURL + sdkOpenAIPrefix),
		ooption.WithHTTPClient(h.hc),
	}, opts...)...)
}

// block starts a request that holds one concurrency slot for as long as the
// mock takes to produce tokens output tokens, and waits until the mock has
// admitted it. The returned channel yields its status when it ends.
func (h *harness) block(t *testing.T, tokens int) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"hold"}]}`, sdkModel, tokens)
		req, _ := http.NewRequest(http.MethodPost, sdkBaseURL+"/v1/messages", strings.NewReader(body))
		req.Header.Set("content-type", "application/json")
		req.Header.Set("x-api-key", sdkKey)
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := h.hc.Transport.(*tape).next.RoundTrip(req)
		if err != nil {
			done <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	synctest.Wait()
	return done
}

// promptTokens is the mock's documented input-token count of a list of
// texts (system prompt and messages): the sum of max(1, EstimateTokens).
func promptTokens(texts ...string) int64 {
	n := 0
	for _, s := range texts {
		n += max(1, mock.EstimateTokens(s))
	}
	return int64(n)
}

// conversation is a prompt used with both SDKs.
type conversation struct {
	name   string
	system string
	turns  []string // alternating user, assistant, user, ...
}

var conversations = []conversation{
	{name: "hello", turns: []string{"Hello"}},
	{name: "system", system: "You are terse. Answer in one word.", turns: []string{"What is the capital of France?"}},
	{name: "multi-turn", system: "Be helpful.", turns: []string{"Hi there, how are you today?", "Fine, thanks. And you?", "Tell me a story about rate limits, please."}},
	{name: "unicode", turns: []string{"Grüße aus Köln — 東京へようこそ 🚀🚀🚀"}},
	{name: "empty-ish", turns: []string{"?"}},
}

func (c conversation) texts() []string {
	var ts []string
	if c.system != "" {
		ts = append(ts, c.system)
	}
	return append(ts, c.turns...)
}

func (c conversation) anthropicMessages() []anthropic.MessageParam {
	var ms []anthropic.MessageParam
	for i, s := range c.turns {
		if i%2 == 0 {
			ms = append(ms, anthropic.NewUserMessage(anthropic.NewTextBlock(s)))
		} else {
			ms = append(ms, anthropic.NewAssistantMessage(anthropic.NewTextBlock(s)))
		}
	}
	return ms
}

func (c conversation) anthropicParams(maxTokens int64) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{Model: sdkModel, MaxTokens: maxTokens, Messages: c.anthropicMessages()}
	if c.system != "" {
		p.System = []anthropic.TextBlockParam{{Text: c.system}}
	}
	return p
}

func (c conversation) openaiParams(maxTokens int64) openai.ChatCompletionNewParams {
	var ms []openai.ChatCompletionMessageParamUnion
	if c.system != "" {
		ms = append(ms, openai.SystemMessage(c.system))
	}
	for i, s := range c.turns {
		if i%2 == 0 {
			ms = append(ms, openai.UserMessage(s))
		} else {
			ms = append(ms, openai.AssistantMessage(s))
		}
	}
	return openai.ChatCompletionNewParams{Model: sdkOpenAIModel, Messages: ms, MaxCompletionTokens: openai.Int(maxTokens)}
}

const sdkLatency = `
seed: 7
api_keys: [` + sdkKey + `]
latency: {ttft: 300ms, ttft_per_input_token: 0s, per_token: 10ms, jitter: 0}
`

// TestSDKAnthropicMessages: Messages.New and Messages.NewStreaming return
// the mock's filler text for max_tokens tokens, usage.output_tokens equal to
// max_tokens with stop_reason max_tokens, usage.input_tokens equal to the
// documented estimate and to what count_tokens says, and the non-streaming
// call takes exactly as long as the stream takes to deliver its last token.
func TestSDKAnthropicMessages(t *testing.T) {
	for _, conv := range conversations {
		t.Run(conv.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, sdkLatency)
				c := h.anthropic()
				ctx := t.Context()
				const maxTokens = 37
				params := conv.anthropicParams(maxTokens)
				wantIn := promptTokens(conv.texts()...)
				wantText := mock.Filler(maxTokens)

				count, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
					Model: sdkModel, Messages: params.Messages,
					System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: params.System},
				})
				if err != nil {
					t.Fatalf("CountTokens: %v", err)
				}
				if count.InputTokens != wantIn {
					t.Errorf("CountTokens: input_tokens = %d, want %d", count.InputTokens, wantIn)
				}

				start := time.Now()
				msg, err := c.Messages.New(ctx, params)
				if err != nil {
					t.Fatalf("Messages.New: %v", err)
				}
				jsonTook := time.Since(start)
				if len(msg.Content) != 1 || msg.Content[0].Type != "text" {
					t.Fatalf("Messages.New: content = %+v, want one text block", msg.Content)
				}
				if got := msg.Content[0].Text; got != wantText {
					t.Errorf("Messages.New: text = %q, want %q", got, wantText)
				}
				if msg.Usage.OutputTokens != maxTokens || msg.Usage.InputTokens != count.InputTokens {
					t.Errorf("Messages.New: usage in/out = %d/%d, want %d/%d (count_tokens/max_tokens)",
						msg.Usage.InputTokens, msg.Usage.OutputTokens, count.InputTokens, maxTokens)
				}
				if msg.StopReason != anthropic.StopReasonMaxTokens {
					t.Errorf("Messages.New: stop_reason = %q, want max_tokens", msg.StopReason)
				}
				if msg.Role != "assistant" || msg.Model != sdkModel || !strings.HasPrefix(msg.ID, "msg_") {
					t.Errorf("Messages.New: role/model/id = %q/%q/%q, want assistant/%s/msg_…", msg.Role, msg.Model, msg.ID, sdkModel)
				}

				start = time.Now()
				stream := c.Messages.NewStreaming(ctx, params)
				var acc anthropic.Message
				var events []string
				var lastDelta time.Duration
				for stream.Next() {
					ev := stream.Current()
					events = append(events, ev.Type)
					if ev.Type == "content_block_delta" {
						lastDelta = time.Since(start)
					}
					if err := acc.Accumulate(ev); err != nil {
						t.Fatalf("Accumulate(%s): %v", ev.Type, err)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("stream: %v", err)
				}
				stream.Close()
				if len(acc.Content) != 1 || acc.Content[0].Text != wantText {
					t.Errorf("stream: content = %+v, want one text block %q", acc.Content, wantText)
				}
				if acc.Usage.OutputTokens != maxTokens || acc.Usage.InputTokens != count.InputTokens {
					t.Errorf("stream: usage in/out = %d/%d, want %d/%d", acc.Usage.InputTokens, acc.Usage.OutputTokens, count.InputTokens, maxTokens)
				}
				if acc.StopReason != anthropic.StopReasonMaxTokens {
					t.Errorf("stream: stop_reason = %q, want max_tokens", acc.StopReason)
				}
				if got := compactEvents(events); got != "message_start content_block_start content_block_delta… content_block_stop message_delta message_stop" {
					t.Errorf("stream: events = %s", got)
				}
				if lastDelta != jsonTook {
					t.Errorf("stream: last token after %v, but the JSON response took %v; want equal", lastDelta, jsonTook)
				}
			})
		})
	}
}

// compactEvents joins event types, folding runs of the same type into "…".
func compactEvents(evs []string) string {
	var out []string
	for i, e := range evs {
		if i > 0 && evs[i-1] == e {
			if !strings.HasSuffix(out[len(out)-1], "…") {
				out[len(out)-1] += "…"
			}
			continue
		}
		out = append(out, e)
	}
	return strings.Join(out, " ")
}

// TestSDKAnthropicEndTurn: with an output distribution shorter than
// max_tokens, both calls stop with end_turn and report the tokens produced.
func TestSDKAnthropicEndTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, sdkLatency+"output: {tokens: {fixed: 5}}\n")
		c := h.anthropic()
		params := conversations[0].anthropicParams(64)
		msg, err := c.Messages.New(t.Context(), params)
		if err != nil {
			t.Fatalf("Messages.New: %v", err)
		}
		if msg.StopReason != anthropic.StopReasonEndTurn || msg.Usage.OutputTokens != 5 || msg.Content[0].Text != mock.Filler(5) {
			t.Errorf("Messages.New: stop=%q out=%d text=%q, want end_turn 5 %q", msg.StopReason, msg.Usage.OutputTokens, msg.Content[0].Text, mock.Filler(5))
		}
		stream := c.Messages.NewStreaming(t.Context(), params)
		var acc anthropic.Message
		for stream.Next() {
			acc.Accumulate(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if acc.StopReason != anthropic.StopReasonEndTurn || acc.Usage.OutputTokens != 5 || len(acc.Content) != 1 || acc.Content[0].Text != mock.Filler(5) {
			t.Errorf("stream: stop=%q out=%d content=%+v, want end_turn 5 %q", acc.StopReason, acc.Usage.OutputTokens, acc.Content, mock.Filler(5))
		}
	})
}

// TestSDKOpenAIChat: Chat.Completions.New and NewStreaming (with
// include_usage) return the filler text for max_completion_tokens tokens,
// completion_tokens equal to it with finish_reason length, prompt_tokens
// equal to the documented estimate, and the same duration either way.
func TestSDKOpenAIChat(t *testing.T) {
	for _, conv := range conversations {
		t.Run(conv.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, sdkLatency)
				c := h.openai()
				ctx := t.Context()
				const maxTokens = 29
				params := conv.openaiParams(maxTokens)
				wantIn := promptTokens(conv.texts()...)
				wantText := mock.Filler(maxTokens)

				start := time.Now()
				cc, err := c.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatalf("Completions.New: %v", err)
				}
				jsonTook := time.Since(start)
				if len(cc.Choices) != 1 {
					t.Fatalf("Completions.New: %d choices, want 1", len(cc.Choices))
				}
				if got := cc.Choices[0].Message.Content; got != wantText {
					t.Errorf("Completions.New: content = %q, want %q", got, wantText)
				}
				if cc.Choices[0].FinishReason != "length" {
					t.Errorf("Completions.New: finish_reason = %q, want length", cc.Choices[0].FinishReason)
				}
				if u := cc.Usage; u.PromptTokens != wantIn || u.CompletionTokens != maxTokens || u.TotalTokens != wantIn+maxTokens {
					t.Errorf("Completions.New: usage prompt/completion/total = %d/%d/%d, want %d/%d/%d",
						u.PromptTokens, u.CompletionTokens, u.TotalTokens, wantIn, maxTokens, wantIn+maxTokens)
				}
				if cc.Object != "chat.completion" || cc.Model != sdkOpenAIModel || cc.ID == "" {
					t.Errorf("Completions.New: object/model/id = %q/%q/%q", cc.Object, cc.Model, cc.ID)
				}

				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				start = time.Now()
				stream := c.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				var lastToken time.Duration
				chunks, usageChunks := 0, 0
				for stream.Next() {
					ch := stream.Current()
					chunks++
					if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
						lastToken = time.Since(start)
					}
					if ch.Usage.TotalTokens > 0 {
						usageChunks++
						if len(ch.Choices) != 0 {
							t.Errorf("stream: usage chunk has %d choices, want 0", len(ch.Choices))
						}
					}
					if !acc.AddChunk(ch) {
						t.Fatalf("AddChunk rejected chunk %d: %s", chunks, ch.RawJSON())
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("stream: %v", err)
				}
				stream.Close()
				if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != wantText {
					t.Errorf("stream: choices = %+v, want one with %q", acc.Choices, wantText)
				} else if acc.Choices[0].FinishReason != "length" {
					t.Errorf("stream: finish_reason = %q, want length", acc.Choices[0].FinishReason)
				}
				if usageChunks != 1 {
					t.Errorf("stream: %d usage chunks, want 1", usageChunks)
				}
				if u := acc.Usage; u.PromptTokens != wantIn || u.CompletionTokens != maxTokens {
					t.Errorf("stream: usage prompt/completion = %d/%d, want %d/%d", u.PromptTokens, u.CompletionTokens, wantIn, maxTokens)
				}
				if lastToken != jsonTook {
					t.Errorf("stream: last token after %v, but the JSON response took %v; want equal", lastToken, jsonTook)
				}
			})
		})
	}
}

func callAnthropic(h *harness, ctx context.Context, retries int) error {
	c := h.anthropic(aoption.WithMaxRetries(retries))
	_, err := c.Messages.New(ctx, conversations[0].anthropicParams(8))
	return err
}

func callOpenAI(h *harness, ctx context.Context, retries int) error {
	c := h.openai(ooption.WithMaxRetries(retries))
	_, err := c.Chat.Completions.New(ctx, conversations[0].openaiParams(8))
	return err
}

// callAnthropicStream makes one streaming call and reads the stream to its
// end; the SDK retries only on the initial status.
func callAnthropicStream(h *harness, ctx context.Context, retries int) error {
	c := h.anthropic(aoption.WithMaxRetries(retries))
	stream := c.Messages.NewStreaming(ctx, conversations[0].anthropicParams(8))
	defer stream.Close()
	var acc anthropic.Message
	for stream.Next() {
		acc.Accumulate(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return err
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != mock.Filler(8) {
		return fmt.Errorf("stream content = %+v, want %q", acc.Content, mock.Filler(8))
	}
	return nil
}

func callOpenAIStream(h *harness, ctx context.Context, retries int) error {
	c := h.openai(ooption.WithMaxRetries(retries))
	stream := c.Chat.Completions.NewStreaming(ctx, conversations[0].openaiParams(8))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return err
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != mock.Filler(8) {
		return fmt.Errorf("stream choices = %+v, want %q", acc.Choices, mock.Filler(8))
	}
	return nil
}

// sdks are the ways the tests call a model: each SDK, JSON and streaming.
var sdks = []struct {
	name       string
	call       func(h *harness, ctx context.Context, retries int) error
	overloaded int // the status each API uses for overload
}{
	{"anthropic", callAnthropic, 529},
	{"anthropic-stream", callAnthropicStream, 529},
	{"openai", callOpenAI, 503},
	{"openai-stream", callOpenAIStream, 503},
}

// statusOf returns the HTTP status of an SDK's API error, or 0.
func statusOf(err error) int {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	var oe *openai.Error
	if errors.As(err, &oe) {
		return oe.StatusCode
	}
	return 0
}

func statuses(as []attempt) []int {
	var s []int
	for _, a := range as {
		s = append(s, a.status)
	}
	return s
}

// TestSDKRetryAfter429: a request over the key's concurrency limit gets a
// 429 with retry-after; the SDK waits exactly the advertised delay (measured
// between its two attempts in virtual time), retries and succeeds. The
// retry-after is either the configured one or, with none configured,
// computed from the in-flight request that holds the slot.
func TestSDKRetryAfter429(t *testing.T) {
	cases := []struct {
		name       string
		limits     string
		holdTokens int // the blocking request lasts holdTokens × 100 ms
		wantAfter  string
	}{
		{"fixed", "limits: {max_concurrent: 1, retry_after: 3s}", 20, "3"},
		{"computed", "limits: {max_concurrent: 1}", 25, "3"},
	}
	for _, sdk := range sdks {
		for _, tc := range cases {
			t.Run(sdk.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 100ms}
`+tc.limits+"\n")
					held := h.block(t, tc.holdTokens)
					if err := sdk.call(h, t.Context(), 2); err != nil {
						t.Fatalf("call: %v", err)
					}
					as := h.tape.log()
					if got := statuses(as); fmt.Sprint(got) != "[429 200]" {
						t.Fatalf("attempt statuses = %v, want [429 200]", got)
					}
					if as[0].retryAfter != tc.wantAfter {
						t.Errorf("429 retry-after = %q, want %q", as[0].retryAfter, tc.wantAfter)
					}
					if gap := as[1].at.Sub(as[0].at); gap != 3*time.Second {
						t.Errorf("gap between attempts = %v, want exactly 3s (the retry-after)", gap)
					}
					if as[0].retryCount != "0" || as[1].retryCount != "1" {
						t.Errorf("X-Stainless-Retry-Count = %q, %q; want 0, 1", as[0].retryCount, as[1].retryCount)
					}
					if st := <-held; st != 200 {
						t.Errorf("blocking request: status %d, want 200", st)
					}
					st := h.srv.Stats()
					if st.Attempts != 3 || st.Throttled != 1 || st.ThrottledBy["max_concurrent"] != 1 || st.EarlyRetries != 0 {
						t.Errorf("Stats: attempts=%d throttled=%d by=%v early=%d, want 3, 1, max_concurrent:1, 0",
							st.Attempts, st.Throttled, st.ThrottledBy, st.EarlyRetries)
					}
				})
			})
		}
	}
}

// TestSDKRetryAfterRPM: with a requests-per-minute limit of 1 the second
// call gets a 429 whose computed retry-after is the bucket's refill time,
// 60 s. Both SDKs honour it by default (anthropic-sdk-go without a cap,
// openai-go v3.99 up to 2 minutes): they wait exactly 60 s and succeed.
// openai-go with option.WithMaxRetryDelay(8s) does not retry a longer
// server delay: it surfaces the 429 (code rate_limit_exceeded) after one
// attempt.
func TestSDKRetryAfterRPM(t *testing.T) {
	const cfg = `
api_keys: [` + sdkKey + `]
latency: {ttft: 0s, per_token: 1ms}
limits: {rpm: 1}
`
	for _, sdk := range sdks {
		t.Run(sdk.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, cfg)
				if err := sdk.call(h, t.Context(), 2); err != nil {
					t.Fatalf("first call: %v", err)
				}
				h.tape.log()
				if err := sdk.call(h, t.Context(), 2); err != nil {
					t.Fatalf("second call: %v", err)
				}
				as := h.tape.log()
				if got := fmt.Sprint(statuses(as)); got != "[429 200]" {
					t.Fatalf("attempt statuses = %s, want [429 200]", got)
				}
				if as[0].retryAfter != "60" {
					t.Errorf("retry-after = %q, want 60", as[0].retryAfter)
				}
				if gap := as[1].at.Sub(as[0].at); gap != time.Minute {
					t.Errorf("wait = %v, want 1m0s", gap)
				}
				if st := h.srv.Stats(); st.ThrottledBy["rpm"] != 1 || st.EarlyRetries != 0 {
					t.Errorf("Stats: throttled_by=%v early=%d, want rpm:1, 0", st.ThrottledBy, st.EarlyRetries)
				}
			})
		})
	}
	t.Run("openai-max-retry-delay", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startMock(t, cfg)
			c := h.openai(ooption.WithMaxRetryDelay(8 * time.Second))
			params := conversations[0].openaiParams(8)
			if _, err := c.Chat.Completions.New(t.Context(), params); err != nil {
				t.Fatalf("first call: %v", err)
			}
			_, err := c.Chat.Completions.New(t.Context(), params)
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.StatusCode != 429 || oe.Code != "rate_limit_exceeded" {
				t.Errorf("second call: err = %v, want *openai.Error 429 rate_limit_exceeded", err)
			}
			if got := fmt.Sprint(statuses(h.tape.log())); got != "[200 429]" {
				t.Errorf("attempt statuses = %s, want [200 429] (no retry beyond the 8 s cap)", got)
			}
		})
	})
}

// TestSDKSemaphoreNoThrottle: 200 calls through an SDK from 20 workers
// against a concurrency limit of 20 (the seeds' Semaphore(20) row) see no
// 429 at all, because the mock releases a slot before the last byte of its
// response, so a worker's next call never finds its own previous call still
// counted. With retries off, any 429 would fail a call. Each call takes
// 500 ms, so the run takes exactly 10 rounds: 5 s of virtual time.
func TestSDKSemaphoreNoThrottle(t *testing.T) {
	for _, sdk := range sdks {
		t.Run(sdk.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 100ms, per_token: 50ms}
limits: {max_concurrent: 20}
`)
				const workers, calls = 20, 200
				start := time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, calls)
				for w := 0; w < workers; w++ {
					wg.Go(func() {
						for i := 0; i < calls/workers; i++ {
							if err := sdk.call(h, t.Context(), 0); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Errorf("call: %v", err)
				}
				if got := time.Since(start); got != 5*time.Second {
					t.Errorf("200 calls took %v, want 5s (10 rounds of 500 ms)", got)
				}
				st := h.srv.Stats()
				if st.Attempts != calls || st.Admitted != calls || st.Throttled != 0 || st.MaxInFlight != workers {
					t.Errorf("Stats: attempts=%d admitted=%d throttled=%d max_in_flight=%d, want %d, %d, 0, %d",
						st.Attempts, st.Admitted, st.Throttled, st.MaxInFlight, calls, calls, workers)
				}
			})
		})
	}
}

// TestSDKOverloaded: when the provider is overloaded — by an injected fault
// on every attempt, or because the global capacity is taken — the SDK
// retries it like any 5xx (3 attempts with the default 2 retries) and then
// surfaces its API error with the overload status: 529 overloaded_error for
// Anthropic, 503 for OpenAI.
func TestSDKOverloaded(t *testing.T) {
	cases := []struct {
		name   string
		config string
		hold   int // tokens of a blocking request, 0 for none
	}{
		{"fault", "faults: {overloaded: 1}", 0},
		{"capacity", "capacity: {max_concurrent: 1}", 50}, // 5 s, longer than the SDK's backoffs
	}
	for _, sdk := range sdks {
		for _, tc := range cases {
			t.Run(sdk.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := startMock(t, `
seed: 3
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 100ms}
`+tc.config+"\n")
					if tc.hold > 0 {
						h.block(t, tc.hold)
					}
					err := sdk.call(h, t.Context(), 2)
					if got := statusOf(err); got != sdk.overloaded {
						t.Fatalf("call: err = %v (status %d), want an API error with status %d", err, got, sdk.overloaded)
					}
					var ae *anthropic.Error
					if errors.As(err, &ae) && ae.Type() != "overloaded_error" {
						t.Errorf("anthropic error type = %q, want overloaded_error", ae.Type())
					}
					as := h.tape.log()
					want := fmt.Sprint([]int{sdk.overloaded, sdk.overloaded, sdk.overloaded})
					if got := fmt.Sprint(statuses(as)); got != want {
						t.Errorf("attempt statuses = %v, want %v", got, want)
					}
					if st := h.srv.Stats(); st.Overloaded != 3 || st.Throttled != 0 {
						t.Errorf("Stats: overloaded=%d throttled=%d, want 3, 0", st.Overloaded, st.Throttled)
					}
				})
			})
		}
	}
}

// TestSDKFaultScript: the mock's fault script fails the first attempts of
// each request by X-Stainless-Retry-Count, so an SDK's retries are exact:
// the SDK sees the scripted statuses in order, honours a scripted
// retry-after to the nanosecond, succeeds on the first unscripted attempt,
// and gives up when the script outlasts its retries.
func TestSDKFaultScript(t *testing.T) {
	cases := []struct {
		name    string
		script  string
		retries int
		want    string // statuses of the attempts
		ok      bool
		gap     time.Duration // the wait before the last attempt, if non-zero
	}{
		{"two-then-ok", "[{attempts: 2, status: 500}]", 2, "[500 500 200]", true, 0},
		{"429-retry-after", "[{attempts: 1, status: 500}, {attempts: 1, status: 429, retry_after: 2s}]", 2, "[500 429 200]", true, 2 * time.Second},
		{"outlasts-retries", "[{attempts: 3, status: 500}]", 2, "[500 500 500]", false, 0},
		{"more-retries", "[{attempts: 3, status: 500}]", 3, "[500 500 500 200]", true, 0},
		{"no-retries", "[{attempts: 1, status: 429, retry_after: 1s}]", 0, "[429]", false, 0},
	}
	for _, sdk := range sdks {
		for _, tc := range cases {
			t.Run(sdk.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 1ms}
faults: {script: `+tc.script+"}\n")
					err := sdk.call(h, t.Context(), tc.retries)
					if (err == nil) != tc.ok {
						t.Fatalf("call: err = %v, want success %v", err, tc.ok)
					}
					as := h.tape.log()
					if got := fmt.Sprint(statuses(as)); got != tc.want {
						t.Errorf("attempt statuses = %v, want %v", got, tc.want)
					}
					for i, a := range as {
						if a.retryCount != fmt.Sprint(i) {
							t.Errorf("attempt %d: X-Stainless-Retry-Count = %q, want %d", i, a.retryCount, i)
						}
					}
					if !tc.ok && len(as) > 0 {
						if got := statusOf(err); got != as[len(as)-1].status {
							t.Errorf("error status = %d, want %d", got, as[len(as)-1].status)
						}
					}
					if st := h.srv.Stats(); st.Attempts != int64(len(as)) || st.Faults["script"] != int64(len(as)-btoi(tc.ok)) {
						t.Errorf("Stats: attempts=%d faults[script]=%d, want %d, %d", st.Attempts, st.Faults["script"], len(as), len(as)-btoi(tc.ok))
					}
					if tc.gap > 0 && len(as) >= 2 {
						if got := as[len(as)-1].at.Sub(as[len(as)-2].at); got != tc.gap {
							t.Errorf("wait before the last attempt = %v, want %v (the scripted retry-after)", got, tc.gap)
						}
					}
				})
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSDKEarlyRetryCounted: an SDK that does not see the retry-after of a
// 429 falls back to its backoff (0.5 s less up to 25 % jitter for the first
// retry), arrives before the advertised 3 s, and the mock counts it as an
// early retry; the same SDK seeing the header waits 3 s and is compliant.
func TestSDKEarlyRetryCounted(t *testing.T) {
	for _, hide := range []bool{true, false} {
		for _, sdk := range sdks {
			t.Run(fmt.Sprintf("%s/hide=%v", sdk.name, hide), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 1ms}
faults: {script: [{attempts: 1, status: 429, retry_after: 3s}]}
`)
					h.tape.hideRetryAfter = hide
					if err := sdk.call(h, t.Context(), 2); err != nil {
						t.Fatalf("call: %v", err)
					}
					as := h.tape.log()
					if got := fmt.Sprint(statuses(as)); got != "[429 200]" {
						t.Fatalf("attempt statuses = %s, want [429 200]", got)
					}
					gap := as[1].at.Sub(as[0].at)
					wantEarly := int64(0)
					if hide {
						wantEarly = 1
						if gap <= 375*time.Millisecond || gap > 500*time.Millisecond {
							t.Errorf("backoff = %v, want in (375ms, 500ms]", gap)
						}
					} else if gap != 3*time.Second {
						t.Errorf("wait = %v, want 3s", gap)
					}
					if st := h.srv.Stats(); st.EarlyRetries != wantEarly {
						t.Errorf("Stats.EarlyRetries = %d, want %d", st.EarlyRetries, wantEarly)
					}
				})
			})
		}
	}
}

// TestSDKStreamError: an injected mid-stream error arrives after some text
// deltas and surfaces as the stream's error — an *anthropic.Error of type
// overloaded_error, an ssestream.StreamError for OpenAI — and the SDK does
// not retry a stream that has started.
func TestSDKStreamError(t *testing.T) {
	const cfg = `
seed: 5
api_keys: [` + sdkKey + `]
latency: {ttft: 0s, per_token: 10ms}
faults: {stream_error: 1}
`
	t.Run("anthropic", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startMock(t, cfg)
			c := h.anthropic()
			stream := c.Messages.NewStreaming(t.Context(), conversations[0].anthropicParams(40))
			var text strings.Builder
			for stream.Next() {
				if ev := stream.Current(); ev.Type == "content_block_delta" {
					text.WriteString(ev.Delta.Text)
				}
			}
			err := stream.Err()
			stream.Close()
			var ae *anthropic.Error
			if !errors.As(err, &ae) || ae.Type() != "overloaded_error" {
				t.Fatalf("stream error = %v, want an *anthropic.Error of type overloaded_error", err)
			}
			if got := text.String(); got == "" || len(got) >= len(mock.Filler(40)) || !strings.HasPrefix(mock.Filler(40), got) {
				t.Errorf("text before the error = %q, want a non-empty proper prefix of the filler", got)
			}
			if as := h.tape.log(); len(as) != 1 || as[0].status != 200 {
				t.Errorf("attempts = %v, want one 200 (no retry after a stream started)", statuses(as))
			}
		})
	})
	t.Run("openai", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startMock(t, cfg)
			c := h.openai()
			stream := c.Chat.Completions.NewStreaming(t.Context(), conversations[0].openaiParams(40))
			var text strings.Builder
			for stream.Next() {
				if ch := stream.Current(); len(ch.Choices) > 0 {
					text.WriteString(ch.Choices[0].Delta.Content)
				}
			}
			err := stream.Err()
			stream.Close()
			var se *ssestream.StreamError
			if !errors.As(err, &se) {
				t.Fatalf("stream error = %v, want an *ssestream.StreamError", err)
			}
			if got := text.String(); len(got) >= len(mock.Filler(40)) || !strings.HasPrefix(mock.Filler(40), got) {
				t.Errorf("text before the error = %q, want a proper prefix of the filler", got)
			}
			if as := h.tape.log(); len(as) != 1 || as[0].status != 200 {
				t.Errorf("attempts = %v, want one 200", statuses(as))
			}
		})
	})
}

// TestSDKConnectionFaults: injected connection faults look to the SDKs like
// real network failures. A reset (the connection closed before any
// response) is a connection error, retried like one: 3 attempts, then a
// non-API error. A response cut half-way is a 200 whose body breaks:
// anthropic-sdk-go reads a JSON body inside the attempt and retries the
// broken read; openai-go decodes it after its retry loop and fails at once;
// a cut stream is never retried (it had started) and ends with an error.
func TestSDKConnectionFaults(t *testing.T) {
	cases := []struct {
		fault string
		sdk   string
		want  string // attempt statuses; 0 is no response
	}{
		{"reset", "anthropic", "[0 0 0]"},
		{"reset", "anthropic-stream", "[0 0 0]"},
		{"reset", "openai", "[0 0 0]"},
		{"reset", "openai-stream", "[0 0 0]"},
		{"cut_stream", "anthropic", "[200 200 200]"},
		{"cut_stream", "anthropic-stream", "[200]"},
		{"cut_stream", "openai", "[200]"},
		{"cut_stream", "openai-stream", "[200]"},
	}
	call := map[string]func(*harness, context.Context, int) error{}
	for _, sdk := range sdks {
		call[sdk.name] = sdk.call
	}
	for _, tc := range cases {
		t.Run(tc.fault+"/"+tc.sdk, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, `
seed: 11
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 10ms}
faults: {`+tc.fault+`: 1}
`)
				err := call[tc.sdk](h, t.Context(), 2)
				if err == nil {
					t.Fatalf("call succeeded, want an error")
				}
				var ue *url.Error
				switch {
				case tc.fault == "reset" && !errors.As(err, &ue):
					t.Errorf("err = %v (%T), want the *url.Error of a failed round trip", err, err)
				case tc.fault == "cut_stream" && !errors.Is(err, io.ErrUnexpectedEOF):
					t.Errorf("err = %v (%T), want io.ErrUnexpectedEOF", err, err)
				}
				as := h.tape.log()
				if got := fmt.Sprint(statuses(as)); got != tc.want {
					t.Errorf("attempt statuses = %s, want %s", got, tc.want)
				}
				if st := h.srv.Stats(); st.Faults[tc.fault] != int64(len(as)) {
					t.Errorf("Stats.Faults[%s] = %d, want %d", tc.fault, st.Faults[tc.fault], len(as))
				}
			})
		})
	}
}

// TestSDKModels: GET /v1/models decodes through both SDKs' Models.List.
func TestSDKModels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, sdkLatency)
		ac := h.anthropic()
		ap, err := ac.Models.List(t.Context(), anthropic.ModelListParams{})
		if err != nil {
			t.Fatalf("anthropic Models.List: %v", err)
		}
		if len(ap.Data) == 0 {
			t.Fatalf("anthropic Models.List: no models")
		}
		for _, m := range ap.Data {
			if m.ID == "" || m.Type != "model" {
				t.Errorf("anthropic model %+v: want an id and type model", m)
			}
		}
		oc := h.openai()
		op, err := oc.Models.List(t.Context())
		if err != nil {
			t.Fatalf("openai Models.List: %v", err)
		}
		if len(op.Data) == 0 {
			t.Fatalf("openai Models.List: no models")
		}
		for _, m := range op.Data {
			if m.ID == "" || m.Object != "model" {
				t.Errorf("openai model %+v: want an id and object model", m)
			}
		}
	})
}

// TestSDKAuthentication: a wrong key is a 401 the SDKs do not retry, in each
// provider's envelope.
func TestSDKAuthentication(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, sdkLatency)
		ac := h.anthropic(aoption.WithAPIKey("wrong"))
		_, err := ac.Messages.New(t.Context(), conversations[0].anthropicParams(4))
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Type() != "authentication_error" {
			t.Errorf("anthropic with a wrong key: err = %v, want 401 authentication_error", err)
		}
		oc := h.openai(ooption.WithAPIKey("wrong"))
		_, err = oc.Chat.Completions.New(t.Context(), conversations[0].openaiParams(4))
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 401 || oe.Code != "invalid_api_key" {
			t.Errorf("openai with a wrong key: err = %v, want 401 invalid_api_key", err)
		}
		if got := fmt.Sprint(statuses(h.tape.log())); got != "[401 401]" {
			t.Errorf("attempts = %s, want [401 401] (no retries)", got)
		}
	})
}

// TestSDKLoopback runs both SDKs against the mock served by its own Serve
// on a real loopback socket, JSON and streaming, outside any bubble (no
// timing is asserted).
func TestSDKLoopback(t *testing.T) {
	cfg, err := mock.ParseConfig([]byte(`
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 0s}
`), "sdk_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tr := &http.Transport{}
	tp := &tape{next: tr}
	h := &harness{srv: srv, hc: &http.Client{Transport: tp}, tape: tp}
	base := "http://" + ln.Addr().String()
	defer func() {
		tr.CloseIdleConnections()
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	}()

	ac := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithAPIKey(sdkKey),
		aoption.WithBaseURL(base), aoption.WithHTTPClient(h.hc), aoption.WithMaxRetries(0))
	oc := openai.NewClient(ooption.WithAPIKey(sdkKey), ooption.WithBaseURL(base+"/v1"),
		ooption.WithHTTPClient(h.hc), ooption.WithMaxRetries(0))
	ctx := t.Context()
	conv := conversations[2]
	const n = 50

	msg, err := ac.Messages.New(ctx, conv.anthropicParams(n))
	if err != nil || len(msg.Content) != 1 || msg.Content[0].Text != mock.Filler(n) {
		t.Errorf("anthropic JSON: err=%v content=%+v, want %q", err, msg, mock.Filler(n))
	}
	stream := ac.Messages.NewStreaming(ctx, conv.anthropicParams(n))
	var acc anthropic.Message
	for stream.Next() {
		acc.Accumulate(stream.Current())
	}
	if err := stream.Err(); err != nil || len(acc.Content) != 1 || acc.Content[0].Text != mock.Filler(n) || acc.Usage.OutputTokens != n {
		t.Errorf("anthropic stream: err=%v content=%+v usage=%+v", err, acc.Content, acc.Usage)
	}
	stream.Close()

	cc, err := oc.Chat.Completions.New(ctx, conv.openaiParams(n))
	if err != nil || len(cc.Choices) != 1 || cc.Choices[0].Message.Content != mock.Filler(n) {
		t.Errorf("openai JSON: err=%v completion=%+v, want %q", err, cc, mock.Filler(n))
	}
	params := conv.openaiParams(n)
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	ostream := oc.Chat.Completions.NewStreaming(ctx, params)
	var oacc openai.ChatCompletionAccumulator
	for ostream.Next() {
		oacc.AddChunk(ostream.Current())
	}
	if err := ostream.Err(); err != nil || len(oacc.Choices) != 1 || oacc.Choices[0].Message.Content != mock.Filler(n) || oacc.Usage.CompletionTokens != n {
		t.Errorf("openai stream: err=%v choices=%+v usage=%+v", err, oacc.Choices, oacc.Usage)
	}
	ostream.Close()

	if got := fmt.Sprint(statuses(h.tape.log())); got != "[200 200 200 200]" {
		t.Errorf("attempt statuses = %s, want [200 200 200 200]", got)
	}
	if st := srv.Stats(); st.Attempts != 4 || st.Admitted != 4 || st.OutputTokens != 4*n {
		t.Errorf("Stats: attempts=%d admitted=%d output_tokens=%d, want 4, 4, %d", st.Attempts, st.Admitted, st.OutputTokens, 4*n)
	}
}

// accumulateMessage reads an Anthropic stream to its end into one Message, as the
// SDK's users do, failing the test on a malformed event or a stream error.
func accumulateMessage(t testing.TB, stream *anthropicstream.Stream[anthropic.MessageStreamEventUnion]) anthropic.Message {
	t.Helper()
	defer stream.Close()
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return acc
}
