package batchrun

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/provider"
)

func TestUnfence(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"```json\n{\"a\": 1}\n```", "{\"a\": 1}\n"},
		{"  ```\n[1, 2]\n```  ", "[1, 2]\n"},
		{"```{\"a\": 1}```", `{"a": 1}`},
		{"```", "```"},
		{"text ```json\n{}\n```", "text ```json\n{}\n```"},
	}
	for _, tt := range tests {
		if got := unfence(tt.in); got != tt.want {
			t.Errorf("unfence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSchemaCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	os.WriteFile(path, []byte(`{"type": "object", "required": ["label"], "properties": {"label": {"type": "string"}}}`), 0o644)
	check, err := SchemaCheck(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ text, err string }{
		{`{"label": "bug"}`, ""},
		{"```json\n{\"label\": \"bug\"}\n```", ""},
		{`{"label": 3}`, "at '/label': got number, want string"},
		{`{}`, "missing property 'label'"},
		{`{"label": "bug"`, "response is not JSON"},
		{`{"label": "a"} {}`, "response is not JSON"},
		{`Sure! Here it is`, "response is not JSON"},
	}
	for _, tt := range tests {
		err := check(engine.Item{}, provider.Response{Text: tt.text})
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("check(%q) = %v, want valid", tt.text, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("check(%q) = %v, want %q", tt.text, err, tt.err)
		}
	}
	os.WriteFile(path, []byte(`{"type": 12}`), 0o644)
	if _, err := SchemaCheck(path); err == nil || !errors.Is(err, ErrUsage) {
		t.Errorf("SchemaCheck(invalid schema) = %v, want a usage error", err)
	}
}
