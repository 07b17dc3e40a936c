// Package schemagen generates JSON documents that are valid against a JSON
// Schema: the arguments of the mock's tool calls and its structured output.
//
// A schema is compiled with github.com/santhosh-tekuri/jsonschema/v6 (draft
// 2020-12 unless it names another), with formats asserted and no remote
// references. Generation is seeded: the same schema and the same source give
// the same document. It handles type, required, properties,
// additionalProperties, min/maxProperties, enum, const, items, prefixItems,
// min/maxItems, uniqueItems, min/maxLength, the common string formats,
// minimum/maximum and their exclusive forms, multipleOf, $ref/$defs, anyOf,
// oneOf and allOf. Compile works out which subschemas the generator
// satisfies by construction; a document of any other schema is validated
// against the compiled schema before it is returned, so a schema the
// generator cannot satisfy gives an error, never an invalid document. Keywords it cannot generate for (not,
// if/then/else, pattern that the generated string does not happen to match,
// patternProperties, propertyNames, dependencies, contains, unevaluated*,
// $dynamicRef) give an *UnsupportedError naming the keyword.
package schemagen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled schema, safe for concurrent use.
type Schema struct {
	root   *jsonschema.Schema
	ranges sync.Map // *jsonschema.Schema → *numRange, computed once
	// nodes is what Compile worked out once for each subschema reachable
	// from root; read-only afterwards.
	nodes map[*jsonschema.Schema]*node
}

// node is a subschema's generation facts, worked out at Compile.
type node struct {
	// exact: every document generated for this subschema is valid against
	// it by construction (see exactLocally), so Generate need not validate.
	exact bool
	names []string // the declared properties, sorted
	// enumOK[i]: the i-th enum value is valid against the whole subschema.
	enumOK []bool
}

// UnsupportedError is a schema that uses a keyword the generator does not
// generate for.
type UnsupportedError struct {
	Keyword  string // e.g. "not"
	Location string // the JSON pointer of the schema that uses it, e.g. "#/properties/a"
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("unsupported JSON Schema keyword %q at %s", e.Keyword, e.Location)
}

// ErrNoInstance is returned (wrapped) when the generated document does not
// satisfy the schema, e.g. a schema that accepts nothing.
var ErrNoInstance = errors.New("schemagen: no valid document found")

const resourceURL = "mem:///schema.json"

// noLoader refuses every reference outside the schema itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %s: only references inside the schema ($defs) are supported", url)
}

// Compile compiles a schema given as JSON.
func Compile(raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("invalid schema JSON: %w", err)
	}
	return compileDoc(doc)
}

func compileDoc(doc any) (*Schema, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.AssertFormat()
	if err := c.AddResource(resourceURL, doc); err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	root, err := c.Compile(resourceURL)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %w", cleanErr(err))
	}
	out := &Schema{root: root, nodes: map[*jsonschema.Schema]*node{}}
	out.plan(root)
	return out, nil
}

// plan works out s's node and those of every subschema generation can
// reach from it. A subschema is exact when its own keywords are satisfied
// by construction and every subschema it generates from is exact; a cycle
// ($ref recursion) is assumed exact while its members are worked out,
// which is sound because exactness is a conjunction of local facts.
func (sc *Schema) plan(s *jsonschema.Schema) bool {
	if s == nil {
		return true
	}
	if n, ok := sc.nodes[s]; ok {
		return n.exact
	}
	n := &node{exact: true}
	sc.nodes[s] = n
	for k := range s.Properties {
		n.names = append(n.names, k)
	}
	slices.Sort(n.names)
	if s.Enum != nil {
		n.enumOK = make([]bool, len(s.Enum.Values))
		for i, v := range s.Enum.Values {
			n.enumOK[i] = s.Validate(v) == nil
		}
	}
	exact := exactLocally(s, n)
	for _, c := range children(s) {
		if !sc.plan(c) {
			exact = false
		}
	}
	n.exact = exact
	return exact
}

// enumValid reports whether s's i-th enum value is valid against s; n
// may be nil (a subschema plan did not reach), and then it validates.
func (n *node) enumValid(s *jsonschema.Schema, i int) bool {
	if n != nil {
		return n.enumOK[i]
	}
	return s.Validate(s.Enum.Values[i]) == nil
}

