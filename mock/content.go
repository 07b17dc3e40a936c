package mock

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/ratelab/ratelab/mock/schemagen"
)

// What an answer says beyond plain text: tool calls, structured output,
// stop sequences, several choices, log probabilities. A request that asks
// for none of these keeps call.content nil and the plain-text path.

// toolMode is a request's tool choice.
type toolMode int

const (
	toolsAuto  toolMode = iota // the model decides: Output.ToolUse
	toolsNone                  // never
	toolsAny                   // Anthropic any, OpenAI required
	toolsNamed                 // one tool, by name
)

// tool is an offered tool with a schema for its input.
type tool struct {
	name   string
	schema *compiled
}

// contentReq is what a request asks of the content.
type contentReq struct {
	tools       []tool
	mode        toolMode
	named       string    // the tool of toolsNamed
	format      *compiled // structured output; nil for text
	stops       []string
	choices     int // OpenAI n; 1 otherwise
	logprobs    bool
	topLogprobs int
	seed        uint64 // contentSeed of the request
	idPrefix    string // of tool call ids: toolu_01 or call_

	// Set by compose, outside the server's lock:
	toolIdx  int      // the tool a tool call uses
	toolDocs [][]byte // per choice: the tool call's arguments; nil when no call is possible
	docs     [][]byte // per choice: the structured output
	ids      []string // per choice: the tool call's id

	// Set by outputLength, under the lock:
	ans []choiceOut
}

// choiceOut is one choice of an answer.
type choiceOut struct {
	tool   bool     // a tool call rather than text
	text   []string // tokens, JSON-escaped for a string literal
	raw    []string // the same tokens unescaped (logprobs bytes); nil unless asked
	doc    []byte   // a tool call's whole arguments document
	n      int      // tokens
	capped bool     // ended by max_tokens
	stop   string   // the stop sequence that ended it
}

// compiled is a schema compiled once per distinct schema text.
type compiled struct {
	schema *schemagen.Schema
	sample []byte // a document generated at compile time: the fallback
}

// memo caches what is built from a request's raw JSON (a compiled schema,
// a parsed tools list): clients send the same tools and schemas with every
// request. It holds at most 1024 entries and starts over when full.
type memo struct {
	mu sync.Mutex
	m  map[string]any
}

func (c *memo) get(raw []byte, build func() any) any {
	c.mu.Lock()
	v, ok := c.m[string(raw)] // no allocation for the lookup
	c.mu.Unlock()
	if ok {
		return v
	}
	v = build()
	c.mu.Lock()
	if c.m == nil || len(c.m) >= 1024 {
		c.m = make(map[string]any)
	}
	c.m[string(raw)] = v
	c.mu.Unlock()
	return v
}

var (
	schemaMemo         memo // schema JSON → *compiled or error
	anthropicToolsMemo memo // tools JSON → []tool or error
	openaiToolsMemo    memo
)

// compileSchema compiles raw (cached), and generates one document from it
// so that a schema the generator cannot serve is a 400 at once.
func compileSchema(raw json.RawMessage, param string) (*compiled, error) {
	v := schemaMemo.get(raw, func() any { return compileUncached(raw) })
	if err, ok := v.(error); ok {
		return nil, invalid(param, "%v", err)
	}
	return v.(*compiled), nil
}

func compileUncached(raw json.RawMessage) any {
	s, err := schemagen.Compile(raw)
	if err != nil {
		return err
	}
	doc, err := s.GenerateJSON(rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		var ue *schemagen.UnsupportedError
		if errors.As(err, &ue) {
			return fmt.Errorf("the mock cannot generate for JSON Schema keyword %q at %s", ue.Keyword, ue.Location)
		}
		return err
	}
	return &compiled{schema: s, sample: doc}
}

