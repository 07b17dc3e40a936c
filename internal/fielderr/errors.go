// Package fielderr is the typed error of every ratelab configuration and input
// line, and the words of its messages.
//
// Error {File, Line, Path, Message} is formatted FILE:LINE: PATH: MESSAGE,
// with phrases such as "want an integer" and "unknown key \"rmp\" (did you
// mean rpm?)". internal/strict (the YAML decoder) and package batch's input
// lines (JSON, decoded with encoding/json for speed) both speak it, and it
// imports no decoder, so batch stays free of YAML.
package fielderr

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Error is one problem at one place of a file:
//
//	scenarios/x.yaml:12: strategies[2].n: must not be negative, got -3
//
// A validation method that knows no file (mock.Config.Validate) returns
// Errors with only Path and Message; the decoder that read the file fills in
// File and Line (strict.Decoder.Place).
type Error struct {
	File    string `json:"file,omitempty"` // the file as the user named it
	Line    int    `json:"line,omitempty"` // 1-based; 0 when unknown
	Path    string `json:"path,omitempty"` // e.g. strategies[2].n; empty for the whole document
	Message string `json:"message"`        // what is wrong and what would be right
}

// Error formats e as FILE:LINE: PATH: MESSAGE, leaving out what is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Errors is every problem found in one file, in line order once sorted.
type Errors []*Error

// Error lists the problems, one a line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual problems, for errors.As and errors.Is.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Err returns es as an error, or nil when it is empty.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// Sort orders es by line, keeping the order of problems on one line.
func (es Errors) Sort() {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
}

// List returns the problems err holds: the Errors or *Error it is, or
// those of the errors it joins, and any other error as one problem with no
// path.
func List(err error) Errors {
	switch e := err.(type) {
	case nil:
		return nil
	case Errors:
		return e
	case *Error:
		return Errors{e}
	case interface{ Unwrap() []error }:
		var out Errors
		for _, x := range e.Unwrap() {
			out = append(out, List(x)...)
		}
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		return Errors{e}
	}
	return Errors{{Message: err.Error()}}
}

// Join appends a path: Join("a", "b") is "a.b", Join("", "b") is "b".
func Join(path, key string) string {
	switch {
	case key == "":
		return path
	case path == "":
		return key
	}
	return path + "." + key
}

// Index appends a list index: Index("a", 2) is "a[2]".
func Index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// Parent strips the last key or index: a.b[2].c → a.b[2] → a.b → a → "".
func Parent(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// Related reports whether one path is the other or lies under it.
func Related(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if !strings.HasPrefix(b, a) {
		return false
	}
	if len(a) == len(b) || a == "" {
		return true
	}
	c := b[len(a)]
	return c == '.' || c == '['
}
