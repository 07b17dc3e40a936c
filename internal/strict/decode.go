package strict

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/fielderr"
)

// Unmarshaler is implemented by types whose YAML has more than one shape (a
// count or a mapping; max_tokens or {fixed: N}) or whose keys depend on a
// value (a scenario row's kind). UnmarshalStrict decodes n into the
// receiver and reports every problem through d, with paths under path. It
// is called for explicit nulls too.
type Unmarshaler interface {
	UnmarshalStrict(d *Decoder, n *yaml.Node, path string)
}

// A Decoder fills Go values from a yaml.v3 node tree strictly and keeps
// going after a problem, so that a file's problems are reported together:
// an unknown key (with the nearest known one), a duplicate key, a value of
// the wrong type, and then, from the caller's validation, every invalid
// value, at most one message per path. It records the line of every path
// it decodes, for validation messages.
//
// Struct fields are matched by their yaml tags as yaml.v3 does: the tag's
// name, else the lowercased field name; "-" skips a field and ",inline"
// merges an embedded struct's keys. An explicit null leaves a value as it
// was. A Decoder is not safe for concurrent use.
type Decoder struct {
	file    string
	errs    Errors
	more    int             // problems beyond MaxProblems, only counted
	reached map[string]bool // paths with a problem
	broken  []string        // paths that failed to decode
	lines   map[string]int  // path → line of its value
	steps   int
}

// MaxProblems is how many problems a Decoder lists; the rest are only
// counted, so that a file of a hundred thousand mistakes costs neither
// memory nor a screen of output.
const MaxProblems = 100

// MaxSteps bounds the nodes one document may decode, its aliases expanded:
// a configuration has a few hundred; a "billion laughs" document, whose
// aliases nest lists of aliases, would otherwise expand without end.
const MaxSteps = 1 << 18

// NewDecoder returns a Decoder whose problems name file.
func NewDecoder(file string) *Decoder {
	return &Decoder{file: file, reached: make(map[string]bool), lines: make(map[string]int)}
}

// File returns the file the decoder's problems name.
func (d *Decoder) File() string { return d.file }

// Errors returns every problem so far, in line order: the first
// MaxProblems found, and then one saying how many more there were.
func (d *Decoder) Errors() Errors {
	d.errs.Sort()
	if d.more > 0 {
		return append(d.errs[:len(d.errs):len(d.errs)], &Error{File: d.file,
			Message: fmt.Sprintf("… and %d more problems", d.more)})
	}
	return d.errs
}

// full reports whether MaxProblems are listed: further ones are counted.
func (d *Decoder) full() bool { return len(d.errs) >= MaxProblems }

// add records a problem, or only counts it beyond MaxProblems.
func (d *Decoder) add(e *Error) {
	if d.full() {
		d.more++
		return
	}
	d.errs = append(d.errs, e)
}

// Err returns Errors as an error, or nil when there is none.
func (d *Decoder) Err() error { return d.Errors().Err() }

// Line returns the line of the value at path, or of the nearest enclosing
// value the file has; 0 when there is none.
func (d *Decoder) Line(path string) int {
	for {
		if l, ok := d.lines[path]; ok {
			return l
		}
		if path == "" {
			return 0
		}
		path = fielderr.Parent(path)
	}
}

// Set reports whether the file has a value (null included) at path.
func (d *Decoder) Set(path string) bool {
	_, ok := d.lines[path]
	return ok
}

// Lines returns the line of every path the file has a value at. The map is
// the decoder's own: read it, do not change it.
func (d *Decoder) Lines() map[string]int { return d.lines }

// Failed reports whether a value at, above or below path failed to decode.
func (d *Decoder) Failed(path string) bool {
	for _, b := range d.broken {
		if fielderr.Related(b, path) {
			return true
		}
	}
	return false
}

// Mark records that the file has a value at path, on n's line; decoding
// does this for every value it visits.
func (d *Decoder) Mark(n *yaml.Node, path string) {
	if _, ok := d.lines[path]; !ok && n != nil {
		d.lines[path] = n.Line
	}
}

// Errorf records a decoding problem at n (its line) and path. Validation
// problems at path or around it are not reported after it: they would
// judge a value the file did not give.
func (d *Decoder) Errorf(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.reached[path] = true
	if len(d.broken) < MaxProblems && path != "" {
		// The whole document is never "broken": one bad key must not
		// silence the validation of every other.
		d.broken = append(d.broken, path)
	}
	if d.full() {
		d.more++
		return
	}
	d.add(&Error{File: d.file, Line: line, Path: path, Message: fmt.Sprintf(format, args...)})
}

