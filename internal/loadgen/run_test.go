package loadgen

import (
	"strings"
	"testing"
)

func TestResolveOnly(t *testing.T) {
	s, err := Parse("o.yaml", []byte("items: 1\nstrategies:\n  - {name: \"unbounded, retries=2\", kind: unbounded}\n"+
		"  - {name: a, kind: unbounded}\n  - {name: b, kind: unbounded}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		values []string
		want   string
	}{
		{[]string{"unbounded, retries=2"}, "unbounded, retries=2"},
		{[]string{"a,b"}, "a|b"},
		{[]string{"a, b"}, "a|b"},
		{[]string{"a", "unbounded, retries=2"}, "a|unbounded, retries=2"},
		{[]string{"a,c"}, "error"},
	}
	for _, tt := range tests {
		names, err := s.ResolveOnly(tt.values)
		got := strings.Join(names, "|")
		if err != nil {
			got = "error"
		}
		if got != tt.want {
			t.Errorf("ResolveOnly(%q) = %q, want %q", tt.values, got, tt.want)
		}
	}
}
