package schemagen

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// independent compiles raw with the library directly, formats asserted, so
// the tests do not trust the package's own validation path.
func independent(t testing.TB, raw string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		t.Fatalf("schema JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("test.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("test.json")
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return s
}

// roundTrip encodes v and decodes it as a client would.
func roundTrip(t testing.TB, v any) (any, []byte) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return out, b
}

var validSchemas = map[string]string{
	"string":   `{"type":"string"}`,
	"integer":  `{"type":"integer","minimum":5,"maximum":7}`,
	"number":   `{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}`,
	"multiple": `{"type":"integer","multipleOf":7,"minimum":100}`,
	"fracmul":  `{"type":"number","multipleOf":0.25,"maximum":-3}`,
	"boolean":  `{"type":"boolean"}`,
	"null":     `{"type":"null"}`,
	"nullable": `{"type":["string","null"],"maxLength":3}`,
	"enum":     `{"enum":["red","green",3,null]}`,
	"const":    `{"const":{"a":[1,2]}}`,
	"lengths":  `{"type":"string","minLength":40,"maxLength":41}`,
	"formats": `{"type":"object","required":["a","b","c","d","e","f","g","h","i"],"properties":{
		"a":{"type":"string","format":"date-time"},"b":{"type":"string","format":"date"},
		"c":{"type":"string","format":"email"},"d":{"type":"string","format":"uri"},
		"e":{"type":"string","format":"uuid"},"f":{"type":"string","format":"ipv4"},
		"g":{"type":"string","format":"ipv6"},"h":{"type":"string","format":"hostname"},
		"i":{"type":"string","format":"time"}}}`,
	"strict": `{"type":"object","additionalProperties":false,"required":["name","age","tags","address"],
		"properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"minItems":2,"maxItems":3,"uniqueItems":true},
		"address":{"type":"object","additionalProperties":false,"required":["city"],"properties":{"city":{"type":"string"},"zip":{"type":"string"}}}}}`,
	"refs": `{"$defs":{"point":{"type":"object","required":["x","y"],"properties":{"x":{"type":"number"},"y":{"type":"number"}}}},
		"type":"object","required":["from","to"],"properties":{"from":{"$ref":"#/$defs/point"},"to":{"$ref":"#/$defs/point"}}}`,
	"anyOf":       `{"anyOf":[{"type":"string","maxLength":0,"minLength":1},{"type":"integer","minimum":3,"maximum":3}]}`,
	"oneOf":       `{"oneOf":[{"type":"integer"},{"type":"string"}]}`,
	"allOfRef":    `{"$defs":{"a":{"type":"string","minLength":2}},"allOf":[{"$ref":"#/$defs/a"}],"description":"pydantic style"}`,
	"recursive":   `{"$defs":{"node":{"type":"object","required":["v"],"properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`,
	"tuple":       `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false,"minItems":2}`,
	"minProps":    `{"type":"object","minProperties":3,"properties":{"a":{"type":"string"}}}`,
	"true":        `true`,
	"empty":       `{}`,
	"untyped":     `{"properties":{"a":{"minimum":10}},"required":["a"]}`,
	"draft7":      `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"string"}],"additionalItems":false}`,
	"addlSchema":  `{"type":"object","required":["zz"],"additionalProperties":{"type":"integer","minimum":1}}`,
	"patternHits": `{"type":"string","format":"date","pattern":"^2026-"}`,
}

func TestGenerateValid(t *testing.T) {
	for name, raw := range validSchemas {
		t.Run(name, func(t *testing.T) {
			s, err := Compile([]byte(raw))
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			ind := independent(t, raw)
			for seed := range uint64(50) {
				v, err := s.Generate(rand.New(rand.NewPCG(seed, 1)))
				if err != nil {
					t.Fatalf("seed %d: Generate: %v", seed, err)
				}
				dec, b := roundTrip(t, v)
				if err := ind.Validate(dec); err != nil {
					t.Fatalf("seed %d: %s is not valid: %v", seed, b, err)
				}
			}
		})
	}
}

func TestGenerateDeterministic(t *testing.T) {
	s, err := Compile([]byte(validSchemas["strict"]))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.GenerateJSON(rand.New(rand.NewPCG(7, 7)))
	b, _ := s.GenerateJSON(rand.New(rand.NewPCG(7, 7)))
	if !bytes.Equal(a, b) {
		t.Errorf("same seed: %s then %s", a, b)
	}
	seen := map[string]bool{}
	for seed := range uint64(20) {
		c, _ := s.GenerateJSON(rand.New(rand.NewPCG(seed, 0)))
		seen[string(c)] = true
	}
	if len(seen) < 5 {
		t.Errorf("20 seeds gave %d distinct documents, want variety", len(seen))
	}
}