// Invalidf records a validation problem at path, on the line of the value
// there. It is dropped when path already has a problem, or when a value at,
// above or below path failed to decode, so that each path gets at most one
// message and a wrong type does not also read as a missing value.
func (d *Decoder) Invalidf(path, format string, args ...any) {
	if d.reached[path] || d.Failed(path) {
		return
	}
	d.reached[path] = true
	d.add(&Error{File: d.file, Line: d.Line(path), Path: path, Message: fmt.Sprintf(format, args...)})
}

// Place records the problems of a validation that knows no file (such as
// mock.Config.Validate, whose paths are relative to the config) as
// validation problems under prefix.
func (d *Decoder) Place(prefix string, err error) {
	for _, e := range fielderr.List(err) {
		d.Invalidf(fielderr.Join(prefix, e.Path), "%s", e.Message)
	}
}

// Decode decodes n into the value v points to, reporting problems under path.
func (d *Decoder) Decode(n *yaml.Node, v any, path string) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic(fmt.Sprintf("strict: Decode(%T): want a non-nil pointer", v))
	}
	d.decode(n, rv.Elem(), path)
}

var (
	durationType    = reflect.TypeFor[time.Duration]()
	nodeType        = reflect.TypeFor[yaml.Node]()
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (d *Decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n == nil {
		return
	}
	for n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return
		}
		n = n.Content[0]
	}
	if d.steps++; d.steps > MaxSteps {
		if d.steps == MaxSteps+1 {
			d.Errorf(n, path, "document too large once its aliases are expanded (more than %d values)", MaxSteps)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.Errorf(n, path, "undefined alias")
			return
		}
		n = n.Alias
	}
	if path != "" {
		d.Mark(n, path)
	}
	t := v.Type()
	if t == nodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		v.Addr().Interface().(Unmarshaler).UnmarshalStrict(d, n, path)
		return
	}
	if isNull(n) {
		return
	}
	if t.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(n, v.Elem(), path)
		return
	}
	if v.CanAddr() && (v.Addr().Type().Implements(yamlUnmarshaler) || v.Addr().Type().Implements(textUnmarshaler)) {
		d.decodeForeign(n, v, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Interface:
		d.decodeForeign(n, v, path)
	default:
		d.decodeScalar(n, v, path)
	}
}

// decodeScalar decodes a string, bool, number or duration.
func (d *Decoder) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if n.Kind != yaml.ScalarNode {
		d.Errorf(n, path, "want %s, got %s", fielderr.Describe(t), describeNode(n))
		return
	}
	switch {
	case t == durationType:
		dur, err := time.ParseDuration(n.Value)
		if err != nil {
			d.Errorf(n, path, "want %s, got %s", fielderr.Describe(t), quote(n))
			return
		}
		v.SetInt(int64(dur))
		return
	case t.Kind() == reflect.String:
		v.SetString(n.Value)
		return
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		d.decodeInteger(n, v, path)
		return
	}
	tmp := reflect.New(t)
	if err := n.Decode(tmp.Interface()); err != nil {
		d.Errorf(n, path, "want %s, got %s", fielderr.Describe(t), quote(n))
		return
	}
	v.Set(tmp.Elem())
}

// decodeInteger decodes an integer, refusing a fraction (yaml.v3 would
// truncate 1.5 to 1) and a value out of the type's range.
func (d *Decoder) decodeInteger(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	signed := t.Kind() <= reflect.Int64
	var i int64
	var u uint64
	var ok bool
	switch n.ShortTag() {
	case "!!int":
		if signed {
			ok = n.Decode(&i) == nil && !v.OverflowInt(i)
		} else {
			ok = n.Decode(&u) == nil && !v.OverflowUint(u)
		}
		if !ok {
			d.Errorf(n, path, "%s is out of range (want %s)", n.Value, rangeOf(t))
			return
		}
	case "!!float":
		var f float64
		if n.Decode(&f) != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
			d.Errorf(n, path, "want %s, got %s", fielderr.Describe(t), quote(n))
			return
		}
		if signed {
			ok = f >= math.MinInt64 && f < math.MaxInt64 && !v.OverflowInt(int64(f))
			i = int64(f)
		} else {
			ok = f >= 0 && f < math.MaxUint64 && !v.OverflowUint(uint64(f))
			u = uint64(f)
		}
		if !ok {
			d.Errorf(n, path, "%s is out of range (want %s)", n.Value, rangeOf(t))
			return
		}
	default:
		d.Errorf(n, path, "want %s, got %s", fielderr.Describe(t), quote(n))
		return
	}
	if signed {
		v.SetInt(i)
	} else {
		v.SetUint(u)
	}
}

