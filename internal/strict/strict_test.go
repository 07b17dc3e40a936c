package strict

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/fielderr"
)

type limits struct {
	RPM        int           `yaml:"rpm"`
	Rate       float64       `yaml:"rate"`
	RetryAfter time.Duration `yaml:"retry_after"`
	On         bool          `yaml:"on"`
	Small      int8          `yaml:"small"`
}

type config struct {
	Name   string         `yaml:"name"`
	Limits limits         `yaml:"limits"`
	Keys   []string       `yaml:"keys"`
	Per    map[string]int `yaml:"per"`
	Ptr    *int           `yaml:"ptr"`
	Skip   string         `yaml:"-"`
	Inline struct {
		Extra int `yaml:"extra"`
	} `yaml:",inline"`
}

func TestUnmarshal(t *testing.T) {
	const src = `name: x
limits: {rpm: 60, rate: 0.5, retry_after: 1500ms, on: true, small: -128}
keys: [a, b]
per: {anthropic: 10}
ptr: 7
extra: 3
`
	var c config
	if err := Unmarshal("c.yaml", []byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if c.Name != "x" || c.Limits != (limits{60, 0.5, 1500 * time.Millisecond, true, -128}) || len(c.Keys) != 2 ||
		c.Per["anthropic"] != 10 || c.Ptr == nil || *c.Ptr != 7 || c.Inline.Extra != 3 {
		t.Errorf("decoded %+v", c)
	}
}

// TestMessages is the vocabulary: each mistake, the one message it gets.
func TestMessages(t *testing.T) {
	tests := []struct{ src, want string }{
		{"limits: {rpm: abc}", `c.yaml:1: limits.rpm: want an integer, got "abc"`},
		{"limits: {rpm: 1.5}", `c.yaml:1: limits.rpm: want an integer, got 1.5`},
		{"limits: {rpm: 99999999999999999999}", `c.yaml:1: limits.rpm: 99999999999999999999 is out of range (want an integer from -9223372036854775808 to 9223372036854775807)`},
		{"limits: {small: 300}", `c.yaml:1: limits.small: 300 is out of range (want an integer from -128 to 127)`},
		{"limits: {rate: fast}", `c.yaml:1: limits.rate: want a number, got "fast"`},
		{"limits: {retry_after: 5}", `c.yaml:1: limits.retry_after: want a duration like 500ms or 1s, got 5`},
		{"limits: {retry_after: soon}", `c.yaml:1: limits.retry_after: want a duration like 500ms or 1s, got "soon"`},
		{"limits: {on: maybe}", `c.yaml:1: limits.on: want true or false, got "maybe"`},
		{"limits: [1]", `c.yaml:1: limits: want a mapping, got a list`},
		{"keys: a", `c.yaml:1: keys: want a list, got "a"`},
		{"name: {a: 1}", `c.yaml:1: name: want a string, got a mapping`},
		{"limits:\n  rmp: 5", `c.yaml:2: limits.rmp: unknown key "rmp" (did you mean rpm?)`},
		{"nmae: x", `c.yaml:1: nmae: unknown key "nmae" (did you mean name?)`},
		{"bogus: 1", `c.yaml:1: bogus: unknown key "bogus" (want one of extra, keys, limits, name, per, ptr)`},
		{"name: a\nname: b", `c.yaml:2: name: duplicate key`},
		{"per: {a: 1, a: 2}", `c.yaml:1: per.a: duplicate key`},
		{"per: {a: x}", `c.yaml:1: per.a: want an integer, got "x"`},
		{"? [a]\n: 1", `c.yaml:1: want a name as a key, got a list`},
		{"name: *nope", `c.yaml: invalid YAML: unknown anchor 'nope' referenced`},
		{"limits: {rpm: 6e4}", ``},
		{"limits: {small: -1e3}", `c.yaml:1: limits.small: -1e3 is out of range (want an integer from -128 to 127)`},
		{"a: 1\n---\nb: 2", `c.yaml:3: more than one YAML document`},
		{"a: [", `c.yaml:1: invalid YAML:`},
	}
	for _, tt := range tests {
		var c config
		err := Unmarshal("c.yaml", []byte(tt.src), &c)
		if tt.want == "" {
			if err != nil {
				t.Errorf("Unmarshal(%q) = %v, want no error", tt.src, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Unmarshal(%q) = %v\nwant %s", tt.src, err, tt.want)
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.File != "c.yaml") {
			t.Errorf("Unmarshal(%q): %v is not an *Error naming the file", tt.src, err)
		}
	}
}

func TestEveryProblemAtOnce(t *testing.T) {
	src := "name: x\nnmae: y\nlimits:\n  rpm: abc\n  rate: fast\nkeys: [a, {b: 1}]\n"
	var c config
	err := Unmarshal("c.yaml", []byte(src), &c)
	es := fielderr.List(err)
	want := []string{"c.yaml:2: nmae:", "c.yaml:4: limits.rpm:", "c.yaml:5: limits.rate:", "c.yaml:6: keys[1]:"}
	if len(es) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(es), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(es[i].Error(), w) {
			t.Errorf("problem %d = %q, want it to start %q", i, es[i], w)
		}
	}
	if c.Name != "x" || c.Keys[0] != "a" {
		t.Errorf("the good values were not kept: %+v", c)
	}
}

// TestValidation: a path gets one message, and a value that did not decode
// is not judged again.
func TestValidation(t *testing.T) {
	root, err := Parse("c.yaml", []byte("name: x\nlimits:\n  rpm: abc\n  rate: 2\nkeys: [a]\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder("c.yaml")
	var c config
	d.Decode(root, &c, "")
	d.Invalidf("limits.rpm", "must be positive")                 // decoding failed there
	d.Invalidf("limits", "needs rpm")                            // above a failed value
	d.Invalidf("limits.rate", "must be a rate in [0, 1], got 2") // kept
	d.Invalidf("limits.rate", "must not be negative")            // second message for the path
	d.Place("", Errors{{Path: "keys[0]", Message: "must not be a"}})
	d.Invalidf("per", "required")                         // not in the file: no line
	d.Errorf(root, "", "a problem of the whole document") // does not silence the rest
	d.Invalidf("name", "must be y")
	got := d.Errors().Error()
	want := "c.yaml: per: required\n" +
		"c.yaml:1: a problem of the whole document\n" +
		"c.yaml:1: name: must be y\n" +
		"c.yaml:3: limits.rpm: want an integer, got \"abc\"\n" +
		"c.yaml:4: limits.rate: must be a rate in [0, 1], got 2\n" +
		"c.yaml:5: keys[0]: must not be a"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
	if !d.Set("limits.rate") || d.Set("per") || d.Line("keys[0]") != 5 {
		t.Errorf("Set/Line wrong: %v %v %d", d.Set("limits.rate"), d.Set("per"), d.Line("keys[0]"))
	}
}

type shape struct{ kind string }

func (s *shape) UnmarshalStrict(d *Decoder, n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.ScalarNode:
		s.kind = n.Value
	default:
		d.Errorf(n, path, "want a name, got %s", DescribeNode(n))
	}
}

func TestUnmarshaler(t *testing.T) {
	var v struct {
		S shape `yaml:"s"`
	}
	if err := Unmarshal("c.yaml", []byte("s: round"), &v); err != nil || v.S.kind != "round" {
		t.Errorf("got %+v, %v", v, err)
	}
	err := Unmarshal("c.yaml", []byte("s: [1]"), &v)
	if err == nil || err.Error() != "c.yaml:1: s: want a name, got a list" {
		t.Errorf("err = %v", err)
	}
}

func TestDecodeMapping(t *testing.T) {
	type common struct {
		Name string `yaml:"name"`
	}
	type params struct {
		N int `yaml:"n"`
	}
	root, _ := Parse("c.yaml", []byte("name: a\nn: 3\nmax: 4\nseed: 1\n"))
	d := NewDecoder("c.yaml")
	var c common
	var p params
	d.DecodeMapping(root, "row", func(key string) string {
		if key == "seed" {
			return "-"
		}
		return "not a parameter of this kind"
	}, &c, &p)
	if c.Name != "a" || p.N != 3 {
		t.Errorf("decoded %+v %+v", c, p)
	}
	if got := d.Err(); got == nil || got.Error() != "c.yaml:3: row.max: not a parameter of this kind" {
		t.Errorf("err = %v", got)
	}
	if !d.Set("row.seed") {
		t.Error("a skipped key is not marked as set")
	}
}

func TestAliasBomb(t *testing.T) {
	src := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
		"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n" +
		"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n" +
		"g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
	var v struct {
		A []string
		B [][]string
		C [][][]string
		D [][][][]string
		E [][][][][]string
		F [][][][][][]string
		G [][][][][][][]string
	}
	err := Unmarshal("c.yaml", []byte(src), &v)
	if err == nil || len(fielderr.List(err)) != 1 || !strings.Contains(err.Error(), "too large once its aliases are expanded") {
		t.Errorf("err = %v", err)
	}
}

func TestFileSizeCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("a: 1\n"+strings.Repeat("# padding\n", MaxFileBytes/10+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(big)
	if err == nil || err.Error() != big+": file larger than 4 MiB, the limit for a configuration file; is it the right file?" {
		t.Errorf("ReadFile(big) = %v", err)
	}
	if _, err := Parse("mem.yaml", make([]byte, MaxFileBytes+1)); err == nil || !strings.HasPrefix(err.Error(), "mem.yaml: file larger than 4 MiB") {
		t.Errorf("Parse(big) = %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.yaml")); err == nil || err.Error() != filepath.Join(dir, "missing.yaml")+": no such file or directory" {
		t.Errorf("ReadFile(missing) = %v", err)
	}
}

// TestManyProblems: a file of many mistakes lists the first MaxProblems and
// counts the rest.
func TestManyProblems(t *testing.T) {
	var b strings.Builder
	for i := range 250 {
		fmt.Fprintf(&b, "bogus%d: 1\n", i)
	}
	var c config
	es := fielderr.List(Unmarshal("c.yaml", []byte(b.String()), &c))
	if len(es) != MaxProblems+1 || es[0].Line != 1 || es[MaxProblems-1].Line != MaxProblems ||
		es[MaxProblems].Error() != "c.yaml: … and 150 more problems" {
		t.Errorf("got %d problems, first %v, last %v", len(es), es[0], es[len(es)-1])
	}
}

// FuzzUnmarshal: decoding never panics, and every problem names the file.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		"name: x\nlimits: {rpm: 60, rate: 0.5, retry_after: 1s, on: true}\nkeys: [a]\nper: {a: 1}\nptr: 3\nextra: 1",
		"limits: {rpm: abc}", "a: &a [*a]", "? [a]\n: 1", "name: !!binary aGk=", "per: {1: 2, ~: 3}",
		"limits: {small: 1e3}", "limits: {retry_after: -1h}", "<<: {name: x}", "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c config
		err := Unmarshal("fuzz.yaml", data, &c)
		for _, e := range fielderr.List(err) {
			if e.File != "fuzz.yaml" || e.Message == "" {
				t.Errorf("problem %+v lacks its file or message", e)
			}
		}
	})
}