func TestGenerateExact(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   any
	}{
		{`{"const":"x"}`, "x"},
		{`{"type":"integer","minimum":4,"exclusiveMaximum":5}`, json.Number("4")},
		{`{"type":"number","multipleOf":0.5,"exclusiveMinimum":1,"maximum":1.5}`, json.Number("1.5")},
		{`{"type":"array","maxItems":0}`, []any{}},
		{`{"enum":[["only"]]}`, []any{"only"}},
	} {
		s, err := Compile([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Generate(rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", tc.schema, got, tc.want)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	for _, tc := range []struct {
		schema, keyword, where string // keyword "" means ErrNoInstance
	}{
		{`{"not":{"type":"string"}}`, "not", "#"},
		{`{"type":"object","required":["a"],"properties":{"a":{"if":{"type":"string"},"then":{"minLength":2}}}}`, "if", "#/properties/a"},
		{`{"type":"string","pattern":"^[0-9]{3}$"}`, "pattern", "#"},
		{`{"patternProperties":{"^x":{"type":"string"}}}`, "patternProperties", "#"},
		{`{"type":"array","contains":{"const":1}}`, "contains", "#"},
		{`{"type":"object","propertyNames":{"maxLength":2}}`, "propertyNames", "#"},
		{`false`, "", ""},
		{`{"type":"integer","minimum":1,"maximum":0}`, "", ""},
		{`{"type":"integer","multipleOf":2,"minimum":3,"maximum":3}`, "", ""},
		{`{"type":"string","minLength":3,"maxLength":2}`, "", ""},
		{`{"allOf":[{"type":"string"},{"type":"integer"}]}`, "", ""},
		{`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "", ""},
		{`{"$defs":{"n":{"type":"object","required":["n"],"properties":{"n":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`, "", ""},
	} {
		s, err := Compile([]byte(tc.schema))
		if err != nil {
			t.Fatalf("%s: Compile: %v", tc.schema, err)
		}
		v, err := s.Generate(rand.New(rand.NewPCG(3, 4)))
		if err == nil {
			t.Errorf("%s: got %v, want an error", tc.schema, v)
			continue
		}
		var ue *UnsupportedError
		switch {
		case tc.keyword != "":
			if !errors.As(err, &ue) || ue.Keyword != tc.keyword || ue.Location != tc.where {
				t.Errorf("%s: error %v, want unsupported %q at %s", tc.schema, err, tc.keyword, tc.where)
			}
			if !strings.Contains(err.Error(), tc.keyword) {
				t.Errorf("%s: error %q does not name %q", tc.schema, err, tc.keyword)
			}
		case !errors.Is(err, ErrNoInstance):
			t.Errorf("%s: error %v, want ErrNoInstance", tc.schema, err)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, raw := range []string{`{`, `{"type":"strin"}`, `{"$ref":"https://example.com/s.json"}`, `{"$ref":"#/$defs/missing"}`, `{"minimum":"x"}`} {
		if _, err := Compile([]byte(raw)); err == nil {
			t.Errorf("Compile(%s): no error", raw)
		} else if strings.Contains(err.Error(), resourceURL) {
			t.Errorf("Compile(%s): error %q shows the internal URL", raw, err)
		}
	}
}

// FuzzGenerate: any schema the library compiles yields a valid document or
// a clear error, never a panic or an invalid document.
func FuzzGenerate(f *testing.F) {
	for _, raw := range validSchemas {
		f.Add([]byte(raw), uint64(1))
	}
	f.Add([]byte(`{"not":{}}`), uint64(2))
	f.Add([]byte(`{"type":"number","multipleOf":0.1,"minimum":0.05,"maximum":0.3}`), uint64(3))
	f.Add([]byte(`{"type":"array","uniqueItems":true,"minItems":3,"items":{"type":"boolean"}}`), uint64(4))
	f.Fuzz(func(t *testing.T, raw []byte, seed uint64) {
		s, err := Compile(raw)
		if err != nil {
			return
		}
		v, err := s.Generate(rand.New(rand.NewPCG(seed, seed)))
		if err != nil {
			var ue *UnsupportedError
			if !errors.As(err, &ue) && !errors.Is(err, ErrNoInstance) {
				t.Fatalf("%s: unclassified error %v", raw, err)
			}
			return
		}
		dec, b := roundTrip(t, v)
		if err := s.Validate(dec); err != nil {
			t.Fatalf("%s: generated %s, invalid: %v", raw, b, err)
		}
	})
}

func BenchmarkGenerate20(b *testing.B) {
	s, err := Compile([]byte(schema20))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.GenerateJSON(rng); err != nil {
			b.Fatal(err)
		}
	}
}

// schema20 is an extraction schema of 20 properties, as a tool's input.
const schema20 = `{"type":"object","additionalProperties":false,"required":["invoice_id","vendor","customer","issued","due","currency","subtotal","tax","total","paid","status","lines","notes","email","website","po_number","country","priority","tags","confidence"],"properties":{
"invoice_id":{"type":"string"},"vendor":{"type":"string"},"customer":{"type":"string"},
"issued":{"type":"string","format":"date"},"due":{"type":"string","format":"date"},
"currency":{"type":"string","enum":["EUR","USD","GBP"]},"subtotal":{"type":"number","minimum":0},
"tax":{"type":"number","minimum":0},"total":{"type":"number","minimum":0},"paid":{"type":"boolean"},
"status":{"type":"string","enum":["draft","sent","paid","void"]},
"lines":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}},
"notes":{"type":["string","null"]},"email":{"type":"string","format":"email"},"website":{"type":"string","format":"uri"},
"po_number":{"type":"string","maxLength":12},"country":{"type":"string","minLength":2,"maxLength":2},
"priority":{"type":"integer","minimum":1,"maximum":5},"tags":{"type":"array","items":{"type":"string"}},
"confidence":{"type":"number","minimum":0,"maximum":1}}}`

// TestAppendJSON: the hand-written encoder writes what encoding/json does.
func TestAppendJSON(t *testing.T) {
	for _, raw := range validSchemas {
		s, err := Compile([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(20) {
			v, err := s.Generate(rand.New(rand.NewPCG(seed, 9)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendJSON(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(v)
			if !bytes.Equal(got, want) {
				t.Errorf("appendJSON = %s, want %s", got, want)
			}
		}
	}
	for _, v := range []any{"a\"<é\n", map[string]any{"b": 1.5, "a": []any{nil, true}}, json.Number("-3")} {
		got, _ := appendJSON(nil, v)
		want, _ := json.Marshal(v)
		if !bytes.Equal(got, want) {
			t.Errorf("appendJSON(%#v) = %s, want %s", v, got, want)
		}
	}
}

// TestExactPlan: Compile tells which schemas the generator satisfies by
// construction (their documents are not validated again) from those whose
// documents Generate must validate.
func TestExactPlan(t *testing.T) {
	for _, tc := range []struct {
		schema string
		exact  bool
	}{
		{schema20, true},
		{validSchemas["formats"], true},
		{validSchemas["refs"], true},
		{validSchemas["recursive"], true},
		{validSchemas["anyOf"], true},
		{validSchemas["allOfRef"], true},
		{validSchemas["enum"], true},
		{validSchemas["addlSchema"], true},
		{validSchemas["strict"], false}, // uniqueItems
		{validSchemas["minProps"], false},
		{`{"type":"object","additionalProperties":false,"required":["a"]}`, false},
		{`{"type":"string","format":"date","maxLength":4}`, false},
		{`{"type":"string","format":"semver"}`, false}, // a format the generator does not know
		{`{"type":"array","prefixItems":[{"type":"string"}],"items":false,"minItems":2}`, false},
		{`{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`, false}, // below the root
		{`{"enum":[1,2],"type":"string"}`, false},
		{`{"const":3,"minimum":5}`, false},
	} {
		s, err := Compile([]byte(tc.schema))
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		if got := s.nodes[s.root].exact; got != tc.exact {
			t.Errorf("%.80s: exact = %v, want %v", tc.schema, got, tc.exact)
		}
	}
}

// TestInexactValidated: a schema that is not exact still never yields an
// invalid document: Generate validates it and reports ErrNoInstance.
func TestInexactValidated(t *testing.T) {
	for _, raw := range []string{
		`{"type":"array","uniqueItems":true,"minItems":3,"items":{"type":"boolean"}}`,
		`{"type":"string","format":"date","maxLength":4}`,
		`{"enum":[1,2],"type":"string"}`,
	} {
		s, err := Compile([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if v, err := s.Generate(rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrNoInstance) {
			t.Errorf("%s: got %v, %v; want ErrNoInstance", raw, v, err)
		}
	}
}
