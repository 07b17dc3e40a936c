package mock_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/ratelab/ratelab/mock"
)

// The acceleration ramp with a floor of 2: a key idle before may start 2
// requests in its first minute; the third is refused until the first two
// age into the minute before, 60 s later.
const rampConfig = `
seed: 3
api_keys: [` + sdkKey + `]
latency: {ttft: 0s, per_token: 0s}
limits: {acceleration: {factor: 1.5, floor: 2}}
`

// TestSDKSlowDown: the acceleration ramp's 429 reaches each official SDK
// in its provider's shape: openai-go's *openai.Error with code slow_down
// and type rate_limit_error on Chat Completions and on Responses, and
// anthropic-sdk-go's *anthropic.Error of type rate_limit_error, each with
// retry-after 60 (docs/mockllm.md, "OpenAI's slow_down").
func TestSDKSlowDown(t *testing.T) {
	for _, api := range []string{"chat", "responses", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, rampConfig)
				ctx := t.Context()
				oc := h.openai(ooption.WithMaxRetries(0))
				ac := h.anthropic(aoption.WithMaxRetries(0))
				call := func() error {
					var err error
					switch api {
					case "chat":
						_, err = oc.Chat.Completions.New(ctx, conversations[0].openaiParams(5))
					case "responses":
						_, err = oc.Responses.New(ctx, conversations[0].responsesParams(16))
					case "anthropic":
						_, err = ac.Messages.New(ctx, conversations[0].anthropicParams(5))
					}
					return err
				}
				for i := range 2 {
					if err := call(); err != nil {
						t.Fatalf("request %d: %v, want it admitted under the floor of 2", i, err)
					}
				}
				err := call()
				var oe *openai.Error
				var ae *anthropic.Error
				switch {
				case api == "anthropic":
					if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.Type() != "rate_limit_error" ||
						ae.Response.Header.Get("Retry-After") != "60" || !strings.Contains(ae.Error(), "traffic grew too fast") {
						t.Fatalf("third request: %v, want an *anthropic.Error 429 rate_limit_error, retry-after 60", err)
					}
				case !errors.As(err, &oe):
					t.Fatalf("third request: %v, want an *openai.Error", err)
				case oe.StatusCode != 429 || oe.Code != "slow_down" || oe.Type != "rate_limit_error" || oe.Response.Header.Get("Retry-After") != "60":
					t.Errorf("third request: %d code %q type %q retry-after %q; want 429 slow_down rate_limit_error 60",
						oe.StatusCode, oe.Code, oe.Type, oe.Response.Header.Get("Retry-After"))
				}
			})
		})
	}
}

// TestSDKResponsesStreamError: on the Responses API the stream_error fault
// ends a started stream as the API ends a failed response, with a
// response.failed event whose response has status failed and an error;
// openai-go surfaces it as that typed event (the SDK raises a Go error only
// for an event with a top-level error, which Chat Completions sends: see
// TestSDKStreamError), after some text, and the stream then ends.
func TestSDKResponsesStreamError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, `
seed: 5
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 10ms}
faults: {stream_error: 1}
`)
		c := h.openai()
		stream := c.Responses.NewStreaming(t.Context(), conversations[0].responsesParams(40))
		var text strings.Builder
		var failed *responses.ResponseFailedEvent
		for stream.Next() {
			switch ev := stream.Current(); ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.AsResponseOutputTextDelta().Delta)
			case "response.failed":
				f := ev.AsResponseFailed()
				failed = &f
			}
		}
		err := stream.Err()
		stream.Close()
		if err != nil {
			t.Fatalf("stream error = %v, want the stream to end after response.failed", err)
		}
		if failed == nil || failed.Response.Status != responses.ResponseStatusFailed || failed.Response.Error.Code != "server_error" || failed.Response.Error.Message == "" {
			t.Fatalf("response.failed = %+v, want a failed response with error code server_error", failed)
		}
		if got := text.String(); got == "" || len(got) >= len(mock.Filler(40)) || !strings.HasPrefix(mock.Filler(40), got) {
			t.Errorf("text before the error = %q, want a non-empty proper prefix of the filler", got)
		}
		if as := h.tape.log(); len(as) != 1 || as[0].status != 200 {
			t.Errorf("attempts = %v, want one 200 (no retry after a stream started)", statuses(as))
		}
	})
}
