package strategies

import "testing"

// TestCostTokens checks the reservation: the input the provider will count
// (not what the caller expects it to read from its cache) plus max_tokens.
func TestCostTokens(t *testing.T) {
	tests := []struct {
		c    Cost
		want int
	}{
		{Cost{InputTokens: 100, MaxTokens: 50}, 150},
		{Cost{InputTokens: 5000, CachedInputTokens: 4800, MaxTokens: 50}, 250},
		{Cost{InputTokens: 100, CachedInputTokens: 300, MaxTokens: 50}, 50}, // never below max_tokens
	}
	for _, tt := range tests {
		if got := tt.c.Tokens(); got != tt.want {
			t.Errorf("%+v.Tokens() = %d, want %d", tt.c, got, tt.want)
		}
	}
}
