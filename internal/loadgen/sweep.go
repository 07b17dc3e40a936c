package loadgen

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/internal/strict"
)

// MaxSweepRows bounds the rows one row's sweeps may expand into: a sweep is
// for a handful of settings, and a typo such as "1..100000" should not start
// a run of a hundred thousand rows.
const MaxSweepRows = 1000

// Swept is one parameter a row's sweep set, and the value it has on this
// row of the expansion; reports carry it as it is.
type Swept = reports.Swept

// Rows are a scenario's strategies. In YAML each row is a mapping (see
// Row); a row whose numeric parameter is a sweep —
//
//	n: {sweep: [5, 10, 20, 40]}
//	n: {sweep: "5..50 step 5"}
//
// — stands for one row per value (per combination, when several parameters
// are swept), each named after its values: "semaphore n=5", or the name
// with {n} replaced when it holds {n}. The expanded rows decode exactly as
// if the file had them, and problems name the row of the file
// (strategies[2].n).
type Rows []Row

// UnmarshalStrict decodes the list of rows, expanding sweeps.
func (rs *Rows) UnmarshalStrict(d *strict.Decoder, n *yaml.Node, path string) {
	if strict.IsNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, path, "want a list of rows, got %s", strict.DescribeNode(n))
		return
	}
	out := make(Rows, 0, len(n.Content))
	for i, rn := range n.Content {
		p := fielderr.Index(path, i)
		if rn.Kind == yaml.AliasNode && rn.Alias != nil {
			rn = rn.Alias
		}
		out = append(out, decodeRow(d, rn, p)...)
	}
	*rs = out
}

// sweep is one swept key of a row: its values, typed as the field is.
type sweep struct {
	key    string
	values []reflect.Value
	shown  []string
	nums   []float64
}

// decodeRow decodes one row of the file at path, and expands it into one
// row per combination of its sweeps' values.
func decodeRow(d *strict.Decoder, n *yaml.Node, path string) []Row {
	var r Row
	r.path = path
	if n.Kind != yaml.MappingNode {
		r.UnmarshalStrict(d, n, path)
		return []Row{r}
	}
	// The row without its sweeps decodes once, so that its other problems
	// are reported once; each sweep's values are decoded and checked here.
	base := *n
	base.Content = nil
	var pending [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if sweepNode(vn) == nil {
			base.Content = append(base.Content, kn, vn)
			continue
		}
		pending = append(pending, [2]*yaml.Node{kn, vn})
	}
	r.UnmarshalStrict(d, &base, path)
	if len(pending) == 0 {
		return []Row{r}
	}
	var sweeps []sweep
	total := 1
	for _, kv := range pending {
		kn, vn := kv[0], kv[1]
		kpath := fielderr.Join(path, kn.Value)
		d.Mark(vn, kpath)
		r.keys[kn.Value] = kn.Line
		t, ok := r.fieldType(kn.Value)
		switch {
		case !ok && unknownKey(r.Kind, kn.Value) == "-":
			continue // an unknown kind, reported: its parameters cannot be judged
		case !ok:
			d.Errorf(kn, kpath, "%s", unknownKey(r.Kind, kn.Value))
			continue
		case !numeric(t):
			d.Errorf(vn, kpath, "sweep: %s is not numeric (it takes %s); only numbers, integers and durations can be swept",
				kn.Value, fielderr.Describe(t))
			continue
		}
		sw, ok := decodeSweep(d, sweepNode(vn), kpath, kn.Value, t)
		if !ok {
			continue
		}
		total *= len(sw.values)
		if total > MaxSweepRows {
			d.Errorf(vn, kpath, "sweep: the row expands into more than %d rows; sweep fewer values", MaxSweepRows)
			return []Row{r}
		}
		sweeps = append(sweeps, sw)
	}
	if len(sweeps) == 0 {
		return []Row{r}
	}
	return expand(r, sweeps)
}

// sweepNode returns the value of n when n is {sweep: VALUE}, else nil.
func sweepNode(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "sweep" {
		return n.Content[1]
	}
	return nil
}

