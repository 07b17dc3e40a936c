package strict

import (
	"bytes"
	"encoding/json"
	"testing"
)

// benchLine is a typical batch input line (batch.Line).
const benchLine = `{"id": "t-000123", "prompt": "Classify this support ticket: my invoice shows a charge I do not recognise, please help.", "max_tokens": 50, "metadata": {"row": 123, "source": "zendesk"}}`

type benchInput struct {
	ID        string          `json:"id" yaml:"id"`
	Prompt    string          `json:"prompt,omitempty" yaml:"prompt"`
	System    string          `json:"system,omitempty" yaml:"system"`
	MaxTokens int             `json:"max_tokens,omitempty" yaml:"max_tokens"`
	Metadata  json.RawMessage `json:"metadata,omitempty" yaml:"-"`
	Meta      any             `json:"-" yaml:"metadata"`
}

// BenchmarkLine compares decoding one JSON line with this package (JSON is
// YAML) and with encoding/json, which engine's batch uses for its lines: a
// batch decodes every line twice, up to millions of them.
func BenchmarkLine(b *testing.B) {
	b.Run("strict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in benchInput
			if err := Unmarshal("items.jsonl", []byte(benchLine), &in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in benchInput
			dec := json.NewDecoder(bytes.NewReader([]byte(benchLine)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
