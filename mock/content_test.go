package mock

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// FuzzTextTokens: every token is what encoding/json makes of its four
// characters, and the tokens together are the text.
func FuzzTextTokens(f *testing.F) {
	for _, s := range []string{"", "abc", "abcd", "abcde", `{"a":"<b>&\n\t\u2028é😀"}`, "\xff\xfeok", "\ufffd", "a\x00b\x1fc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := wire.TextTokens(text)
		runes := []rune(text)
		if want := (len(runes) + 3) / 4; len(got) != want {
			t.Fatalf("textTokens(%q): %d tokens, want %d", text, len(got), want)
		}
		for i, tok := range got {
			q, _ := json.Marshal(string(runes[4*i : min(4*i+4, len(runes))]))
			if want := string(q[1 : len(q)-1]); tok != want {
				t.Errorf("textTokens(%q)[%d] = %q, want %q", text, i, tok, want)
			}
		}
	})
}

func TestConfigOutputContentKeys(t *testing.T) {
	cfg, err := ParseConfig([]byte("output:\n  length: natural\n  tool_use: 0.3\n"), "c.yaml")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if cfg.Output.Length != LengthNatural || cfg.Output.ToolUse != 0.3 {
		t.Errorf("output = %+v, want length natural, tool_use 0.3", cfg.Output)
	}
	_, err = ParseConfig([]byte("output:\n  length: bogus\n  tool_use: 2\n"), "c.yaml")
	for _, want := range []string{"c.yaml:2: output.length", "c.yaml:3: output.tool_use"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(bad): error %v, want one naming %q", err, want)
		}
	}
}
