package fielderr

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// UnknownKey is the message for key where only known keys are allowed: the
// nearest known key when one is a likely misspelling, else all of them.
func UnknownKey(key string, known []string) string {
	if s := Suggest(key, known); s != "" {
		return fmt.Sprintf("unknown key %q (did you mean %s?)", key, s)
	}
	if len(known) == 0 {
		return fmt.Sprintf("unknown key %q (none is allowed here)", key)
	}
	return fmt.Sprintf("unknown key %q (want one of %s)", key, strings.Join(sorted(known), ", "))
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// Describe names what a value of type t is written as, for "want …"
// messages: "an integer", "a duration like 500ms or 1s", "a mapping".
func Describe(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "a duration like 500ms or 1s"
	case t.Kind() == reflect.Pointer:
		return Describe(t.Elem())
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}
