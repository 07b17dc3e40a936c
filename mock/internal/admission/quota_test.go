package admission

import (
	"testing"
)

func TestQuotaExhausted(t *testing.T) {
	q := Quota{Requests: 3, InputTokens: 100, OutputTokens: 50}
	for _, tt := range []struct {
		used quotaUsage
		want string
	}{
		{quotaUsage{}, ""},
		{quotaUsage{requests: 2, input: 99, output: 49}, ""},
		{quotaUsage{requests: 3}, QuotaRequests},
		{quotaUsage{input: 100}, QuotaInputTokens},
		{quotaUsage{input: 500, output: 50}, QuotaInputTokens}, // the first one spent
		{quotaUsage{output: 51}, QuotaOutputTokens},
	} {
		if got := q.exhausted(tt.used); got != tt.want {
			t.Errorf("exhausted(%+v) = %q, want %q", tt.used, got, tt.want)
		}
	}
	if got := (Quota{}).exhausted(quotaUsage{requests: 1 << 40}); got != "" {
		t.Errorf("zero quota: exhausted = %q, want unlimited", got)
	}
}
