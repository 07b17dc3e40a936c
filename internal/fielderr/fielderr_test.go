package fielderr

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestSuggest(t *testing.T) {
	known := []string{"max_concurrent", "rpm", "tpm", "items", "name"}
	for word, want := range map[string]string{
		"max_concurent": "max_concurrent", "rmp": "rpm", "itmes": "items", "nmae": "name",
		"tpmm": "tpm", "bogus": "", "x": "", "max": "",
	} {
		if got := Suggest(word, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

func TestUnknownKey(t *testing.T) {
	known := []string{"rpm", "tpm", "max_concurrent"}
	for key, want := range map[string]string{
		"rmp":   `unknown key "rmp" (did you mean rpm?)`,
		"bogus": `unknown key "bogus" (want one of max_concurrent, rpm, tpm)`,
	} {
		if got := UnknownKey(key, known); got != want {
			t.Errorf("UnknownKey(%q) = %q, want %q", key, got, want)
		}
	}
	if got := UnknownKey("x", nil); got != `unknown key "x" (none is allowed here)` {
		t.Errorf("UnknownKey with none known = %q", got)
	}
}

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{0, "an integer"}, {int8(0), "an integer"}, {uint(0), "a non-negative integer"}, {0.5, "a number"},
		{"", "a string"}, {true, "true or false"}, {time.Second, "a duration like 500ms or 1s"},
		{[]int{}, "a list"}, {map[string]int{}, "a mapping"}, {struct{}{}, "a mapping"}, {new(int), "an integer"},
	} {
		if got := Describe(reflect.TypeOf(tt.v)); got != tt.want {
			t.Errorf("Describe(%T) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestError(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{File: "f.yaml", Line: 3, Path: "a.b", Message: "bad"}, "f.yaml:3: a.b: bad"},
		{Error{File: "f.yaml", Path: "a", Message: "required"}, "f.yaml: a: required"},
		{Error{Line: 2, Path: "a", Message: "bad"}, "line 2: a: bad"},
		{Error{Path: "limits.rpm", Message: "bad"}, "limits.rpm: bad"},
		{Error{File: "f.yaml", Message: "empty"}, "f.yaml: empty"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
	es := Errors{{Line: 5, Message: "b"}, {Line: 1, Message: "a"}, {Line: 5, Message: "c"}}
	es.Sort()
	if es[0].Message != "a" || es[1].Message != "b" || es[2].Message != "c" {
		t.Errorf("Sort: %v", es)
	}
	joined := errors.Join(Errors{es[0]}, es[1], errors.New("plain"))
	if got := List(joined); len(got) != 3 || got[2].Message != "plain" {
		t.Errorf("List(join) = %v", got)
	}
	var e *Error
	if !errors.As(es, &e) || e != es[0] {
		t.Errorf("errors.As(Errors) = %v", e)
	}
}

func TestPaths(t *testing.T) {
	if Join("", "a") != "a" || Join("a", "b") != "a.b" || Join("a", "") != "a" || Index("s", 2) != "s[2]" {
		t.Error("Join or Index wrong")
	}
	if Parent("a.b[2].c") != "a.b[2]" || Parent("a.b[2]") != "a.b" || Parent("a") != "" {
		t.Error("Parent wrong")
	}
	for _, tt := range []struct {
		a, b string
		want bool
	}{{"a", "a", true}, {"a", "a.b", true}, {"a.b", "a", true}, {"a", "a[0]", true}, {"a", "ab", false}, {"", "x", true}, {"a.b", "a.c", false}} {
		if got := Related(tt.a, tt.b); got != tt.want {
			t.Errorf("Related(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}
