package mock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
)

// TestSDKQuota: once a key's quota is spent, each SDK surfaces the
// provider's spend-cap error after exactly the attempts its retry rules
// give (anthropic-sdk-go v1.84 and openai-go v3.99, requestconfig.go
// shouldRetry): a 429 is retried unless x-should-retry says false, so with
// the default 2 retries the quota 429, which like the real ones carries no
// retry-after and no x-should-retry, takes 3 attempts; with
// quota.should_retry: false the header stops the SDK after 1.
func TestSDKQuota(t *testing.T) {
	for _, sdk := range sdks {
		for _, tc := range []struct {
			shouldRetry string
			want        string
		}{
			{"", "[429 429 429]"},
			{", should_retry: false", "[429]"},
		} {
			t.Run(sdk.name+"/"+map[string]string{"": "default", ", should_retry: false": "should_retry=false"}[tc.shouldRetry], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 1ms}
quota: {requests: 1`+tc.shouldRetry+`}
`)
					if err := sdk.call(h, t.Context(), 2); err != nil {
						t.Fatalf("first call, within the quota: %v", err)
					}
					h.tape.log()
					err := sdk.call(h, t.Context(), 2)
					if statusOf(err) != 429 {
						t.Fatalf("second call: err = %v, want a 429 API error", err)
					}
					var ae *anthropic.Error
					var oe *openai.Error
					switch {
					case errors.As(err, &ae):
						if ae.Type() != "rate_limit_error" || !strings.Contains(ae.RawJSON(), `"error_code":"enforced_spend_limit_reached"`) {
							t.Errorf("anthropic error: type %q, body %s; want rate_limit_error with details.error_code enforced_spend_limit_reached", ae.Type(), ae.RawJSON())
						}
					case errors.As(err, &oe):
						if oe.Code != "insufficient_quota" || oe.Type != "insufficient_quota" {
							t.Errorf("openai error: type %q code %q, want insufficient_quota for both", oe.Type, oe.Code)
						}
					}
					as := h.tape.log()
					if got := fmt.Sprint(statuses(as)); got != tc.want {
						t.Errorf("attempt statuses = %s, want %s", got, tc.want)
					}
					for i, a := range as {
						if a.retryAfter != "" {
							t.Errorf("attempt %d: retry-after %q, want none on a quota error", i, a.retryAfter)
						}
					}
					st := h.srv.Stats()
					if int(st.QuotaExceeded) != len(as) || st.Throttled != 0 {
						t.Errorf("Stats: quota_exceeded %d throttled %d, want %d and 0", st.QuotaExceeded, st.Throttled, len(as))
					}
				})
			})
		}
	}
}

// TestSDKRetryAfterMS: with limits.retry_after_ms the concurrency 429 says
// retry-after 1 (whole seconds, rounded up) and retry-after-ms 251 (the
// slot's holder ends in 250 ms; one more, so that the retry comes after
// the slot frees, not at the same instant). Both SDKs read retry-after-ms
// first: the retry comes exactly 251 ms later and succeeds.
func TestSDKRetryAfterMS(t *testing.T) {
	for _, sdk := range sdks {
		t.Run(sdk.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 50ms}
limits: {max_concurrent: 1, retry_after_ms: true}
`)
				held := h.block(t, 5) // 250 ms
				if err := sdk.call(h, t.Context(), 2); err != nil {
					t.Fatalf("call: %v", err)
				}
				as := h.tape.log()
				if got := fmt.Sprint(statuses(as)); got != "[429 200]" {
					t.Fatalf("attempt statuses = %s, want [429 200]", got)
				}
				if as[0].retryAfter != "1" {
					t.Errorf("retry-after = %q, want 1", as[0].retryAfter)
				}
				if gap := as[1].at.Sub(as[0].at); gap != 251*time.Millisecond {
					t.Errorf("gap between attempts = %v, want exactly 251ms (retry-after-ms, not retry-after)", gap)
				}
				if st := <-held; st != 200 {
					t.Errorf("blocking request: status %d", st)
				}
			})
		})
	}
}
