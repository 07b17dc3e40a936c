package loadgen

import (
	"runtime"
	"strings"
	"testing"
)

// TestValidateLimits: a request the provider (or the embedded mock) would
// refuse on every call is an error at validation, naming the key and line
// where it was set; one it accepts, even near the limits, is not.
func TestValidateLimits(t *testing.T) {
	const head = "name: t\nserver: {limits: {max_concurrent: 5}}\nstrategies: [{name: s, kind: semaphore, n: 5}]\n"
	tests := []struct {
		name string
		yaml string
		want string // "" for valid
	}{
		{"huge prompt_tokens", "items: 10\nrequest:\n  prompt_tokens: 100000000\n",
			"t.yaml:6: request.prompt_tokens: about 100,000,000 input tokens plus max_tokens 100 is more than the 200,000-token context window of claude-haiku-4-5"},
		{"max_tokens past int32", "items: 10\nrequest: {max_tokens: 2147483648}\n",
			"t.yaml:5: request.max_tokens: 2,147,483,648 is more than claude-haiku-4-5 accepts (at most 64,000 output tokens)"},
		{"max_tokens past the model", "items: 10\nrequest: {max_tokens: 64001}\n", "request.max_tokens: 64,001 is more than claude-haiku-4-5"},
		{"max_tokens at the model", "items: 10\nrequest: {max_tokens: 64000}\n", ""},
		{"unknown model: the provider's largest", "items: 10\nrequest: {model: claude-opus-5-5, max_tokens: 128000}\n", ""},
		{"unknown model past the provider's largest", "items: 10\nrequest: {model: claude-opus-5-5, max_tokens: 128001}\n", "more than anthropic models accept"},
		{"dated snapshot", "items: 10\nrequest: {model: claude-haiku-4-5-20251001, max_tokens: 64001}\n", "claude-haiku-4-5-20251001 accepts"},
		{"context filled exactly", "items: 10\nrequest: {provider: openai, prompt_tokens: 399900, max_tokens: 100}\n", ""},
		{"context overfilled", "items: 10\nrequest: {provider: openai, prompt_tokens: 399901, max_tokens: 100}\n", "400,000-token context window of gpt-5.4-mini"},
		{"the deprecated default, still known", "items: 10\nrequest: {provider: openai, model: gpt-5-mini, prompt_tokens: 399901, max_tokens: 100}\n", "400,000-token context window of gpt-5-mini"},
		{"a group's own key", "items:\n  - {count: 2}\n  - {count: 3, max_tokens: 70000}\n", "t.yaml:6: items[1].max_tokens: 70,000"},
		{"a group inheriting", "request: {prompt_tokens: 300000}\nitems:\n  - {count: 2}\n  - {count: 3}\n", "t.yaml:4: request.prompt_tokens"},
		{"batch config", "request: {max_tokens: 999999}\n", "request.max_tokens: 999,999"},
	}
	// Both problems of one request are reported, each once.
	_, err := Parse("t.yaml", []byte(head+"items: 10\nrequest: {max_tokens: 2147483648, prompt_tokens: 100000000}\n"))
	if err == nil || !strings.Contains(err.Error(), "request.max_tokens: 2,147,483,648") ||
		!strings.Contains(err.Error(), "request.prompt_tokens: about 100,000,000 input tokens is more than") || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("Parse: %v, want one error for max_tokens and one for prompt_tokens", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.name == "batch config" {
				_, err = parse(&Scenario{File: "t.yaml", batch: true}, []byte(tt.yaml))
			} else {
				_, err = Parse("t.yaml", []byte(head+tt.yaml))
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Parse: %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Parse: %v, want an error containing %q", err, tt.want)
			}
			if err != nil && strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("Parse: one problem reported more than once:\n%v", err)
			}

		})
	}
}

// TestValidateHugePromptBuildsNothing: validating prompt_tokens: 100000000
// (a 400 MB prompt if it were built) allocates almost nothing. Before, the
// scenario passed and the run built the prompt, reaching 10 GB of RSS.
func TestValidateHugePromptBuildsNothing(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse("t.yaml", []byte("name: t\nitems: 10\nrequest: {prompt_tokens: 100000000}\nstrategies: [{name: s, kind: unbounded}]\n"))
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("Parse accepted prompt_tokens: 100000000")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("validation allocated %d bytes, want under 1 MB", alloc)
	}
}