// jsonObjectSchema is the document of OpenAI's json_object format.
var jsonObjectSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["answer"],"properties":{"answer":{"type":"string"}}}`)

func present(raw json.RawMessage) bool { return len(raw) > 0 && !isNull(raw) }

// contentSeed hashes the conversation (model, messages, system), not how
// the answer is delivered (stream, stream_options) nor the spelling of the
// tools and schemas (SDKs that encode maps in random order send the same
// schema in different bytes), so a conversation gets the same answer
// streamed or not.
func contentSeed(model string, msgs []message, fields ...[]byte) uint64 {
	h := fnv.New64a()
	h.Write([]byte(model))
	for _, m := range msgs {
		h.Write([]byte{0})
		h.Write([]byte(m.Role))
		h.Write(m.Content)
	}
	for _, f := range fields {
		h.Write([]byte{1})
		h.Write(f)
	}
	return h.Sum64()
}

// decodeContent reads the Messages API's content fields.
func (req *anthropicRequest) decodeContent(c *call) error {
	if !present(req.Tools) && !present(req.ToolChoice) && req.StopSequences == nil &&
		!present(req.OutputConfig) && !present(req.OutputFormat) {
		return nil
	}
	cr := &contentReq{choices: 1, stops: req.StopSequences, idPrefix: "toolu_01",
		seed: contentSeed(req.Model, req.Messages, req.System)}
	if present(req.Tools) {
		v := anthropicToolsMemo.get(req.Tools, func() any { return anthropicTools(req.Tools) })
		if err, ok := v.(error); ok {
			return err
		}
		cr.tools = v.([]tool)
	}
	if present(req.ToolChoice) {
		var tc struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(req.ToolChoice, &tc); err != nil {
			return invalid("tool_choice", "want an object with type auto, any, tool or none")
		}
		switch tc.Type {
		case "auto":
		case "none":
			cr.mode = toolsNone
		case "any":
			cr.mode = toolsAny
		case "tool":
			cr.mode, cr.named = toolsNamed, tc.Name
		default:
			return invalid("tool_choice.type", "want auto, any, tool or none, got %q", tc.Type)
		}
	}
	for i, s := range req.StopSequences {
		if strings.TrimSpace(s) == "" {
			return invalid("stop_sequences."+strconv.Itoa(i), "each stop sequence must contain non-whitespace")
		}
	}
	format, param := req.OutputFormat, "output_format"
	if present(req.OutputConfig) {
		var oc struct {
			Format json.RawMessage `json:"format"`
		}
		if err := json.Unmarshal(req.OutputConfig, &oc); err != nil {
			return invalid("output_config", "want an object")
		}
		if present(oc.Format) {
			format, param = oc.Format, "output_config.format"
		}
	}
	if present(format) {
		var f struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(format, &f); err != nil || f.Type != "json_schema" {
			return invalid(param+".type", "want json_schema")
		}
		if !present(f.Schema) {
			return invalid(param+".schema", "field required")
		}
		cs, err := compileSchema(f.Schema, param+".schema")
		if err != nil {
			return err
		}
		cr.format = cs
	}
	if err := cr.checkTools("tool_choice", "tool_choice.name", "tools"); err != nil {
		return err
	}
	c.content = cr
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
		return invalid("tools", "want an array of tools with name and input_schema")
	}
	var out []tool
	for i, t := range tools {
		p := "tools." + strconv.Itoa(i)
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool: the mock does not call those
		}
		if t.Name == "" {
			return invalid(p+".name", "field required")
		}
		if !present(t.InputSchema) {
			return invalid(p+".input_schema", "field required")
		}
		cs, err := compileSchema(t.InputSchema, p+".input_schema")
		if err != nil {
			return err
		}
		out = append(out, tool{name: t.Name, schema: cs})
	}
	return out
}

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
		return invalid("tools", "want an array of {type: function, function: {name, parameters}}")
	}
	var out []tool
	for i, t := range tools {
		p := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "function" {
			continue // custom tools take free text: the mock does not call them
		}
		if t.Function == nil || t.Function.Name == "" {
			return invalid(p+".function.name", "field required")
		}
		params := t.Function.Parameters
		if !present(params) {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		cs, err := compileSchema(params, p+".function.parameters")
		if err != nil {
			return err
		}
		out = append(out, tool{name: t.Function.Name, schema: cs})
	}
	return out
}

// decodeContent reads Chat Completions' content fields.
func (req *openaiRequest) decodeContent(c *call) error {
	if !present(req.Tools) && !present(req.ToolChoice) && !present(req.ResponseFormat) && !present(req.Stop) &&
		req.N == nil && !req.Logprobs && req.TopLogprobs == nil {
		return nil
	}
	cr := &contentReq{choices: 1, idPrefix: "call_",
		seed: contentSeed(req.Model, req.Messages)}
	if present(req.Tools) {
		v := openaiToolsMemo.get(req.Tools, func() any { return openaiTools(req.Tools) })
		if err, ok := v.(error); ok {
			return err
		}
		cr.tools = v.([]tool)
	}
	if present(req.ToolChoice) {
		var mode string
		if json.Unmarshal(req.ToolChoice, &mode) == nil {
			switch mode {
			case "auto":
			case "none":
				cr.mode = toolsNone
			case "required":
				cr.mode = toolsAny
			default:
				return invalid("tool_choice", "want none, auto, required or a named function, got %q", mode)
			}
		} else {
			var tc struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal(req.ToolChoice, &tc); err != nil || tc.Type != "function" {
				return invalid("tool_choice", "want none, auto, required or {type: function, function: {name}}")
			}
			cr.mode, cr.named = toolsNamed, tc.Function.Name
		}
	}
	if present(req.ResponseFormat) {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(req.ResponseFormat, &rf); err != nil {
			return invalid("response_format", "want {type: text, json_object or json_schema}")
		}
		switch rf.Type {
		case "text":
		case "json_object":
			cs, err := compileSchema(jsonObjectSchema, "response_format")
			if err != nil {
				return err
			}
			cr.format = cs
		case "json_schema":
			if rf.JSONSchema == nil || rf.JSONSchema.Name == "" {
				return invalid("response_format.json_schema.name", "field required")
			}
			schema := rf.JSONSchema.Schema
			if !present(schema) {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			cs, err := compileSchema(schema, "response_format.json_schema.schema")
			if err != nil {
				return err
			}
			cr.format = cs
		default:
			return invalid("response_format.type", "want text, json_object or json_schema, got %q", rf.Type)
		}
	}
	if present(req.Stop) {
		var one string
		if json.Unmarshal(req.Stop, &one) == nil {
			cr.stops = []string{one}
		} else if err := json.Unmarshal(req.Stop, &cr.stops); err != nil {
			return invalid("stop", "want a string or an array of up to 4 strings")
		}
		if len(cr.stops) > 4 {
			return invalid("stop", "at most 4 stop sequences, got %d", len(cr.stops))
		}
	}
	if n := req.N; n != nil {
		if *n < 1 || *n > 128 {
			return invalid("n", "must be in [1, 128], got %d", *n)
		}
		cr.choices = int(*n)
	}
	cr.logprobs = req.Logprobs
	if tl := req.TopLogprobs; tl != nil {
		if *tl < 0 || *tl > 20 {
			return invalid("top_logprobs", "must be in [0, 20], got %d", *tl)
		}
		if !req.Logprobs {
			return invalid("top_logprobs", "logprobs must be true when top_logprobs is set")
		}
		cr.topLogprobs = int(*tl)
	}
	if err := cr.checkTools("tool_choice", "tool_choice.function.name", "tools"); err != nil {
		return err
	}
	c.content = cr
	return nil
}

// checkTools checks a forced tool choice against the tools offered.
func (cr *contentReq) checkTools(choiceParam, nameParam, toolsParam string) error {
	switch cr.mode {
	case toolsAny:
		if len(cr.tools) == 0 {
			return invalid(choiceParam, "a forced tool choice needs tools with a schema")
		}
	case toolsNamed:
		for i, t := range cr.tools {
			if t.name == cr.named {
				cr.toolIdx = i
				return nil
			}
		}
		return invalid(nameParam, "no tool named %q in %s", cr.named, toolsParam)
	}
	return nil
}

// compose generates the documents an answer may carry, outside the
// server's lock: its draws come from the server's seed and the
// conversation (contentSeed), so the same conversation gets the same
// documents.
func (s *Server) compose(c *call) {
	cr := c.content
	if cr == nil {
		return
	}
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), cr.seed))
	gen := func(cs *compiled) []byte {
		doc, err := cs.schema.GenerateJSON(rng)
		if err != nil {
			return cs.sample // a seed the generator could not serve: the compile-time document
		}
		return doc
	}
	if len(cr.tools) > 0 && cr.mode != toolsNone && (cr.mode != toolsAuto || s.cfg.Output.ToolUse > 0) {
		if cr.mode != toolsNamed {
			cr.toolIdx = rng.IntN(len(cr.tools))
		}
		for range cr.choices {
			cr.toolDocs = append(cr.toolDocs, gen(cr.tools[cr.toolIdx].schema))
			id := appendBase62([]byte(cr.idPrefix), rng.Uint64(), 11)
			cr.ids = append(cr.ids, string(appendBase62(id, rng.Uint64(), 11)))
		}
	}
	if cr.format != nil {
		for range cr.choices {
			cr.docs = append(cr.docs, gen(cr.format))
		}
	}
}

// outputLength draws an answer's length under the server's lock: the
// Output.Tokens distribution (natural below max_tokens when Output.Length
// says so), then, for a request with content fields, each choice's
// content. It returns the number of tokens the response is paced by and
// whether it ended at max_tokens.
func (s *Server) outputLength(c *call) (int, bool) {
	n := c.maxTokens
	switch t := s.cfg.Output.Tokens; {
	case s.text != nil:
		n = min(n, len(s.text))
	case t.Kind == Fixed:
		n = min(n, t.Min)
	case t.Kind == Uniform:
		n = min(n, t.Min+s.rng.IntN(t.Max-t.Min+1))
	case t.Kind == LogNormal:
		n = min(n, drawLogNormal(s.rng, t.Mean, t.Sigma))
	case t.Kind == Histogram:
		n = min(n, t.Observed.draw(s.rng))
	case s.cfg.Output.Length == LengthNatural && n > 1:
		lo := (n + 1) / 2
		n = lo + s.rng.IntN(n-lo)
	}
	// The response stopped at max_tokens, not at the end of what it had
	// to say.
	capped := n == c.maxTokens && (s.text == nil || n < len(s.text))
	cr := c.content
	if cr == nil {
		return n, capped
	}
	useTool := cr.toolDocs != nil && (cr.mode != toolsAuto || s.chance(s.cfg.Output.ToolUse))
	cr.ans = make([]choiceOut, cr.choices)
	longest := 0
	for k := range cr.ans {
		ch := &cr.ans[k]
		switch {
		case useTool:
			ch.tool, ch.doc = true, cr.toolDocs[k]
			ch.text = textTokens(string(ch.doc))
		case cr.format != nil:
			ch.text = textTokens(string(cr.docs[k]))
		default:
			ch.text = s.choiceText(k, n)
		}
		ch.n = len(ch.text)
		if !ch.tool && cr.format == nil {
			ch.n, ch.capped = n, capped
			ch.stopAt(cr.stops)
		} else if ch.n > c.maxTokens {
			ch.n, ch.capped = c.maxTokens, true
		}
		if cr.logprobs && !ch.tool {
			ch.raw = rawTokens(ch.text[:ch.n])
		}
		longest = max(longest, ch.n)
	}
	return longest, cr.ans[0].capped
}

// choiceText is choice k's text tokens for a plain answer of n tokens:
// Output.Text, or the filler, shifted by k words so choices differ.
func (s *Server) choiceText(k, n int) []string {
	if s.text != nil {
		return s.text
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fillerWords[fillerIndex(i+7*k)]
	}
	return out
}

// stopAt cuts ch at the first stop sequence in its first ch.n tokens.
func (ch *choiceOut) stopAt(stops []string) {
	if len(stops) == 0 {
		return
	}
	raw := rawTokens(ch.text[:ch.n])
	text := strings.Join(raw, "")
	at, which := -1, ""
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (at < 0 || i < at) {
			at, which = i, s
		}
	}
	if at < 0 {
		return
	}
	ch.text = textTokens(text[:at])
	ch.n, ch.capped, ch.stop = len(ch.text), false, which
}

// rawTokens unescapes JSON-escaped tokens.
func rawTokens(esc []string) []string {
	out := make([]string, len(esc))
	for i, t := range esc {
		if strings.IndexByte(t, '\\') < 0 {
			out[i] = t
			continue
		}
		var s string
		if json.Unmarshal([]byte(`"`+t+`"`), &s) != nil {
			s = t
		}
		out[i] = s
	}
	return out
}

// emitted is how many of ch's tokens a response of r.n tokens carries.
func (ch *choiceOut) emitted(r *result) int { return min(ch.n, r.n) }

// whole reports whether the response carries all of ch.
func (ch *choiceOut) whole(r *result) bool { return ch.n <= r.n }

// appendTokens appends ch's tokens [from, to), clipped to ch.
func (ch *choiceOut) appendTokens(b []byte, from, to int) []byte {
	for _, t := range ch.text[min(from, ch.n):min(to, ch.n)] {
		b = append(b, t...)
	}
	return b
}

// outputTokens is the usage of all choices.
func (cr *contentReq) outputTokens(r *result) int {
	n := 0
	for i := range cr.ans {
		n += cr.ans[i].emitted(r)
	}
	return n
}

// appendLogprobs appends the logprobs object of ch's tokens [from, to).
func (cr *contentReq) appendLogprobs(b []byte, ch *choiceOut, from, to int) []byte {
	if !cr.logprobs || ch.tool {
		return append(b, "null"...)
	}
	b = append(b, `{"content":[`...)
	for i := min(from, ch.n); i < min(to, ch.n); i++ {
		if i > from {
			b = append(b, ',')
		}
		b = appendLogprob(b, ch.raw[i], i, 0)
		b = append(b, `,"top_logprobs":[`...)
		for j := range cr.topLogprobs {
			if j > 0 {
				b = append(b, ',')
			}
			alt := ch.raw[i]
			if j > 0 {
				alt = fillerWords[(fillerIndex(i)+j)%len(fillerWords)]
			}
			b = appendLogprob(b, alt, i, j)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	return append(b, `],"refusal":null}`...)
}

// appendLogprob appends {"token","logprob","bytes" (without the closing
// brace) for alternative j of token i: a deterministic, decreasing
// log probability below 0.
func appendLogprob(b []byte, tok string, i, j int) []byte {
	b = append(b, `{"token":`...)
	b = appendJSONString(b, tok)
	b = append(b, `,"logprob":`...)
	lp := -0.001*float64(1+i%17) - 1.5*float64(j)
	b = strconv.AppendFloat(b, lp, 'f', 4, 64)
	b = append(b, `,"bytes":[`...)
	for k := 0; k < len(tok); k++ {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(tok[k]), 10)
	}
	return append(b, ']')
}