// decodeForeign lets yaml.v3 decode a type with its own UnmarshalYAML or
// UnmarshalText, or an interface value.
func (d *Decoder) decodeForeign(n *yaml.Node, v reflect.Value, path string) {
	tmp := reflect.New(v.Type())
	tmp.Elem().Set(v)
	if err := n.Decode(tmp.Interface()); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
			msg = te.Errors[0]
			if rest, ok := strings.CutPrefix(msg, fmt.Sprintf("line %d: ", n.Line)); ok {
				msg = rest
			}
		}
		d.Errorf(n, path, "%s", msg)
		return
	}
	v.Set(tmp.Elem())
}

func (d *Decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "want a mapping, got %s", describeNode(n))
		return
	}
	d.DecodeMapping(n, path, nil, v.Addr().Interface())
}

// DecodeMapping decodes the keys of mapping n into the first of targets
// (pointers to structs) with a field of that name, so that one YAML
// mapping can fill several structs: a row's common keys and its kind's
// configuration. A key no target has is reported with unknown's message
// for it; a nil unknown, or one returning "", reports an unknown key with
// the nearest known one; unknown returning "-" skips the key silently.
func (d *Decoder) DecodeMapping(n *yaml.Node, path string, unknown func(key string) string, targets ...any) {
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "want a mapping, got %s", describeNode(n))
		return
	}
	vals := make([]reflect.Value, len(targets))
	fields := make([]map[string][]int, len(targets))
	for i, t := range targets {
		vals[i] = reflect.ValueOf(t).Elem()
		fields[i] = Fields(vals[i].Type())
	}
	seen := make(map[string]bool)
	var known []string // for messages, once there is an unknown key
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			d.Errorf(kn, path, "want a name as a key, got %s", describeNode(kn))
			continue
		}
		key := kn.Value
		kpath := fielderr.Join(path, key)
		if seen[key] {
			d.Errorf(kn, kpath, "duplicate key")
			continue
		}
		seen[key] = true
		found := false
		for j := range targets {
			if idx, ok := fields[j][key]; ok {
				d.decode(vn, vals[j].FieldByIndex(idx), kpath)
				found = true
				break
			}
		}
		if found {
			continue
		}
		msg := ""
		if unknown != nil {
			msg = unknown(key)
		}
		switch {
		case msg == "-":
			d.Mark(vn, kpath)
			continue
		case msg == "" && d.full():
			// counted only: spare the message
		case msg == "":
			if known == nil {
				for _, f := range fields {
					known = append(known, Keys(f)...)
				}
			}
			msg = fielderr.UnknownKey(key, known)
		}
		d.Errorf(kn, kpath, "%s", msg)
	}
}

func (d *Decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, path, "want a list, got %s", describeNode(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, en := range n.Content {
		d.decode(en, s.Index(i), fielderr.Index(path, i))
	}
	v.Set(s)
}

func (d *Decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "want a mapping, got %s", describeNode(n))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	kt, et := v.Type().Key(), v.Type().Elem()
	seen := make(map[string]bool)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		kpath := fielderr.Join(path, kn.Value)
		if seen[kn.Value] {
			d.Errorf(kn, kpath, "duplicate key")
			continue
		}
		seen[kn.Value] = true
		k := reflect.New(kt).Elem()
		before := len(d.broken) + d.more
		d.decode(kn, k, kpath)
		if len(d.broken)+d.more > before {
			continue
		}
		e := reflect.New(et).Elem()
		if old := v.MapIndex(k); old.IsValid() {
			e.Set(old)
		}
		d.decode(vn, e, kpath)
		v.SetMapIndex(k, e)
	}
}

// Fields maps each YAML key of struct type t to its field index, as
// yaml.v3 does (see Decoder).
func Fields(t reflect.Type) map[string][]int {
	out := make(map[string][]int)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
			for k, idx := range Fields(f.Type) {
				out[k] = append([]int{i}, idx...)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = []int{i}
	}
	return out
}

// Keys returns the keys of a Fields map in the struct's field order.
func Keys(fields map[string][]int) []string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := fields[keys[i]], fields[keys[j]]
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return len(a) < len(b)
	})
	return keys
}

// rangeOf describes the integers t holds, or "" for other types.
func rangeOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("an integer from %d to %d", int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	}
	return ""
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// IsNull reports whether n is an explicit null (~, null or nothing).
func IsNull(n *yaml.Node) bool { return isNull(n) }

// quote renders a scalar as the user wrote it, quoting strings.
func quote(n *yaml.Node) string {
	if n.ShortTag() == "!!str" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return quote(n)
	}
	return "an unexpected node"
}

// DescribeNode names what n is, for "got …" messages: a mapping, a list,
// null, or the scalar as written ("abc" quoted, 5 not).
func DescribeNode(n *yaml.Node) string { return describeNode(n) }
