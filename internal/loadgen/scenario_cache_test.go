package loadgen

import (
	"runtime"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/mock"
)

// TestParseSystemCache checks the system prompt keys: system_tokens makes
// the filler every item sends, system_cache reaches each item's request,
// and what Anthropic would refuse or OpenAI cannot use is an error naming
// the file, line and key.
func TestParseSystemCache(t *testing.T) {
	s, err := Parse("x.yaml", []byte("items: [{count: 2}, {count: 1, system: own, system_cache: 1h}]\nrequest: {system_tokens: 1500, system_cache: 5m}\nstrategies: [{name: a, kind: unbounded}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it, err := range source(s.Groups(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		r := it.Request
		if r.System == mock.Filler(1500) {
			r.System = "filler"
		}
		got = append(got, r.System+"/"+r.SystemCache)
	}
	if want := "filler/5m filler/5m own/1h"; strings.Join(got, " ") != want {
		t.Errorf("items' system/cache = %v, want %s", got, want)
	}
	if n := estimatePromptTokens(s.Groups()[0]); n != 1500+mock.EstimateTokens("Classify ticket 0.") {
		t.Errorf("group 0: %d input tokens, want the system's 1,500 and the prompt's", n)
	}

	for _, tt := range []struct{ src, want string }{
		{"items: 3\nrequest: {system: s, system_cache: 10m}\n",
			`x.yaml:2: request.system_cache: want 5m or 1h (Anthropic's cache_control TTLs), got "10m"`},
		{"items: 3\nrequest: {system_cache: 5m}\n",
			`x.yaml:2: request.system_cache: has no system prompt to cache: set system or system_tokens`},
		{"items: 3\nrequest: {provider: openai, system_tokens: 2000, system_cache: 5m}\n",
			`x.yaml:2: request.system_cache: is Anthropic's cache_control; openai caches a repeated prompt prefix of 1,024 tokens or more by itself, so remove it`},
		{"items: [{count: 1}, {count: 1, provider: openai-responses, system_cache: 1h}]\nrequest: {system: s}\n",
			`x.yaml:1: items[1].system_cache: is Anthropic's cache_control; openai-responses caches`},
		{"items: 3\nrequest: {system: s, system_tokens: 10}\n",
			`x.yaml:2: request.system_tokens: set system or system_tokens, not both`},
		{"items: {count: 3, system_tokens: -1}\n",
			`x.yaml:1: items.system_tokens: must not be negative, got -1`},
	} {
		_, err := Parse("x.yaml", []byte(tt.src+"strategies: [{name: a, kind: unbounded}]\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want it to contain %q", tt.src, err, tt.want)
		}
	}
}

// TestSystemTokensTooLarge: a system prompt beyond every context window is
// an error naming system_tokens, found without building its filler (a
// hundred million tokens would be 400 MB).
func TestSystemTokensTooLarge(t *testing.T) {
	_, err := Parse("x.yaml", []byte("items: 3\nrequest: {system_tokens: 100000000}\nstrategies: [{name: a, kind: unbounded}]\n"))
	want := "x.yaml:2: request.system_tokens: about 100,000,005 input tokens plus max_tokens 100 is more than the"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Parse: %v, want %q", err, want)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	before := m.TotalAlloc
	Parse("x.yaml", []byte("items: 3\nrequest: {system_tokens: 100000000}\nstrategies: [{name: a, kind: unbounded}]\n"))
	runtime.ReadMemStats(&m)
	if grew := m.TotalAlloc - before; grew > 50<<20 {
		t.Errorf("Parse allocated %d MB, want the filler never built", grew>>20)
	}
}