// sortedNames is s's declared properties, sorted; n may be nil.
func (n *node) sortedNames(s *jsonschema.Schema) []string {
	if n != nil {
		return n.names
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// children are the subschemas generation may draw from.
func children(s *jsonschema.Schema) []*jsonschema.Schema {
	var cs []*jsonschema.Schema
	for _, p := range s.Properties {
		cs = append(cs, p)
	}
	if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		cs = append(cs, a)
	}
	switch it := s.Items.(type) {
	case []*jsonschema.Schema:
		cs = append(cs, it...)
	case *jsonschema.Schema:
		cs = append(cs, it)
	}
	if a, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		cs = append(cs, a)
	}
	cs = append(cs, s.PrefixItems...)
	cs = append(cs, s.Items2020, s.Ref)
	cs = append(cs, s.AllOf...)
	cs = append(cs, s.AnyOf...)
	cs = append(cs, s.OneOf...)
	return cs
}

// exactLocally reports whether what value generates for s itself is
// valid against s, given valid documents for its subschemas. It follows
// value's order: const and enum (valid values are known from Compile),
// then allOf, anyOf and oneOf (which validate what they return), then
// the keywords of the type generated. The rest is false, and Generate
// validates: uniqueItems, min/maxProperties, a format the generator does
// not know or one with length bounds, required properties that
// additionalProperties forbids, a minItems that closed items cannot meet.
func exactLocally(s *jsonschema.Schema, n *node) bool {
	switch {
	case s.Bool != nil || checkKeywords(s) != nil:
		return true // "x" for true; an error otherwise
	case s.Const != nil:
		return s.Validate(*s.Const) == nil
	case s.Enum != nil:
		return slices.Contains(n.enumOK, true)
	case s.Ref != nil || len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0:
		return true
	}
	switch pickType(s) {
	case "object":
		if s.MinProperties != nil || s.MaxProperties != nil {
			return false
		}
		if b, ok := s.AdditionalProperties.(bool); ok && !b {
			for _, k := range s.Required {
				if _, declared := s.Properties[k]; !declared {
					return false
				}
			}
		}
	case "array":
		if s.UniqueItems {
			return false
		}
		closed := false
		prefix := 0
		if it, ok := s.Items.([]*jsonschema.Schema); ok {
			prefix = len(it)
			if b, ok := s.AdditionalItems.(bool); ok && !b {
				closed = true
			}
		}
		if s.PrefixItems != nil {
			prefix = len(s.PrefixItems)
		}
		if s.Items2020 != nil && s.Items2020.Bool != nil && !*s.Items2020.Bool {
			closed = true
		}
		if closed && s.MinItems != nil && *s.MinItems > prefix {
			return false
		}
	case "string":
		if s.Format != nil {
			if _, known := (&gen{rng: rand.New(rand.NewPCG(0, 0))}).format(s.Format.Name); !known || s.MinLength != nil || s.MaxLength != nil {
				return false
			}
		}
	}
	return true
}

// cleanErr drops the internal resource URL from the library's messages.
func cleanErr(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), resourceURL, ""))
}

// Validate reports whether v (as encoding/json decodes with UseNumber)
// is valid against s.
func (s *Schema) Validate(v any) error {
	if err := s.root.Validate(v); err != nil {
		return cleanErr(err)
	}
	return nil
}

// maxSize bounds minLength, minItems and minProperties: the mock answers
// with documents of a model's size, not arbitrary ones.
const maxSize = 4096

// tooLarge is the error for a minimum above maxSize.
func tooLarge(s *jsonschema.Schema, kw string, n int) error {
	return fmt.Errorf("%w: %s %d at %s is above the generator's limit of %d", ErrNoInstance, kw, n, loc(s), maxSize)
}

// maxDepth bounds nesting, which recursive $refs could make infinite.
const maxDepth = 24

// Generate returns a document valid against s, drawn from rng.
func (s *Schema) Generate(rng *rand.Rand) (any, error) {
	g := &gen{rng: rng, ranges: &s.ranges, plans: s.nodes}
	v, err := g.value(s.root, 0)
	if err != nil {
		return nil, err
	}
	if s.nodes[s.root].exact {
		return v, nil
	}
	if err := s.root.Validate(v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoInstance, cleanErr(err))
	}
	return v, nil
}

// GenerateJSON is Generate encoded as compact JSON (object keys sorted),
// as encoding/json would encode it.
func (s *Schema) GenerateJSON(rng *rand.Rand) ([]byte, error) {
	v, err := s.Generate(rng)
	if err != nil {
		return nil, err
	}
	return appendJSON(make([]byte, 0, 256), v)
}

