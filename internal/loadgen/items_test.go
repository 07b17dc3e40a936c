package loadgen

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tickets is a batch input file: prompts and a conversation, one line with
// its own max_tokens and one with its own system prompt.
const tickets = `{"id": "t-1", "prompt": "Classify: my card was charged twice for one order"}
{"id": "t-2", "prompt": "Classify: the app crashes when I open settings", "max_tokens": 40}

{"id": "t-3", "system": "Answer in one word.", "messages": [{"role": "user", "content": "Classify: refund?"}, {"role": "assistant", "content": "billing"}, {"role": "user", "content": "And this: login fails"}]}
{"id": "t-4", "prompt": "Classify: where is my parcel", "metadata": {"row": 4}}
`

func writeScenario(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "s.yaml")
}

// TestItemsFileVirtual runs a scenario whose items are a batch input file:
// one call per line, in order, each with the line's prompt or messages and
// its max_tokens, else the request's.
func TestItemsFileVirtual(t *testing.T) {
	path := writeScenario(t, map[string]string{
		"tickets.jsonl": tickets,
		"s.yaml": `name: own
items: {file: tickets.jsonl}
request: {max_tokens: 20}
server:
  output: {length: max_tokens}
  latency: {per_token: 10ms}
  limits: {max_concurrent: 2}
strategies:
  - {name: sem, kind: semaphore, n: 2, expect: {completed: 4}}
`})
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Items.Count() != 4 {
		t.Fatalf("items = %d, want the file's 4 lines", s.Items.Count())
	}
	rep := runVirtual(t, path)
	r := rep.Results[0]
	// Output: 20 + 40 + 20 + 20 tokens; t-2 (40 tokens, 0.4 s) shares
	// the two slots with the others (0.2 s each): 0.2+0.2 on one slot
	// while t-2 runs, then t-4 — 0.6 s in all.
	if r.Completed != 4 || r.OutputTokens != 100 {
		t.Errorf("completed %d, output tokens %d; want 4 and 100 (the lines' max_tokens, else the request's)", r.Completed, r.OutputTokens)
	}
	if math.Round(r.WallSeconds*1000) != 600 {
		t.Errorf("wall %v s, want 0.6 s", r.WallSeconds)
	}
	// Input tokens as the mock counts them, prompts and systems.
	wantIn := int64(0)
	for _, text := range []string{"Classify: my card was charged twice for one order", "Classify: the app crashes when I open settings",
		"Answer in one word.", "Classify: refund?", "billing", "And this: login fails", "Classify: where is my parcel"} {
		wantIn += int64(max(1, (len(text)+3)/4))
	}
	if r.InputTokens != wantIn {
		t.Errorf("input tokens %d, want %d", r.InputTokens, wantIn)
	}
	if got := s.Groups()[0].meanMaxTokens(); got != 25 {
		t.Errorf("mean max_tokens %d, want 25", got)
	}
	for _, f := range Failures(rep) {
		t.Error(f)
	}
}

func TestItemsFileErrors(t *testing.T) {
	scenario := func(items string) string {
		return "name: x\nitems: " + items + "\nstrategies:\n  - {name: s, kind: semaphore, n: 2}\n"
	}
	tests := []struct {
		name, items, file, want string
	}{
		{"a bad line", "{file: t.jsonl}", "{\"id\": \"a\", \"prompt\": \"x\"}\n{\"id\": \"b\", \"prompt\": \"y\", \"max_tokens\": -1}\n{\"id\": \"c\"}\n",
			"s.yaml:2: items.file: " + "DIR/t.jsonl:2: max_tokens: must be positive, got -1 (and 1 more problem; loadgen batch --input t.jsonl lists it)"},
		{"missing file", "{file: none.jsonl}", "", "s.yaml:2: items.file: open DIR/none.jsonl: no such file or directory"},
		{"empty file", "{file: t.jsonl}", "\n\n", "s.yaml:2: items.file: t.jsonl has no items"},
		{"count and file", "{file: t.jsonl, count: 3}", "{\"id\": \"a\", \"prompt\": \"x\"}\n", "s.yaml:2: items.count: set count or file, not both"},
		{"prompt and file", "{file: t.jsonl, prompt: hi}", "{\"id\": \"a\", \"prompt\": \"x\"}\n", "s.yaml:2: items.file: a file's lines have their own prompts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"s.yaml": scenario(tt.items)}
			if tt.file != "" {
				files["t.jsonl"] = tt.file
			}
			path := writeScenario(t, files)
			_, err := Load(path)
			want := strings.ReplaceAll(tt.want, "DIR", filepath.Dir(path))
			want = strings.Replace(want, "s.yaml", path, 1)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v\nwant %s", err, want)
			}
		})
	}
}
