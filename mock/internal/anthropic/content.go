package anthropic

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// decodeContent reads the Messages API's content fields.
func (req *Request) decodeContent(c *wire.Call) error {
	if !wire.Present(req.Tools) && !wire.Present(req.ToolChoice) && req.StopSequences == nil &&
		!wire.Present(req.OutputConfig) && !wire.Present(req.OutputFormat) {
		return nil
	}
	cr := &wire.ContentReq{Choices: 1, Stops: req.StopSequences, IDPrefix: "toolu_01",
		Seed: wire.ContentSeed(req.Model, req.Messages, req.System)}
	if wire.Present(req.Tools) {
		v := anthropicToolsMemo.Get(req.Tools, func() any { return anthropicTools(req.Tools) })
		if err, ok := v.(error); ok {
			return err
		}
		cr.Tools = v.([]wire.Tool)
	}
	if wire.Present(req.ToolChoice) {
		var tc struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(req.ToolChoice, &tc); err != nil {
			return wire.Invalid("tool_choice", "want an object with type auto, any, tool or none")
		}
		switch tc.Type {
		case "auto":
		case "none":
			cr.Mode = wire.ToolsNone
		case "any":
			cr.Mode = wire.ToolsAny
		case "tool":
			cr.Mode, cr.Named = wire.ToolsNamed, tc.Name
		default:
			return wire.Invalid("tool_choice.type", "want auto, any, tool or none, got %q", tc.Type)
		}
	}
	for i, s := range req.StopSequences {
		if strings.TrimSpace(s) == "" {
			return wire.Invalid("stop_sequences."+strconv.Itoa(i), "each stop sequence must contain non-whitespace")
		}
	}
	format, param := req.OutputFormat, "output_format"
	if wire.Present(req.OutputConfig) {
		var oc struct {
			Format json.RawMessage `json:"format"`
		}
		if err := json.Unmarshal(req.OutputConfig, &oc); err != nil {
			return wire.Invalid("output_config", "want an object")
		}
		if wire.Present(oc.Format) {
			format, param = oc.Format, "output_config.format"
		}
	}
	if wire.Present(format) {
		var f struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(format, &f); err != nil || f.Type != "json_schema" {
			return wire.Invalid(param+".type", "want json_schema")
		}
		if !wire.Present(f.Schema) {
			return wire.Invalid(param+".schema", "field required")
		}
		cs, err := wire.CompileSchema(f.Schema, param+".schema")
		if err != nil {
			return err
		}
		cr.Format = cs
	}
	if err := cr.CheckTools("tool_choice", "tool_choice.name", "tools"); err != nil {
		return err
	}
	c.Content = cr
	return nil
}

// anthropicTools parses the Messages API's tools: []tool or an error.
func anthropicTools(raw json.RawMessage) any {
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return wire.Invalid("tools", "want an array of tools with name and input_schema")
	}
	var out []wire.Tool
	for i, t := range tools {
		p := "tools." + strconv.Itoa(i)
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool: the mock does not call those
		}
		if t.Name == "" {
			return wire.Invalid(p+".name", "field required")
		}
		if !wire.Present(t.InputSchema) {
			return wire.Invalid(p+".input_schema", "field required")
		}
		cs, err := wire.CompileSchema(t.InputSchema, p+".input_schema")
		if err != nil {
			return err
		}
		out = append(out, wire.Tool{Name: t.Name, Schema: cs})
	}
	return out
}

// anthropicToolsMemo caches the tools lists of requests: tools JSON → []tool or error.
var anthropicToolsMemo wire.Memo