// appendJSON encodes the values Generate returns without reflection, which
// was a third of a document's cost.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case json.Number:
		return append(b, v...), nil
	case string:
		return appendString(b, v), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	e, err := json.Marshal(v) // a const or enum value of another type
	if err != nil {
		return nil, err
	}
	return append(b, e...), nil
}

// appendString appends s quoted, with encoding/json's escapes.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

type gen struct {
	rng    *rand.Rand
	ranges *sync.Map
	plans  map[*jsonschema.Schema]*node
	nodes  int // values generated so far, bounded by maxNodes
}

// maxNodes bounds a document's size, which nested minimums multiply.
const maxNodes = 100_000

func loc(s *jsonschema.Schema) string {
	l := strings.TrimPrefix(s.Location, resourceURL)
	if l == "" {
		return "#"
	}
	return l
}

func unsupported(s *jsonschema.Schema, kw string) error {
	return &UnsupportedError{Keyword: kw, Location: loc(s)}
}

// checkKeywords rejects keywords the generator cannot satisfy by
// construction.
func checkKeywords(s *jsonschema.Schema) error {
	switch {
	case s.Not != nil:
		return unsupported(s, "not")
	case s.If != nil:
		return unsupported(s, "if")
	case len(s.PatternProperties) > 0:
		return unsupported(s, "patternProperties")
	case s.PropertyNames != nil:
		return unsupported(s, "propertyNames")
	case len(s.Dependencies) > 0:
		return unsupported(s, "dependencies")
	case len(s.DependentRequired) > 0:
		return unsupported(s, "dependentRequired")
	case len(s.DependentSchemas) > 0:
		return unsupported(s, "dependentSchemas")
	case s.UnevaluatedProperties != nil:
		return unsupported(s, "unevaluatedProperties")
	case s.UnevaluatedItems != nil:
		return unsupported(s, "unevaluatedItems")
	case s.Contains != nil:
		return unsupported(s, "contains")
	case s.DynamicRef != nil:
		return unsupported(s, "$dynamicRef")
	case s.RecursiveRef != nil:
		return unsupported(s, "$recursiveRef")
	case s.ContentSchema != nil:
		return unsupported(s, "contentSchema")
	}
	return nil
}

func (g *gen) value(s *jsonschema.Schema, depth int) (any, error) {
	if g.nodes++; g.nodes > maxNodes {
		return nil, fmt.Errorf("%w: the document would have more than %d values", ErrNoInstance, maxNodes)
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: schema nests deeper than %d levels at %s (a recursive $ref with no way out?)", ErrNoInstance, maxDepth, loc(s))
	}
	if s.Bool != nil {
		if !*s.Bool {
			return nil, fmt.Errorf("%w: schema false at %s accepts nothing", ErrNoInstance, loc(s))
		}
		return "x", nil
	}
	if err := checkKeywords(s); err != nil {
		return nil, err
	}
	if s.Const != nil {
		return *s.Const, nil
	}
	if s.Enum != nil {
		if len(s.Enum.Values) == 0 {
			return nil, fmt.Errorf("%w: empty enum at %s", ErrNoInstance, loc(s))
		}
		// Prefer a value the rest of the schema also accepts.
		start := g.rng.IntN(len(s.Enum.Values))
		ok := g.plans[s].enumValid
		for i := range s.Enum.Values {
			j := (start + i) % len(s.Enum.Values)
			if ok(s, j) {
				return s.Enum.Values[j], nil
			}
		}
		return s.Enum.Values[start], nil
	}
	if s.Ref != nil && !hasOwnConstraints(s) {
		return g.value(s.Ref, depth+1)
	}
	if len(s.AllOf) > 0 || s.Ref != nil {
		return g.allOf(s, depth)
	}
	if len(s.AnyOf) > 0 {
		return g.oneOf(s, s.AnyOf, depth)
	}
	if len(s.OneOf) > 0 {
		return g.oneOf(s, s.OneOf, depth)
	}
	return g.typed(s, depth)
}

