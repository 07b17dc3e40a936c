package openaichat

import (
	"encoding/json"
	"strconv"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// openaiTools parses Chat Completions' tools: []tool or an error.
func openaiTools(raw json.RawMessage) any {
	var tools []struct {
		Type     string `json:"type"`
		Function *struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return wire.Invalid("tools", "want an array of {type: function, function: {name, parameters}}")
	}
	var out []wire.Tool
	for i, t := range tools {
		p := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "function" {
			continue // custom tools take free text: the mock does not call them
		}
		if t.Function == nil || t.Function.Name == "" {
			return wire.Invalid(p+".function.name", "field required")
		}
		params := t.Function.Parameters
		if !wire.Present(params) {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		cs, err := wire.CompileSchema(params, p+".function.parameters")
		if err != nil {
			return err
		}
		out = append(out, wire.Tool{Name: t.Function.Name, Schema: cs})
	}
	return out
}

// decodeContent reads Chat Completions' content fields.
func (req *Request) decodeContent(c *wire.Call) error {
	if !wire.Present(req.Tools) && !wire.Present(req.ToolChoice) && !wire.Present(req.ResponseFormat) && !wire.Present(req.Stop) &&
		req.N == nil && !req.Logprobs && req.TopLogprobs == nil {
		return nil
	}
	cr := &wire.ContentReq{Choices: 1, IDPrefix: "call_",
		Seed: wire.ContentSeed(req.Model, req.Messages)}
	if wire.Present(req.Tools) {
		v := openaiToolsMemo.Get(req.Tools, func() any { return openaiTools(req.Tools) })
		if err, ok := v.(error); ok {
			return err
		}
		cr.Tools = v.([]wire.Tool)
	}
	if wire.Present(req.ToolChoice) {
		var mode string
		if json.Unmarshal(req.ToolChoice, &mode) == nil {
			switch mode {
			case "auto":
			case "none":
				cr.Mode = wire.ToolsNone
			case "required":
				cr.Mode = wire.ToolsAny
			default:
				return wire.Invalid("tool_choice", "want none, auto, required or a named function, got %q", mode)
			}
		} else {
			var tc struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal(req.ToolChoice, &tc); err != nil || tc.Type != "function" {
				return wire.Invalid("tool_choice", "want none, auto, required or {type: function, function: {name}}")
			}
			cr.Mode, cr.Named = wire.ToolsNamed, tc.Function.Name
		}
	}
	if wire.Present(req.ResponseFormat) {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(req.ResponseFormat, &rf); err != nil {
			return wire.Invalid("response_format", "want {type: text, json_object or json_schema}")
		}
		switch rf.Type {
		case "text":
		case "json_object":
			cs, err := wire.CompileSchema(wire.JSONObjectSchema, "response_format")
			if err != nil {
				return err
			}
			cr.Format = cs
		case "json_schema":
			if rf.JSONSchema == nil || rf.JSONSchema.Name == "" {
				return wire.Invalid("response_format.json_schema.name", "field required")
			}
			schema := rf.JSONSchema.Schema
			if !wire.Present(schema) {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			cs, err := wire.CompileSchema(schema, "response_format.json_schema.schema")
			if err != nil {
				return err
			}
			cr.Format = cs
		default:
			return wire.Invalid("response_format.type", "want text, json_object or json_schema, got %q", rf.Type)
		}
	}
	if wire.Present(req.Stop) {
		var one string
		if json.Unmarshal(req.Stop, &one) == nil {
			cr.Stops = []string{one}
		} else if err := json.Unmarshal(req.Stop, &cr.Stops); err != nil {
			return wire.Invalid("stop", "want a string or an array of up to 4 strings")
		}
		if len(cr.Stops) > 4 {
			return wire.Invalid("stop", "at most 4 stop sequences, got %d", len(cr.Stops))
		}
	}
	if n := req.N; n != nil {
		if *n < 1 || *n > 128 {
			return wire.Invalid("n", "must be in [1, 128], got %d", *n)
		}
		cr.Choices = int(*n)
	}
	cr.Logprobs = req.Logprobs
	if tl := req.TopLogprobs; tl != nil {
		if *tl < 0 || *tl > 20 {
			return wire.Invalid("top_logprobs", "must be in [0, 20], got %d", *tl)
		}
		if !req.Logprobs {
			return wire.Invalid("top_logprobs", "logprobs must be true when top_logprobs is set")
		}
		cr.TopLogprobs = int(*tl)
	}
	if err := cr.CheckTools("tool_choice", "tool_choice.function.name", "tools"); err != nil {
		return err
	}
	c.Content = cr
	return nil
}

// openaiToolsMemo caches the tools lists of requests: tools JSON → []tool or error.
var openaiToolsMemo wire.Memo
