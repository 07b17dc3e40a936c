package gemini

import (
	"testing"
	"time"
)

func TestParseError(t *testing.T) {
	tests := []struct {
		name, body string
		ok         bool
		typ, code  string
		retry      time.Duration
		hasRetry   bool
	}{
		{"rate limit", `{"error":{"code":429,"message":"m","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"18.500s"}]}}`,
			true, "RESOURCE_EXHAUSTED", "GenerateRequestsPerMinutePerProjectPerModel", 18500 * time.Millisecond, true},
		{"wrapped in an array", `[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]`, true, "UNAVAILABLE", "", 0, false},
		{"error info", `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`, true, "INVALID_ARGUMENT", "API_KEY_INVALID", 0, false},
		{"bad retry delay", `{"error":{"code":429,"message":"m","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"soon"}]}}`, true, "RESOURCE_EXHAUSTED", "", 0, false},
		{"anthropic's envelope", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false, "", "", 0, false},
		{"not JSON", `upstream connect error`, false, "", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := ParseError([]byte(tt.body))
			if ok != tt.ok || b.Type != tt.typ || b.Code != tt.code || b.RetryAfter != tt.retry || b.HasRetryAfter != tt.hasRetry {
				t.Errorf("ParseError = %+v, %v; want type %q code %q retry %v/%v, %v", b, ok, tt.typ, tt.code, tt.retry, tt.hasRetry, tt.ok)
			}
		})
	}
}