// hasOwnConstraints reports whether s constrains values beyond its $ref.
func hasOwnConstraints(s *jsonschema.Schema) bool {
	return s.Types != nil || len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 ||
		s.Properties != nil || s.Items != nil || s.Items2020 != nil || s.PrefixItems != nil ||
		s.MinLength != nil || s.MaxLength != nil || s.Pattern != nil || s.Format != nil ||
		s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil ||
		s.MultipleOf != nil || s.MinItems != nil || s.MaxItems != nil || s.Required != nil ||
		s.MinProperties != nil || s.MaxProperties != nil || s.AdditionalProperties != nil
}

// allOf generates from the most specific part (the $ref or the first
// subschema with a type) and relies on validation to catch conflicts.
func (g *gen) allOf(s *jsonschema.Schema, depth int) (any, error) {
	parts := slices.Clone(s.AllOf)
	if s.Ref != nil {
		parts = append([]*jsonschema.Schema{s.Ref}, parts...)
	}
	if hasOwnConstraints(&jsonschema.Schema{Types: s.Types, Properties: s.Properties, Items2020: s.Items2020, Items: s.Items, Format: s.Format, Minimum: s.Minimum, Maximum: s.Maximum}) {
		// The schema's own keywords first: they are what it is about.
		v, err := g.typed(s, depth)
		if err == nil && s.Validate(v) == nil {
			return v, nil
		}
	}
	var firstErr error
	for _, p := range parts {
		v, err := g.value(p, depth+1)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if s.Validate(v) == nil {
			return v, nil
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return nil, fmt.Errorf("%w: no document found that satisfies every part of allOf at %s", ErrNoInstance, loc(s))
}

// oneOf tries the branches from a seeded start until one gives a document
// the whole schema accepts (for oneOf, one that matches exactly one branch).
func (g *gen) oneOf(s *jsonschema.Schema, branches []*jsonschema.Schema, depth int) (any, error) {
	start := g.rng.IntN(len(branches))
	var firstErr error
	var last any
	for i := range branches {
		b := branches[(start+i)%len(branches)]
		v, err := g.value(b, depth+1)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		last = v
		if s.Validate(v) == nil {
			return v, nil
		}
	}
	if last != nil {
		// Every branch generated a document; none satisfied the whole schema.
		return nil, fmt.Errorf("%w: %v", ErrNoInstance, cleanErr(s.Validate(last)))
	}
	return nil, firstErr
}

// pickType chooses the type to generate: the first of the allowed types in
// a preference order (null only when it is the only one), or the type the
// keywords imply.
func pickType(s *jsonschema.Schema) string {
	if s.Types != nil {
		ts := s.Types.ToStrings()
		for _, t := range []string{"object", "array", "string", "integer", "number", "boolean", "null"} {
			if slices.Contains(ts, t) {
				return t
			}
		}
	}
	switch {
	case s.Properties != nil || s.Required != nil || s.AdditionalProperties != nil || s.MinProperties != nil:
		return "object"
	case s.Items != nil || s.Items2020 != nil || s.PrefixItems != nil || s.MinItems != nil || s.MaxItems != nil:
		return "array"
	case s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil || s.MultipleOf != nil:
		return "number"
	}
	return "string"
}

func (g *gen) typed(s *jsonschema.Schema, depth int) (any, error) {
	switch pickType(s) {
	case "object":
		return g.object(s, depth)
	case "array":
		return g.array(s, depth)
	case "integer":
		return g.number(s, true)
	case "number":
		return g.number(s, false)
	case "boolean":
		return g.rng.IntN(2) == 1, nil
	case "null":
		return nil, nil
	}
	return g.str(s)
}

func (g *gen) object(s *jsonschema.Schema, depth int) (any, error) {
	names := g.plans[s].sortedNames(s)
	out := make(map[string]any, len(names))
	add := func(k string) error {
		ps, ok := s.Properties[k]
		var v any
		var err error
		switch {
		case ok:
			v, err = g.value(ps, depth+1)
		default:
			v, err = g.extra(s, depth)
		}
		if err != nil {
			return err
		}
		out[k] = v
		return nil
	}
	for _, k := range s.Required {
		if _, done := out[k]; done {
			continue
		}
		if err := add(k); err != nil {
			return nil, err
		}
	}
	maxProps := math.MaxInt
	if s.MaxProperties != nil {
		maxProps = *s.MaxProperties
	}
	for _, k := range names {
		if _, done := out[k]; done || len(out) >= maxProps {
			continue
		}
		// Optional properties are present half the time, from the seed.
		if g.rng.IntN(2) == 0 {
			continue
		}
		if err := add(k); err != nil {
			return nil, err
		}
	}
	if s.MinProperties != nil {
		if *s.MinProperties > maxSize {
			return nil, tooLarge(s, "minProperties", *s.MinProperties)
		}
		for _, k := range names {
			if len(out) >= *s.MinProperties {
				break
			}
			if _, done := out[k]; !done {
				if err := add(k); err != nil {
					return nil, err
				}
			}
		}
		for i := 0; len(out) < *s.MinProperties; i++ {
			if b, ok := s.AdditionalProperties.(bool); ok && !b {
				return nil, fmt.Errorf("%w: minProperties %d at %s needs more properties than it declares", ErrNoInstance, *s.MinProperties, loc(s))
			}
			if err := add("extra_" + strconv.Itoa(i)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// extra is the value of a required property that properties does not
// declare.
func (g *gen) extra(s *jsonschema.Schema, depth int) (any, error) {
	if as, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		return g.value(as, depth+1)
	}
	return g.word(), nil
}

func (g *gen) array(s *jsonschema.Schema, depth int) (any, error) {
	lo, hi := 0, math.MaxInt
	if s.MinItems != nil {
		lo = *s.MinItems
	}
	if s.MaxItems != nil {
		hi = *s.MaxItems
	}
	if lo > maxSize {
		return nil, tooLarge(s, "minItems", lo)
	}
	if lo > hi {
		return nil, fmt.Errorf("%w: minItems %d > maxItems %d at %s", ErrNoInstance, lo, hi, loc(s))
	}
	// At least one item when allowed, at most three beyond the minimum.
	n := min(hi, max(lo, 1)+g.rng.IntN(3))
	if depth > maxDepth/2 {
		n = lo // deep in a recursive schema: as little as allowed
	}
	var prefix []*jsonschema.Schema
	var rest *jsonschema.Schema
	restAllowed := true
	switch it := s.Items.(type) {
	case []*jsonschema.Schema:
		prefix = it
		switch a := s.AdditionalItems.(type) {
		case *jsonschema.Schema:
			rest = a
		case bool:
			restAllowed = a
		}
	case *jsonschema.Schema:
		rest = it
	}
	if s.PrefixItems != nil {
		prefix = s.PrefixItems
	}
	if s.Items2020 != nil {
		rest = s.Items2020
		if rest.Bool != nil && !*rest.Bool {
			restAllowed = false
		}
	}
	if !restAllowed {
		n = min(n, len(prefix))
	}
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		var is *jsonschema.Schema
		switch {
		case i < len(prefix):
			is = prefix[i]
		default:
			is = rest
		}
		var v any
		var err error
		dup := false
		for try := 0; try < 32; try++ {
			if is == nil {
				v, err = g.word(), nil
			} else {
				v, err = g.value(is, depth+1)
			}
			dup = err == nil && s.UniqueItems && containsEqual(out, v)
			if !dup {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		if dup && len(out) >= lo {
			break // no more distinct items to be had; enough of them
		}
		out = append(out, v)
	}
	return out, nil
}

func containsEqual(vs []any, v any) bool {
	b, _ := json.Marshal(v)
	for _, w := range vs {
		c, _ := json.Marshal(w)
		if bytes.Equal(b, c) {
			return true
		}
	}
	return false
}

// words are the vocabulary of generated strings.
var words = [...]string{
	"alpha", "bravo", "delta", "echo", "lab", "mock", "rate", "limit",
	"token", "batch", "queue", "retry", "north", "river", "amber", "cedar",
}

func (g *gen) word() string { return words[g.rng.IntN(len(words))] }

func (g *gen) str(s *jsonschema.Schema) (any, error) {
	lo, hi := 0, math.MaxInt
	if s.MinLength != nil {
		lo = *s.MinLength
	}
	if s.MaxLength != nil {
		hi = *s.MaxLength
	}
	if lo > maxSize {
		return nil, tooLarge(s, "minLength", lo)
	}
	if lo > hi {
		return nil, fmt.Errorf("%w: minLength %d > maxLength %d at %s", ErrNoInstance, lo, hi, loc(s))
	}
	var v string
	if s.Format != nil {
		var ok bool
		if v, ok = g.format(s.Format.Name); !ok {
			v = ""
		}
	}
	if v == "" {
		// One to three words, then fitted to the length bounds.
		n := 1 + g.rng.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.word()
		}
		v = strings.Join(parts, " ")
		r := []rune(v)
		for len(r) < lo {
			r = append(r, []rune(" "+g.word())...)
		}
		if len(r) > hi {
			r = r[:hi]
		}
		v = string(r)
	}
	if s.Pattern != nil && !s.Pattern.MatchString(v) {
		return nil, unsupported(s, "pattern")
	}
	return v, nil
}

// format returns a value of a named format; false for a format it does
// not know (formats it does not know are not asserted either).
func (g *gen) format(name string) (string, bool) {
	r := g.rng
	switch name {
	case "date-time":
		return digits2("2026-", 1+r.IntN(12), "-", 1+r.IntN(28), "T", r.IntN(24), ":", r.IntN(60), ":", r.IntN(60)) + "Z", true
	case "date":
		return digits2("2026-", 1+r.IntN(12), "-", 1+r.IntN(28)), true
	case "time":
		return digits2("", r.IntN(24), ":", r.IntN(60), ":", r.IntN(60)) + "Z", true
	case "duration":
		return "PT" + strconv.Itoa(1+r.IntN(59)) + "M", true
	case "email", "idn-email":
		return g.word() + "@example.com", true
	case "hostname", "idn-hostname":
		return g.word() + ".example.com", true
	case "ipv4":
		return "192.0.2." + strconv.Itoa(1+r.IntN(254)), true
	case "ipv6":
		return "2001:db8::" + strconv.FormatInt(int64(1+r.IntN(0xfffe)), 16), true
	case "uri", "iri", "uri-reference", "iri-reference":
		return "https://example.com/" + g.word(), true
	case "uri-template":
		return "https://example.com/{" + g.word() + "}", true
	case "uuid":
		return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Uint64()&(1<<48-1)), true
	case "json-pointer":
		return "/" + g.word(), true
	case "relative-json-pointer":
		return "0/" + g.word(), true
	case "regex":
		return "^" + g.word() + "$", true
	}
	return "", false
}

// digits2 joins its arguments, strings as they are and ints (0–99) as
// two digits: digits2("2026-", 3, "-", 9) is "2026-03-09". It is
// fmt.Sprintf's %02d without its cost, a tenth of a tool call's.
func digits2(parts ...any) string {
	b := make([]byte, 0, 24)
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			b = append(b, p...)
		case int:
			b = append(b, byte('0'+p/10), byte('0'+p%10))
		}
	}
	return string(b)
}

// numRange is the values a numeric schema allows: k·step for k in
// [kLo, kHi]; err when there are none.
type numRange struct {
	step     *big.Rat
	kLo, kHi *big.Int
	err      error
	// The common case in machine integers: step is 1 or 1/100, k fits.
	small      bool
	lo64, hi64 int64
	cents      bool // step 1/100
}

// number draws from the bounds (a default range of [0, 100] where they
// leave it open) a value that is a multiple of multipleOf.
func (g *gen) number(s *jsonschema.Schema, integer bool) (any, error) {
	key := any(s)
	if integer {
		key = intKey{s}
	}
	v, ok := g.ranges.Load(key)
	if !ok {
		v, _ = g.ranges.LoadOrStore(key, numericRange(s, integer))
	}
	r := v.(*numRange)
	if r.err != nil {
		return nil, r.err
	}
	if r.small {
		k := r.lo64 + g.rng.Int64N(min(r.hi64-r.lo64, 1000)+1)
		if !r.cents {
			return json.Number(strconv.FormatInt(k, 10)), nil
		}
		return centsNumber(k), nil
	}
	span := new(big.Int).Sub(r.kHi, r.kLo)
	k := new(big.Int).Set(r.kLo)
	if span.IsInt64() && span.Int64() < math.MaxInt64 {
		k.Add(k, big.NewInt(g.rng.Int64N(min(span.Int64(), 1000)+1)))
	}
	return ratNumber(new(big.Rat).Mul(new(big.Rat).SetInt(k), r.step)), nil
}

// intKey tells the integer range of a schema from its number range.
type intKey struct{ s *jsonschema.Schema }

// centsNumber renders k/100 as a JSON number.
func centsNumber(k int64) json.Number {
	neg := k < 0
	if neg {
		k = -k
	}
	whole, frac := k/100, k%100
	var b []byte
	if neg {
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, whole, 10)
	switch {
	case frac == 0:
	case frac%10 == 0:
		b = append(b, '.', byte('0'+frac/10))
	default:
		b = append(b, '.', byte('0'+frac/10), byte('0'+frac%10))
	}
	return json.Number(b)
}

func numericRange(s *jsonschema.Schema, integer bool) *numRange {
	lo, hi := new(big.Rat), new(big.Rat)
	hasLo, hasHi := false, false
	loExcl, hiExcl := false, false
	if s.Minimum != nil {
		lo.Set(s.Minimum)
		hasLo = true
	}
	if s.ExclusiveMinimum != nil && (!hasLo || s.ExclusiveMinimum.Cmp(lo) >= 0) {
		lo.Set(s.ExclusiveMinimum)
		hasLo, loExcl = true, true
	}
	if s.Maximum != nil {
		hi.Set(s.Maximum)
		hasHi = true
	}
	if s.ExclusiveMaximum != nil && (!hasHi || s.ExclusiveMaximum.Cmp(hi) <= 0) {
		hi.Set(s.ExclusiveMaximum)
		hasHi, hiExcl = true, true
	}
	step := big.NewRat(1, 100) // two decimals for numbers
	if integer {
		step = big.NewRat(1, 1)
	}
	if s.MultipleOf != nil {
		step = new(big.Rat).Set(s.MultipleOf)
		if integer && !step.IsInt() {
			// An integer multiple of a fraction: use the least common
			// integer multiple, step's numerator.
			step = new(big.Rat).SetInt(step.Num())
		}
	}
	switch {
	case !hasLo && !hasHi:
		lo.SetInt64(0)
		hi.SetInt64(100)
	case !hasLo:
		lo.Sub(hi, big.NewRat(100, 1))
	case !hasHi:
		hi.Add(lo, big.NewRat(100, 1))
	}
	// The multiples k·step with lo ≤ (or <) k·step ≤ (or <) hi.
	r := &numRange{step: step, kLo: ceilDiv(lo, step, loExcl), kHi: floorDiv(hi, step, hiExcl)}
	if r.kLo.Cmp(r.kHi) > 0 {
		r.err = fmt.Errorf("%w: no %s in the bounds at %s", ErrNoInstance, map[bool]string{true: "integer", false: "number"}[integer], loc(s))
		return r
	}
	one, cent := big.NewRat(1, 1), big.NewRat(1, 100)
	if (step.Cmp(one) == 0 || step.Cmp(cent) == 0) && r.kLo.IsInt64() && r.kHi.IsInt64() &&
		r.kLo.Int64() > math.MinInt64/4 && r.kHi.Int64() < math.MaxInt64/4 {
		r.small, r.lo64, r.hi64, r.cents = true, r.kLo.Int64(), r.kHi.Int64(), step.Cmp(cent) == 0
	}
	return r
}

// ceilDiv is the least integer k with k·step ≥ x (> x when strict).
func ceilDiv(x, step *big.Rat, strict bool) *big.Int {
	q := new(big.Rat).Quo(x, step)
	k := new(big.Int).Quo(q.Num(), q.Denom()) // truncated toward zero
	if new(big.Rat).SetInt(k).Cmp(q) < 0 {
		k.Add(k, big.NewInt(1))
	}
	if strict && new(big.Rat).SetInt(k).Cmp(q) == 0 {
		k.Add(k, big.NewInt(1))
	}
	return k
}

// floorDiv is the greatest integer k with k·step ≤ x (< x when strict).
func floorDiv(x, step *big.Rat, strict bool) *big.Int {
	q := new(big.Rat).Quo(x, step)
	k := new(big.Int).Quo(q.Num(), q.Denom())
	if new(big.Rat).SetInt(k).Cmp(q) > 0 {
		k.Sub(k, big.NewInt(1))
	}
	if strict && new(big.Rat).SetInt(k).Cmp(q) == 0 {
		k.Sub(k, big.NewInt(1))
	}
	return k
}

// ratNumber renders v exactly as a JSON number when it has a finite
// decimal form, else to 12 decimals.
func ratNumber(v *big.Rat) json.Number {
	if v.IsInt() {
		return json.Number(v.Num().String())
	}
	if p, exact := v.FloatPrec(); exact {
		return json.Number(v.FloatString(p))
	}
	return json.Number(strings.TrimRight(v.FloatString(12), "0"))
}
