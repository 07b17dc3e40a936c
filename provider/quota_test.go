package provider

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/ratelab/ratelab/provider/gemini"
	"github.com/ratelab/ratelab/provider/vertex"
	"github.com/ratelab/ratelab/strategies"
)

// TestQuota classifies constructed error responses of both providers: the
// refusals for a spent quota or spend cap are strategies.Quota, typed by
// their code; the rate limits beside them stay Throttled. Each call goes
// through strategies.Do with the SDKs' two retries, and the server counts
// the attempts: a quota refusal gets exactly one, a rate limit three.
func TestQuota(t *testing.T) {
	tests := []struct {
		name     string
		p        Provider
		status   int
		headers  map[string]string
		body     string
		want     strategies.Kind
		wantType string
	}{
		{
			// The tier's monthly spend cap: a 429 with no retry-after (docs/wire.md
			// §1.4, https://platform.claude.com/docs/en/api/rate-limits).
			name: "anthropic spend cap 429", p: Anthropic{}, status: 429,
			headers: map[string]string{"X-Should-Retry": "true", "Anthropic-Ratelimit-Requests-Limit": "50", "Anthropic-Ratelimit-Requests-Remaining": "49"},
			body:    `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits. You will regain access on 2027-01-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_018EeWyXxfu5pfWkrYcMdjWG"}`,
			want:    strategies.Quota, wantType: "enforced_spend_limit_reached",
		},
		{
			// A spend limit the organization set: a 400 (errors page).
			name: "anthropic user-set spend limit 400", p: Anthropic{}, status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2027-01-01 at 00:00 UTC."},"request_id":"req_1"}`,
			want: strategies.Quota, wantType: "invalid_request_error",
		},
		{
			name: "anthropic rate limit 429", p: Anthropic{}, status: 429,
			headers: map[string]string{"Retry-After": "0"},
			body:    `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_2"}`,
			want:    strategies.Throttled, wantType: "rate_limit_error",
		},
		{
			name: "anthropic other 400", p: Anthropic{}, status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: field required"}}`,
			want: strategies.Failed, wantType: "invalid_request_error",
		},
		{
			// docs/wire.md §2.4 (ChatGPTNextWeb/NextChat#3123).
			name: "openai insufficient_quota 429", p: OpenAI{}, status: 429,
			body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			want: strategies.Quota, wantType: "insufficient_quota",
		},
		{
			name: "openai insufficient_quota 429, older code null", p: OpenAI{}, status: 429,
			body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":null}}`,
			want: strategies.Quota, wantType: "insufficient_quota",
		},
		{
			// A hard spend limit (https://developers.openai.com/api/docs/guides/spend-limits).
			name: "openai project spend limit 429", p: OpenAI{}, status: 429,
			headers: map[string]string{"Retry-After": "1"},
			body:    `{"error":{"message":"Your project has reached its spend limit.","type":"insufficient_quota","param":null,"code":"project_spend_limit_exceeded"}}`,
			want:    strategies.Quota, wantType: "project_spend_limit_exceeded",
		},
		{
			name: "openai responses api insufficient_quota 429", p: OpenAIResponses{}, status: 429,
			body: `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			want: strategies.Quota, wantType: "insufficient_quota",
		},
		{
			name: "openai rate limit 429", p: OpenAI{}, status: 429,
			headers: map[string]string{"Retry-After-Ms": "0"},
			body:    `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			want:    strategies.Throttled, wantType: "requests",
		},
		{
			// A per-minute quota of the Gemini API: a rate limit
			// (RooCodeInc/Roo-Code#3883, docs/gemini.md).
			name: "gemini per-minute quota 429", p: gemini.Format{}, status: 429,
			body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_input_token_count","quotaId":"GenerateContentInputTokensPerModelPerMinute-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-flash"},"quotaValue":"250000"}]},{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}`,
			want: strategies.Throttled, wantType: "RESOURCE_EXHAUSTED",
		},
		{
			// The daily quota: waiting seconds does not lift it.
			name: "gemini per-day quota 429", p: gemini.Format{}, status: 429,
			body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"250"}]}]}}`,
			want: strategies.Quota, wantType: "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
		},
		{
			// Vertex AI's shared capacity (google-gemini/gemini-cli#14811):
			// no details, a rate limit.
			name: "vertex resource exhausted 429", p: vertex.Format{}, status: 429,
			body: `{"error":{"code":429,"message":"Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.","status":"RESOURCE_EXHAUSTED"}}`,
			want: strategies.Throttled, wantType: "RESOURCE_EXHAUSTED",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				for k, v := range tt.headers {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := &Client{Provider: tt.p, BaseURL: srv.URL, APIKey: testKey, HTTP: srv.Client()}
			req := testRequest(false)
			s := strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 1})
			p := &strategies.RetryPolicy{MaxRetries: strategies.DefaultMaxRetries, Seed: 1}
			call, err := strategies.Do(context.Background(), s, p, c.Cost(req), func(ctx context.Context, n int) strategies.Outcome {
				_, o := c.Do(ctx, req, n)
				if tt.want == strategies.Throttled && o.Kind == strategies.Throttled {
					o.RetryAfter, o.HasRetryAfter = 0, true // keep the test quick: retry at once
				}
				return o
			})
			if err != nil {
				t.Fatal(err)
			}
			o := call.Outcome
			if o.Kind != tt.want || o.Status != tt.status {
				t.Errorf("Outcome = %v %d (%v), want %v %d", o.Kind, o.Status, o.Err, tt.want, tt.status)
			}
			if _, typ, _ := Describe(o); typ != tt.wantType {
				t.Errorf("Describe type = %q, want %q", typ, tt.wantType)
			}
			wantAttempts := int64(1)
			if strategies.Retryable(o) {
				wantAttempts = 1 + strategies.DefaultMaxRetries
			}
			if tt.want == strategies.Quota && wantAttempts != 1 {
				t.Errorf("a quota refusal is retryable")
			}
			if got := hits.Load(); got != wantAttempts || int64(call.Attempts) != wantAttempts {
				t.Errorf("server saw %d attempts, Do made %d; want %d", got, call.Attempts, wantAttempts)
			}
			if tt.want == strategies.Quota {
				if st := s.Stats(); st.Quota != 1 || st.Throttles != 0 {
					t.Errorf("Stats: quota %d, throttles %d; want 1, 0", st.Quota, st.Throttles)
				}
				if call.Waits.Backoff != 0 || call.Waits.RetryAfter != 0 {
					t.Errorf("waited %+v between attempts, want nothing", call.Waits)
				}
			}
		})
	}
}