// fieldType returns the type of the row's key: a key every row has, or a
// parameter of its kind (pointers dereferenced).
func (r *Row) fieldType(key string) (reflect.Type, bool) {
	type plain Row
	targets := []reflect.Type{reflect.TypeFor[plain]()}
	if r.Config != nil {
		targets = append(targets, reflect.TypeOf(r.Config).Elem())
	}
	for _, t := range targets {
		if idx, ok := strict.Fields(t)[key]; ok {
			ft := t.FieldByIndex(idx).Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			return ft, true
		}
	}
	return nil, false
}

// numeric reports whether a value of type t can be swept.
func numeric(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

const sweepForms = `a list [5, 10, 20] or a range "LO..HI step S"`

// decodeSweep decodes a sweep's values, a list or a range, as values of t.
func decodeSweep(d *strict.Decoder, n *yaml.Node, path, key string, t reflect.Type) (sweep, bool) {
	sw := sweep{key: key}
	add := func(v reflect.Value) bool {
		s, f := showValue(v)
		for _, prev := range sw.shown {
			if prev == s {
				d.Errorf(n, path, "sweep: %s is listed twice", s)
				return false
			}
		}
		sw.values, sw.shown, sw.nums = append(sw.values, v), append(sw.shown, s), append(sw.nums, f)
		return true
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case n.Kind == yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.Errorf(n, path, "sweep: empty list; want at least one value")
			return sw, false
		}
		if len(n.Content) > MaxSweepRows {
			d.Errorf(n, path, "sweep: more than %d values", MaxSweepRows)
			return sw, false
		}
		ok := true
		for i, en := range n.Content {
			v := reflect.New(t)
			epath := fielderr.Index(fielderr.Join(path, "sweep"), i)
			if strict.IsNull(en) {
				d.Errorf(en, epath, "want %s, got null", fielderr.Describe(t))
				ok = false
				continue
			}
			if d.Decode(en, v.Interface(), epath); d.Failed(epath) {
				ok = false
				continue
			}
			ok = ok && add(v.Elem())
		}
		return sw, ok
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		vals, err := parseRange(n.Value, t)
		if err != "" {
			d.Errorf(n, path, "sweep: %s", err)
			return sw, false
		}
		for _, v := range vals {
			if !add(v) {
				return sw, false
			}
		}
		return sw, true
	}
	d.Errorf(n, path, "sweep: want %s, got %s", sweepForms, strict.DescribeNode(n))
	return sw, false
}

// parseRange parses "LO..HI step S" (step 1 when left out) into the values
// LO, LO+S, … up to HI inclusive, as values of t. Its error is a message,
// or "".
func parseRange(s string, t reflect.Type) ([]reflect.Value, string) {
	spec, stepText, hasStep := strings.Cut(strings.TrimSpace(s), " step ")
	loText, hiText, ok := strings.Cut(spec, "..")
	if !ok {
		return nil, fmt.Sprintf("want %s, got %q", sweepForms, s)
	}
	if !hasStep {
		stepText = "1"
		if t == durationType {
			return nil, fmt.Sprintf("a range of durations needs a step, e.g. %q", strings.TrimSpace(s)+" step 1s")
		}
	}
	num := func(what, text string) (float64, string) {
		text = strings.TrimSpace(text)
		if t == durationType {
			d, err := time.ParseDuration(text)
			if err != nil {
				return 0, fmt.Sprintf("%s: want a duration like 500ms or 1s, got %q", what, text)
			}
			return float64(d), ""
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, fmt.Sprintf("%s: want %s, got %q", what, fielderr.Describe(t), text)
		}
		if isInteger(t) && f != math.Trunc(f) {
			return 0, fmt.Sprintf("%s: want %s, got %q", what, fielderr.Describe(t), text)
		}
		return f, ""
	}
	lo, e1 := num("range start", loText)
	hi, e2 := num("range end", hiText)
	step, e3 := num("step", stepText)
	for _, e := range []string{e1, e2, e3} {
		if e != "" {
			return nil, e
		}
	}
	switch {
	case step <= 0:
		return nil, fmt.Sprintf("step must be positive, got %s", strings.TrimSpace(stepText))
	case lo > hi:
		return nil, fmt.Sprintf("empty range %s: its start is above its end", strings.TrimSpace(spec))
	}
	// Counting steps, not adding them, keeps 0.1 steps from drifting.
	count := math.Floor((hi-lo)/step+1e-9) + 1
	if count > MaxSweepRows {
		return nil, fmt.Sprintf("%s makes %.0f values, more than %d", strings.TrimSpace(s), count, MaxSweepRows)
	}
	vals := make([]reflect.Value, 0, int(count))
	for k := range int(count) {
		f := lo + float64(k)*step
		v := reflect.New(t).Elem()
		switch {
		case isInteger(t):
			i := int64(math.Round(f))
			if v.CanInt() && v.OverflowInt(i) || v.CanUint() && (i < 0 || v.OverflowUint(uint64(i))) {
				return nil, fmt.Sprintf("%d is out of range for %s", i, fielderr.Describe(t))
			}
			if v.CanInt() {
				v.SetInt(i)
			} else {
				v.SetUint(uint64(i))
			}
		default:
			// 12 significant digits: 0.1 steps give 0.3, not 0.30000000000000004.
			f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', 12, 64), 64)
			v.SetFloat(f)
		}
		vals = append(vals, v)
	}
	return vals, ""
}

