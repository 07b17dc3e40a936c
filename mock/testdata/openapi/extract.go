// Command extract writes the JSON Schema that the mock's OpenAI tests
// (Responses, Chat Completions, models, errors) validate against: the named schemas of OpenAI's OpenAPI document
// (github.com/openai/openai-openapi, openapi.json) and every schema they
// reference, as one JSON Schema 2020-12 document with the schemas under
// $defs. Annotations that do not validate anything (description, example,
// title, x-… extensions, discriminator) are dropped to keep it small.
//
//	git -C openai-openapi show COMMIT:openapi.json > openapi.json
//	go run ./mock/testdata/openapi -spec openapi.json -commit COMMIT \
//	    -out mock/testdata/openai.schema.json
//
// It lives under testdata so that go build ./... and go test ./... skip it.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// roots are the objects the mock serves on /v1/responses,
// /v1/chat/completions and /v1/models.
var roots = []string{
	"CreateChatCompletionResponse",
	"CreateChatCompletionStreamResponse",
	"Model",
	"ListModelsResponse",
	"Response",
	"ErrorResponse",
	"ResponseCreatedEvent",
	"ResponseInProgressEvent",
	"ResponseOutputItemAddedEvent",
	"ResponseContentPartAddedEvent",
	"ResponseTextDeltaEvent",
	"ResponseTextDoneEvent",
	"ResponseContentPartDoneEvent",
	"ResponseOutputItemDoneEvent",
	"ResponseFunctionCallArgumentsDeltaEvent",
	"ResponseFunctionCallArgumentsDoneEvent",
	"ResponseCompletedEvent",
	"ResponseIncompleteEvent",
	"ResponseFailedEvent",
	"ResponseErrorEvent",
	"CreateResponse",
}

const refPrefix = "#/components/schemas/"

func main() {
	spec := flag.String("spec", "openapi.json", "OpenAPI document (JSON)")
	commit := flag.String("commit", "", "commit of github.com/openai/openai-openapi the document comes from")
	out := flag.String("out", "openai.schema.json", "output file")
	flag.Parse()
	if err := run(*spec, *commit, *out); err != nil {
		fmt.Fprintln(os.Stderr, "extract:", err)
		os.Exit(1)
	}
}

func run(spec, commit, out string) error {
	if commit == "" {
		return fmt.Errorf("-commit is required: the schema must name its source")
	}
	b, err := os.ReadFile(spec)
	if err != nil {
		return err
	}
	var doc struct {
		Info       struct{ Version string } `json:"info"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", spec, err)
	}
	all := doc.Components.Schemas
	defs := map[string]any{}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if _, done := defs[name]; done {
			continue
		}
		s, ok := all[name]
		if !ok {
			return fmt.Errorf("%s: no schema %q", spec, name)
		}
		defs[name] = clean(s, name, func(ref string) { queue = append(queue, ref) })
	}
	result := map[string]any{
		"$schema":  "https://json-schema.org/draft/2020-12/schema",
		"$comment": fmt.Sprintf("Extracted by mock/testdata/openapi/extract.go from openapi.json (API version %s) of https://github.com/openai/openai-openapi at commit %s: the schemas of x-roots and every schema they reference; descriptions, examples, titles, discriminators and x- extensions removed; nullable: true written as JSON Schema (null added to type or enum).", doc.Info.Version, commit),
		"x-source": map[string]string{"repository": "https://github.com/openai/openai-openapi", "commit": commit, "path": "openapi.json", "api_version": doc.Info.Version},
		"x-roots":  roots,
		"$defs":    defs,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(result); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// dropped are annotation keywords that validate nothing.
var dropped = map[string]bool{
	"description": true, "example": true, "examples": true, "title": true,
	"discriminator": true, "deprecated": true, "default": true,
}

// schemaMaps hold schemas by name; schemaLists hold lists of schemas;
// schemaValues hold one schema.
var (
	schemaMaps   = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "dependentSchemas": true}
	schemaLists  = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}
	schemaValues = map[string]bool{"items": true, "additionalProperties": true, "not": true, "contains": true,
		"propertyNames": true, "if": true, "then": true, "else": true, "unevaluatedProperties": true, "unevaluatedItems": true}
)

// clean copies the schema s of the definition def without annotations,
// rewriting references to #/$defs/NAME and reporting each referenced name.
// The document uses draft 2019-09's $recursiveAnchor: true with
// $recursiveRef: "#" for a schema that nests itself; 2020-12 has neither,
// so the anchor is dropped and the reference names def.
func clean(s any, def string, ref func(string)) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s // true, false
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch {
		case dropped[k] || strings.HasPrefix(k, "x-") || k == "$recursiveAnchor":
		case k == "$recursiveRef":
			if v != "#" {
				panic(fmt.Sprintf("%s: $recursiveRef %v: only \"#\" is handled", def, v))
			}
			out["$ref"] = "#/$defs/" + def
		case k == "$ref":
			r := v.(string)
			if name, ok := strings.CutPrefix(r, refPrefix); ok {
				ref(name)
				r = "#/$defs/" + name
			}
			out[k] = r
		case schemaMaps[k]:
			sub := map[string]any{}
			for name, s := range v.(map[string]any) {
				sub[name] = clean(s, def, ref)
			}
			out[k] = sub
		case schemaLists[k]:
			var sub []any
			for _, s := range v.([]any) {
				sub = append(sub, clean(s, def, ref))
			}
			out[k] = sub
		case schemaValues[k]:
			out[k] = clean(v, def, ref)
		case k == "nullable":
			// handled below
		default:
			out[k] = v
		}
	}
	if m["nullable"] == true {
		return allowNull(out)
	}
	return out
}

// allowNull is s with null allowed: the OpenAPI 3.0 keyword nullable: true,
// which the document still uses in 3.1 (the API sends null there, e.g. a
// stream chunk's finish_reason) and which JSON Schema ignores. A type
// gains "null", an enum gains null; a schema without a type (a $ref, an
// anyOf) becomes anyOf itself or null.
func allowNull(s map[string]any) any {
	switch t := s["type"].(type) {
	case string:
		s["type"] = []any{t, "null"}
	case []any:
		if !slices.Contains(t, any("null")) {
			s["type"] = append(t, "null")
		}
	default:
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	if e, ok := s["enum"].([]any); ok && !slices.Contains(e, nil) {
		s["enum"] = append(e, nil)
	}
	return s
}
