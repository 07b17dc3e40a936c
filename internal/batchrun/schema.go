package batchrun

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/provider"
)

// SchemaCheck compiles the JSON Schema at path and returns an engine check
// that parses a response's text as JSON (inside a ```json fence or not) and
// validates it, its error being the validator's message.
func SchemaCheck(path string) (func(engine.Item, provider.Response) error, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, usagef("--schema: %v", err)
	}
	sch, err := jsonschema.NewCompiler().Compile(abs)
	if err != nil {
		return nil, usagef("--schema %s: %v", path, err)
	}
	return func(_ engine.Item, resp provider.Response) error {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(unfence(resp.Text)))
		if err != nil {
			return fmt.Errorf("response is not JSON: %v", err)
		}
		if err := sch.Validate(v); err != nil {
			var ve *jsonschema.ValidationError
			if errors.As(err, &ve) {
				// Drop the schema's URL line, a local path: the causes are the message.
				msg := ve.Error()
				if _, rest, ok := strings.Cut(msg, "\n"); ok {
					msg = strings.TrimSpace(rest)
				}
				return fmt.Errorf("response does not match the schema: %s", strings.ReplaceAll(msg, "\n", "; "))
			}
			return err
		}
		return nil
	}, nil
}

// unfence returns text without a surrounding Markdown code fence, which
// models often put around JSON.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return text
	}
	t = strings.TrimSuffix(t[3:], "```")
	if nl := strings.IndexByte(t, '\n'); nl >= 0 && !strings.ContainsAny(t[:nl], "{[\"") {
		t = t[nl+1:] // the info string: json
	}
	return t
}