var durationType = reflect.TypeFor[time.Duration]()

func isInteger(t reflect.Type) bool {
	return t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64
}

// showValue renders a swept value for a row's name, and as a number.
func showValue(v reflect.Value) (string, float64) {
	switch {
	case v.Type() == durationType:
		d := time.Duration(v.Int())
		return d.String(), d.Seconds()
	case v.CanInt():
		return strconv.FormatInt(v.Int(), 10), float64(v.Int())
	case v.CanUint():
		return strconv.FormatUint(v.Uint(), 10), float64(v.Uint())
	}
	return strconv.FormatFloat(v.Float(), 'g', -1, 64), v.Float()
}

// expand makes one row per combination of the sweeps' values, the first
// sweep varying slowest.
func expand(base Row, sweeps []sweep) []Row {
	combos := [][]int{nil}
	for _, sw := range sweeps {
		var next [][]int
		for _, c := range combos {
			for i := range sw.values {
				next = append(next, append(append([]int(nil), c...), i))
			}
		}
		combos = next
	}
	rows := make([]Row, 0, len(combos))
	for _, c := range combos {
		r := base
		r.keys = make(map[string]int, len(base.keys))
		for k, l := range base.keys {
			r.keys[k] = l
		}
		if base.Config != nil {
			cfg := reflect.New(reflect.TypeOf(base.Config).Elem())
			cfg.Elem().Set(reflect.ValueOf(base.Config).Elem())
			r.Config = cfg.Interface()
		}
		r.Sweep = make([]Swept, len(sweeps))
		for j, sw := range sweeps {
			i := c[j]
			r.set(sw.key, sw.values[i])
			r.Sweep[j] = Swept{Key: sw.key, Value: sw.shown[i], Number: sw.nums[i]}
		}
		r.Name = sweepName(base.Name, r.Sweep)
		rows = append(rows, r)
	}
	return rows
}

// set sets the row's key (a common key or its kind's parameter) to v.
func (r *Row) set(key string, v reflect.Value) {
	type plain Row
	targets := []reflect.Value{reflect.ValueOf((*plain)(r)).Elem()}
	if r.Config != nil {
		targets = append(targets, reflect.ValueOf(r.Config).Elem())
	}
	for _, tv := range targets {
		idx, ok := strict.Fields(tv.Type())[key]
		if !ok {
			continue
		}
		f := tv.FieldByIndex(idx)
		if f.Kind() == reflect.Pointer {
			p := reflect.New(f.Type().Elem())
			p.Elem().Set(v)
			v = p
		}
		f.Set(v)
		return
	}
}

// sweepName names a row of a sweep: {key} in name is replaced by the
// key's value; the values of keys name does not mention are appended as
// key=value. An empty name stays empty (validate says it is required).
func sweepName(name string, params []Swept) string {
	if name == "" {
		return ""
	}
	out := name
	for _, p := range params {
		ph := "{" + p.Key + "}"
		if strings.Contains(name, ph) {
			out = strings.ReplaceAll(out, ph, p.Value)
		} else {
			out += " " + p.Key + "=" + p.Value
		}
	}
	return out
}
