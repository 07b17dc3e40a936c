package mock

import (
	"encoding/json"
	"testing"
)

// FuzzTextTokens: every token is what encoding/json makes of its four
// characters, and the tokens together are the text.
func FuzzTextTokens(f *testing.F) {
	for _, s := range []string{"", "abc", "abcd", "abcde", `{"a":"<b>&\n\t\u2028é😀"}`, "\xff\xfeok", "\ufffd", "a\x00b\x1fc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := textTokens(text)
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
