package loadgen

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Error is one problem in a scenario file. Its message names the file, the
// line and the key, so that a user can go straight to what is wrong:
//
//	scenarios/x.yaml:12: strategies[2].max_retries: cannot unmarshal "ten" into int
type Error struct {
	File string // the file as the user named it
	Line int    // 1-based; 0 when unknown
	Key  string // the key's path, e.g. "strategies[2].max_retries"; empty for the whole document
	Msg  string
}

// Error formats e as "FILE:LINE: KEY: MSG", leaving out what is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one scenario file, in the order of the
// file's lines.
type Errors []*Error

// Error joins the problems, one a line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual errors, for errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// nodeUnmarshaler is implemented by schema types whose YAML has more than one
// shape (a count or a mapping, a number or a range). They decode themselves
// from the node and report problems through d.
type nodeUnmarshaler interface {
	unmarshalNode(d *decoder, n *yaml.Node, path string)
}

// decoder decodes a yaml.Node tree into Go values strictly: an unknown key, a
// duplicate key or a value of the wrong type is an error naming its line and
// key path. Unlike yaml.v3's KnownFields, it keeps going after an error, so a
// file's problems are reported together, and it knows each value's path.
type decoder struct {
	file  string
	errs  Errors
	lines map[string]int // key path → line of its value
	steps int            // nodes decoded, bounded against alias bombs
}

// maxDecodeSteps bounds the nodes one document may decode into, aliases
// expanded: a scenario has a few hundred; a "billion laughs" document,
// whose aliases nest lists of aliases, would otherwise expand forever.
const maxDecodeSteps = 1 << 20

func newDecoder(file string) *decoder {
	return &decoder{file: file, lines: make(map[string]int)}
}

// errorf records a problem at n's line.
func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Key: path, Msg: fmt.Sprintf(format, args...)})
}

var (
	durationType      = reflect.TypeFor[time.Duration]()
	yamlNodeType      = reflect.TypeFor[yaml.Node]()
	unmarshalerType   = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
	nodeUnmarshalType = reflect.TypeFor[nodeUnmarshaler]()
)

// decode decodes n into v, which must be settable.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n == nil {
		return
	}
	for n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return
		}
		n = n.Content[0]
	}
	if d.steps++; d.steps > maxDecodeSteps {
		if d.steps == maxDecodeSteps+1 {
			d.errorf(n, path, "document too large once its aliases are expanded")
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.errorf(n, path, "undefined alias")
			return
		}
		n = n.Alias
	}
	if path != "" {
		if _, seen := d.lines[path]; !seen {
			d.lines[path] = n.Line
		}
	}
	if v.Type() == yamlNodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(nodeUnmarshalType) {
		v.Addr().Interface().(nodeUnmarshaler).unmarshalNode(d, n, path)
		return
	}
	if isNull(n) {
		// An explicit null leaves the default in place, as yaml.v3 does.
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
		return
	}
	if v.CanAddr() && (v.Addr().Type().Implements(unmarshalerType) || v.Addr().Type().Implements(textUnmarshalType)) {
		d.decodeWithYAML(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Interface:
		d.decodeWithYAML(n, v, path)
	default:
		if n.Kind != yaml.ScalarNode {
			d.errorf(n, path, "want %s, got %s", describeType(v.Type()), describeNode(n))
			return
		}
		d.decodeWithYAML(n, v, path)
	}
}

// decodeWithYAML lets yaml.v3 decode a leaf value (a scalar, or a type with
// its own UnmarshalYAML) and rewrites its error to name the file and key.
func (d *decoder) decodeWithYAML(n *yaml.Node, v reflect.Value, path string) {
	tmp := reflect.New(v.Type())
	tmp.Elem().Set(v)
	if err := n.Decode(tmp.Interface()); err != nil {
		var te *yaml.TypeError
		custom := v.CanAddr() && v.Addr().Type().Implements(unmarshalerType)
		if custom && errors.As(err, &te) && len(te.Errors) > 0 {
			// The type's own message is better than ours; drop its "line N: ".
			msg := te.Errors[0]
			if _, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "line ") {
				msg = rest
			}
			d.errorf(n, path, "%s", msg)
		} else if errors.As(err, &te) && n.Kind == yaml.ScalarNode {
			d.errorf(n, path, "cannot unmarshal %s into %s", quoteScalar(n), describeType(v.Type()))
		} else if errors.As(err, &te) {
			d.errorf(n, path, "want %s, got %s", describeType(v.Type()), describeNode(n))
		} else {
			d.errorf(n, path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return
	}
	v.Set(tmp.Elem())
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "want a mapping, got %s", describeNode(n))
		return
	}
	fields := structFields(v.Type())
	seen := make(map[string]bool)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		key := kn.Value
		kpath := joinPath(path, key)
		if kn.Kind != yaml.ScalarNode {
			d.errorf(kn, path, "keys must be scalars")
			continue
		}
		if seen[key] {
			d.errorf(kn, kpath, "duplicate key")
			continue
		}
		seen[key] = true
		idx, ok := fields[key]
		if !ok {
			d.errorf(kn, kpath, "unknown key (want one of %s)", strings.Join(fieldNames(fields), ", "))
			continue
		}
		d.decode(vn, v.FieldByIndex(idx), kpath)
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "want a list, got %s", describeNode(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, en := range n.Content {
		d.decode(en, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(s)
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "want a mapping, got %s", describeNode(n))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	kt, et := v.Type().Key(), v.Type().Elem()
	seen := make(map[string]bool)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		kpath := joinPath(path, kn.Value)
		if seen[kn.Value] {
			d.errorf(kn, kpath, "duplicate key")
			continue
		}
		seen[kn.Value] = true
		k := reflect.New(kt).Elem()
		d.decode(kn, k, kpath)
		e := reflect.New(et).Elem()
		if existing := v.MapIndex(k); existing.IsValid() {
			e.Set(existing)
		}
		d.decode(vn, e, kpath)
		v.SetMapIndex(k, e)
	}
}

// structFields maps each YAML key of t to its field index, following yaml.v3's
// rules: the tag's name, else the lowercased field name; "-" skips a field and
// ",inline" merges an embedded struct's keys.
func structFields(t reflect.Type) map[string][]int {
	out := make(map[string][]int)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
			for k, idx := range structFields(f.Type) {
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

func fieldNames(fields map[string][]int) []string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func joinPath(path, key string) string {
	if key == "" {
		return path
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// quoteScalar renders a scalar as the user wrote it, quoting strings.
func quoteScalar(n *yaml.Node) string {
	if n.Tag == "!!str" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
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
		return "scalar " + quoteScalar(n)
	}
	return "an unexpected node"
}

func describeType(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration (e.g. 500ms, 1s)"
	case t.Kind() == reflect.Pointer:
		return describeType(t.Elem())
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.Map, t.Kind() == reflect.Struct:
		return "a mapping"
	}
	return t.String()
}

// reflectValue returns the settable value p points to.
func reflectValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }
