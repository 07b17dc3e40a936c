package batch

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzBatchInputLine: decoding an input line never panics, every item it
// accepts is well formed, and an accepted item encoded again decodes to
// itself.
func FuzzBatchInputLine(f *testing.F) {
	for _, s := range []string{
		`{"id": "a", "prompt": "x"}`,
		`{"id": "b", "messages": [{"role": "user", "content": "hi"}], "system": "s", "max_tokens": 5, "metadata": {"k": [1, 2]}}`,
		`{"id": "", "prompt": "x"}`,
		`{"id": "a", "prompt": "x", "extra": 1}`,
		`{"id": "a"`,
		`[1]`,
		`{"id": "a", "prompt": "x"} {"id": "b"}`,
		`{"id": "\u00e9", "prompt": "\ud83d\ude00", "metadata": null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(bytes.TrimSpace(line)) == 0 {
			return // blank lines never reach decodeInput
		}
		in, ie := decodeInput("items.jsonl", 1, line)
		if (in == nil) == (ie == nil) {
			t.Fatalf("decodeInput(%q) = %v, %v: want exactly one", line, in, ie)
		}
		if ie != nil {
			if ie.Line != 1 || ie.File != "items.jsonl" || ie.Message == "" {
				t.Fatalf("decodeInput(%q): error %+v lacks its place or message", line, ie)
			}
			return
		}
		if in.ID == "" || (in.Prompt == "") == (len(in.Messages) == 0) || in.MaxTokens < 0 {
			t.Fatalf("decodeInput(%q) accepted %+v", line, in)
		}
		again, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		back, ie := decodeInput("items.jsonl", 1, again)
		if ie != nil {
			t.Fatalf("re-encoded %q: %v", again, ie)
		}
		if !reflect.DeepEqual(normal(in), normal(back)) {
			t.Fatalf("round trip: %+v != %+v", in, back)
		}
	})
}

// normal compacts an input's metadata, which json.Marshal re-indents.
func normal(in *Line) Line {
	out := *in
	if len(out.Metadata) > 0 {
		var v any
		json.Unmarshal(out.Metadata, &v)
		out.Metadata, _ = json.Marshal(v)
	}
	return out
}
