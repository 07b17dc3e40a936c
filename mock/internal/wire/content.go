package wire

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
	ToolsAuto  toolMode = iota // the model decides: Output.ToolUse
	ToolsNone                  // never
	ToolsAny                   // Anthropic any, OpenAI required
	ToolsNamed                 // one tool, by name
)

// Tool is an offered tool with a schema for its input.
type Tool struct {
	Name   string
	Schema *Compiled
}

// ContentReq is what a request asks of the content.
type ContentReq struct {
	Tools       []Tool
	Mode        toolMode
	Named       string    // the tool of toolsNamed
	Format      *Compiled // structured output; nil for text
	Stops       []string
	Choices     int // OpenAI n; 1 otherwise
	Logprobs    bool
	TopLogprobs int
	Seed        uint64 // contentSeed of the request
	IDPrefix    string // of tool call ids: toolu_01 or call_

	// Set by compose, outside the server's lock:
	ToolIdx  int      // the tool a tool call uses
	ToolDocs [][]byte // per choice: the tool call's arguments; nil when no call is possible
	Docs     [][]byte // per choice: the structured output
	IDs      []string // per choice: the tool call's id

	// Set by outputLength, under the lock:
	Ans []Choice
}

// Choice is one choice of an answer.
type Choice struct {
	Tool   bool     // a tool call rather than text
	Text   []string // tokens, JSON-escaped for a string literal
	Raw    []string // the same tokens unescaped (logprobs bytes); nil unless asked
	Doc    []byte   // a tool call's whole arguments document
	N      int      // tokens
	Capped bool     // ended by max_tokens
	Stop   string   // the stop sequence that ended it
}

// Compiled is a schema compiled once per distinct schema text.
type Compiled struct {
	Schema *schemagen.Schema
	Sample []byte // a document generated at compile time: the fallback
}

// Memo caches what is built from a request's raw JSON (a compiled schema,
// a parsed tools list): clients send the same tools and schemas with every
// request. It holds at most 1024 entries and starts over when full.
type Memo struct {
	mu sync.Mutex
	m  map[string]any
}

func (c *Memo) Get(raw []byte, build func() any) any {
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
	schemaMemo Memo // schema JSON → *compiled or error
)

// CompileSchema compiles raw (cached), and generates one document from it
// so that a schema the generator cannot serve is a 400 at once.
func CompileSchema(raw json.RawMessage, param string) (*Compiled, error) {
	v := schemaMemo.Get(raw, func() any { return compileUncached(raw) })
	if err, ok := v.(error); ok {
		return nil, Invalid(param, "%v", err)
	}
	return v.(*Compiled), nil
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
	return &Compiled{Schema: s, Sample: doc}
}

// JSONObjectSchema is the document of OpenAI's json_object format.
var JSONObjectSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["answer"],"properties":{"answer":{"type":"string"}}}`)

func Present(raw json.RawMessage) bool { return len(raw) > 0 && !IsNull(raw) }

// ContentSeed hashes the conversation (model, messages, system), not how
// the answer is delivered (stream, stream_options) nor the spelling of the
// tools and schemas (SDKs that encode maps in random order send the same
// schema in different bytes), so a conversation gets the same answer
// streamed or not.
func ContentSeed(model string, msgs []Message, fields ...[]byte) uint64 {
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

// CheckTools checks a forced tool choice against the tools offered.
func (cr *ContentReq) CheckTools(choiceParam, nameParam, toolsParam string) error {
	switch cr.Mode {
	case ToolsAny:
		if len(cr.Tools) == 0 {
			return Invalid(choiceParam, "a forced tool choice needs tools with a schema")
		}
	case ToolsNamed:
		for i, t := range cr.Tools {
			if t.Name == cr.Named {
				cr.ToolIdx = i
				return nil
			}
		}
		return Invalid(nameParam, "no tool named %q in %s", cr.Named, toolsParam)
	}
	return nil
}

// StopAt cuts ch at the first stop sequence in its first ch.n tokens.
func (ch *Choice) StopAt(stops []string) {
	if len(stops) == 0 {
		return
	}
	raw := RawTokens(ch.Text[:ch.N])
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
	ch.Text = TextTokens(text[:at])
	ch.N, ch.Capped, ch.Stop = len(ch.Text), false, which
}

// RawTokens unescapes JSON-escaped tokens.
func RawTokens(esc []string) []string {
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

// Emitted is how many of ch's tokens a response of r.n tokens carries.
func (ch *Choice) Emitted(r *Result) int { return min(ch.N, r.N) }

// Whole reports whether the response carries all of ch.
func (ch *Choice) Whole(r *Result) bool { return ch.N <= r.N }

// AppendTokens appends ch's tokens [from, to), clipped to ch.
func (ch *Choice) AppendTokens(b []byte, from, to int) []byte {
	for _, t := range ch.Text[min(from, ch.N):min(to, ch.N)] {
		b = append(b, t...)
	}
	return b
}

// OutputTokens is the usage of all choices.
func (cr *ContentReq) OutputTokens(r *Result) int {
	n := 0
	for i := range cr.Ans {
		n += cr.Ans[i].Emitted(r)
	}
	return n
}

// AppendLogprobs appends the logprobs object of ch's tokens [from, to).
func (cr *ContentReq) AppendLogprobs(b []byte, ch *Choice, from, to int) []byte {
	if !cr.Logprobs || ch.Tool {
		return append(b, "null"...)
	}
	b = append(b, `{"content":[`...)
	for i := min(from, ch.N); i < min(to, ch.N); i++ {
		if i > from {
			b = append(b, ',')
		}
		b = appendLogprob(b, ch.Raw[i], i, 0)
		b = append(b, `,"top_logprobs":[`...)
		for j := range cr.TopLogprobs {
			if j > 0 {
				b = append(b, ',')
			}
			alt := ch.Raw[i]
			if j > 0 {
				alt = FillerWords[(FillerIndex(i)+j)%len(FillerWords)]
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
	b = AppendJSONString(b, tok)
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
