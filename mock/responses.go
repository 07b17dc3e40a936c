package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// responses is the OpenAI Responses API wire format: POST /v1/responses.
// Its errors, rate-limit headers, request id and overload status are Chat
// Completions' (the embedded openai); it has its own request shape, Response
// object and event stream. Shapes follow the OpenAPI document of
// github.com/openai/openai-openapi (testdata/openai-responses.schema.json
// holds the extracted schemas the tests validate every body and event
// against).
//
// What the mock serves: input as a string or a list of items (messages with
// string or part-list content, function calls and their outputs, other items
// counted by their JSON), instructions, max_output_tokens (default
// Output.DefaultMaxTokens, else 256; at least 16, as the API requires),
// function tools and tool_choice, text.format (text, json_object,
// json_schema), temperature, top_p, metadata, store and the other fields the
// Response object repeats. The answer is text; a response cut at
// max_output_tokens has status incomplete (incomplete_details.reason
// max_output_tokens) and its stream ends with response.incomplete rather
// than response.completed. An injected stream error ends the stream with
// response.failed. Nothing is stored: previous_response_id, conversation and
// item_reference name responses the mock never kept, and get the API's 400.
type responses struct{ openai }

func (responses) name() string { return "openai-responses" }

// minOutputTokens is the API's lower bound on max_output_tokens.
const minOutputTokens = 16

// responsesCall is what a Responses request adds to its call.
type responsesCall struct {
	// echo is the request fields the Response object repeats (instructions,
	// tools, text, temperature, …), encoded once as JSON object members
	// without the braces.
	echo []byte
	seq  int // the next event's sequence_number
}

// responsesRequest holds the fields the mock reads. Pointers tell absent
// (or null) from zero values.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Stream             bool              `json:"stream"`
	StreamOptions      json.RawMessage   `json:"stream_options"`
	Tools              json.RawMessage   `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Text               *responsesText    `json:"text"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	TopLogprobs        *int64            `json:"top_logprobs"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	MaxToolCalls       *int64            `json:"max_tool_calls"`
	Store              *bool             `json:"store"`
	Background         *bool             `json:"background"`
	Metadata           map[string]string `json:"metadata"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Conversation       json.RawMessage   `json:"conversation"`
	Reasoning          *struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	Truncation       *string `json:"truncation"`
	User             *string `json:"user"`
	PromptCacheKey   *string `json:"prompt_cache_key"`
	SafetyIdentifier *string `json:"safety_identifier"`
}

type responsesText struct {
	Format    json.RawMessage `json:"format"`
	Verbosity *string         `json:"verbosity"`
}

// responseEcho is the part of a Response object that repeats the request.
type responseEcho struct {
	Background         bool              `json:"background"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	MaxToolCalls       *int64            `json:"max_tool_calls"`
	Metadata           map[string]string `json:"metadata"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	PromptCacheKey     *string           `json:"prompt_cache_key"`
	Reasoning          struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	SafetyIdentifier *string `json:"safety_identifier"`
	ServiceTier      string  `json:"service_tier"`
	Store            bool    `json:"store"`
	Temperature      float64 `json:"temperature"`
	Text             struct {
		Format    any    `json:"format"`
		Verbosity string `json:"verbosity"`
	} `json:"text"`
	ToolChoice  any            `json:"tool_choice"`
	Tools       []functionTool `json:"tools"`
	TopLogprobs int64          `json:"top_logprobs"`
	TopP        float64        `json:"top_p"`
	Truncation  string         `json:"truncation"`
	User        *string        `json:"user,omitempty"` // a string or absent, never null
}

// functionTool is a function tool as a request sends it and a Response
// repeats it.
type functionTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// reasoningEfforts are the values of reasoning.effort.
var reasoningEfforts = map[string]bool{"none": true, "minimal": true, "low": true, "medium": true, "high": true, "xhigh": true, "max": true}

// toolName is the API's pattern for function and schema names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (responses) decode(body []byte, defaultMax int) (*call, error) {
	req := responsesRequest{Model: absentString}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, describeJSONError(err)
	}
	if err := checkModel(req.Model); err != nil {
		return nil, err
	}
	c := &call{model: req.Model, stream: req.Stream, maxTokens: defaultMax}
	if c.maxTokens == 0 {
		c.maxTokens = defaultMaxTokens
	}
	var echo responseEcho
	if v := req.MaxOutputTokens; v != nil {
		if *v < minOutputTokens {
			return nil, invalid("max_output_tokens", "must be at least %d, got %d", minOutputTokens, *v)
		}
		n, err := checkMaxTokens("max_output_tokens", *v)
		if err != nil {
			return nil, err
		}
		c.maxTokens = n
		echo.MaxOutputTokens = v
	}
	if req.PreviousResponseID != nil {
		return nil, notStored("previous_response_id", "previous_response_not_found", "Previous response with id %q not found: the mock stores no responses", *req.PreviousResponseID)
	}
	if len(req.Conversation) > 0 && !isNull(req.Conversation) {
		return nil, notStored("conversation", "", "conversations are not supported: the mock stores no conversations")
	}
	if len(req.StreamOptions) > 0 && !isNull(req.StreamOptions) && !c.stream {
		return nil, invalid("stream_options", "only allowed when stream is true")
	}

	// Input tokens: the instructions and every input item count as one
	// message each, as EstimateTokens documents; tools count their JSON.
	if req.Instructions != nil {
		c.input += messageTokens(utf8.RuneCountInString(*req.Instructions))
		echo.Instructions = req.Instructions
	}
	n, err := inputTokens(req.Input)
	if err != nil {
		return nil, err
	}
	c.input += n
	if echo.Tools, err = decodeFunctionTools(req.Tools); err != nil {
		return nil, err
	}
	if len(echo.Tools) > 0 {
		c.input += (utf8.RuneCount(req.Tools) + 3) / 4
	}
	if echo.ToolChoice, err = decodeToolChoice(req.ToolChoice, echo.Tools); err != nil {
		return nil, err
	}
	echo.Text.Format, echo.Text.Verbosity = &plainText, "medium"
	if t := req.Text; t != nil {
		if len(t.Format) > 0 && !isNull(t.Format) {
			if echo.Text.Format, err = decodeTextFormat(t.Format); err != nil {
				return nil, err
			}
		}
		if v := t.Verbosity; v != nil {
			if *v != "low" && *v != "medium" && *v != "high" {
				return nil, invalid("text.verbosity", "want low, medium or high, got %q", *v)
			}
			echo.Text.Verbosity = *v
		}
	}

	// Their ranges are strictness's to check (checkBody), as for the
	// other APIs.
	echo.Temperature, echo.TopP = 1, 1
	if v := req.Temperature; v != nil {
		echo.Temperature = *v
	}
	if v := req.TopP; v != nil {
		echo.TopP = *v
	}
	if v := req.TopLogprobs; v != nil {
		if *v < 0 || *v > 20 {
			return nil, invalid("top_logprobs", "must be in [0, 20], got %d", *v)
		}
		echo.TopLogprobs = *v
	}
	if v := req.MaxToolCalls; v != nil {
		if *v < 1 {
			return nil, invalid("max_tool_calls", "must be at least 1, got %d", *v)
		}
		echo.MaxToolCalls = v
	}
	if len(req.Metadata) > 16 {
		return nil, invalid("metadata", "at most 16 key-value pairs, got %d", len(req.Metadata))
	}
	echo.Metadata = req.Metadata
	if echo.Metadata == nil {
		echo.Metadata = noMetadata
	}
	echo.Truncation = "disabled"
	if v := req.Truncation; v != nil {
		if *v != "auto" && *v != "disabled" {
			return nil, invalid("truncation", "want auto or disabled, got %q", *v)
		}
		echo.Truncation = *v
	}
	if r := req.Reasoning; r != nil {
		if r.Effort != nil && !reasoningEfforts[*r.Effort] {
			return nil, invalid("reasoning.effort", "want none, minimal, low, medium, high, xhigh or max, got %q", *r.Effort)
		}
		if r.Summary != nil && *r.Summary != "auto" && *r.Summary != "concise" && *r.Summary != "detailed" {
			return nil, invalid("reasoning.summary", "want auto, concise or detailed, got %q", *r.Summary)
		}
		echo.Reasoning.Effort, echo.Reasoning.Summary = r.Effort, r.Summary
	}
	if v := req.SafetyIdentifier; v != nil && utf8.RuneCountInString(*v) > 64 {
		return nil, invalid("safety_identifier", "at most 64 characters, got %d", utf8.RuneCountInString(*v))
	}
	echo.ParallelToolCalls = req.ParallelToolCalls == nil || *req.ParallelToolCalls
	echo.Store = req.Store == nil || *req.Store
	echo.Background = req.Background != nil && *req.Background
	if echo.Background {
		return nil, invalid("background", "background responses are not supported: the mock stores no responses")
	}
	echo.ServiceTier = "default"
	echo.User, echo.PromptCacheKey, echo.SafetyIdentifier = req.User, req.PromptCacheKey, req.SafetyIdentifier

	b, err := json.Marshal(&echo)
	if err != nil {
		return nil, &badRequest{msg: "request body: " + err.Error()}
	}
	c.responses = &responsesCall{echo: b[1 : len(b)-1]}
	return c, nil
}

// notStored is the 400 the API answers for a reference to something it does
// not have, with its code when known.
func notStored(param, code, format string, args ...any) error {
	return &badRequest{param: param, code: code, msg: fmt.Sprintf(format, args...)}
}

// inputTokens counts input, a string or a list of items.
func inputTokens(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return 0, invalid("input", "field required (the mock stores no prompts or previous responses to take it from)")
	}
	switch raw[0] {
	case '"':
		n, err := textLen(raw, "input")
		return messageTokens(n), err
	case '[':
	default:
		return 0, invalid("input", "want a string or an array of input items")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return 0, invalid("input", "invalid array")
	}
	if len(items) == 0 {
		return 0, invalid("input", "at least one input item is required")
	}
	total := 0
	for i, it := range items {
		n, err := itemLen(it, "input."+strconv.Itoa(i))
		if err != nil {
			return 0, err
		}
		total += messageTokens(n)
	}
	return total, nil
}

// inputRoles are the roles of message items.
var inputRoles = map[string]bool{"user": true, "assistant": true, "system": true, "developer": true}

// itemLen is the length in characters of one input item: a message's text
// (its string content or its text parts; other parts count their JSON), a
// function call output's text, or any other item's JSON.
func itemLen(raw json.RawMessage, path string) (int, error) {
	var it struct {
		Type    *string         `json:"type"`
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
		ID      *string         `json:"id"`
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return 0, invalid(path, "want an input item object")
	}
	typ := "message"
	if it.Type != nil {
		typ = *it.Type
	}
	switch typ {
	case "message":
		switch {
		case it.Role == nil:
			return 0, invalid(path+".role", "field required")
		case !inputRoles[*it.Role]:
			return 0, invalid(path+".role", "want user, assistant, system or developer, got %q", *it.Role)
		}
		return partsLen(it.Content, path+".content")
	case "function_call_output", "custom_tool_call_output":
		o := bytes.TrimSpace(it.Output)
		if len(o) > 0 && o[0] == '"' {
			return textLen(o, path+".output")
		}
		return utf8.RuneCount(raw), nil
	case "item_reference":
		id := ""
		if it.ID != nil {
			id = *it.ID
		}
		return 0, notStored(path+".id", "", "Item with id %q not found: the mock stores no items", id)
	case "":
		return 0, invalid(path+".type", "must not be empty")
	}
	return utf8.RuneCount(raw), nil
}

// partsLen is the length of a message's content: a string, or a list of
// parts whose input_text and output_text parts count their text, refusal
// parts their refusal, and other parts (images, files) their JSON.
func partsLen(raw json.RawMessage, path string) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return 0, invalid(path, "field required")
	}
	switch raw[0] {
	case '"':
		return textLen(raw, path)
	case '[':
	default:
		return 0, invalid(path, "want a string or an array of content parts")
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return 0, invalid(path, "invalid array")
	}
	n := 0
	for j, p := range parts {
		pp := path + "." + strconv.Itoa(j)
		var part struct {
			Type    *string         `json:"type"`
			Text    json.RawMessage `json:"text"`
			Refusal json.RawMessage `json:"refusal"`
		}
		if err := json.Unmarshal(p, &part); err != nil {
			return 0, invalid(pp, "want a content part object")
		}
		if part.Type == nil || *part.Type == "" {
			return 0, invalid(pp+".type", "field required")
		}
		var l int
		var err error
		switch *part.Type {
		case "input_text", "output_text":
			l, err = textLen(part.Text, pp+".text")
		case "refusal":
			l, err = textLen(part.Refusal, pp+".refusal")
		case "input_image", "input_file", "input_audio":
			l = utf8.RuneCount(p)
		default:
			return 0, invalid(pp+".type", "want input_text, input_image, input_file, output_text or refusal, got %q", *part.Type)
		}
		if err != nil {
			return 0, err
		}
		n += l
	}
	return n, nil
}

// textLen is the length in characters of a JSON string; anything else is a
// 400 naming path.
func textLen(raw json.RawMessage, path string) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return 0, invalid(path, "want a string")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, invalid(path, "invalid string")
	}
	return utf8.RuneCountInString(s), nil
}

// decodeFunctionTools checks the tools: function tools only, each named
// as the API requires; their Response form has strict (default true) and
// parameters set. Built-in tools (web search, file search, …) are not
// simulated and get a 400.
func decodeFunctionTools(raw json.RawMessage) ([]functionTool, error) {
	tools := []functionTool{}
	if len(raw) == 0 || isNull(raw) {
		return tools, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, invalid("tools", "want an array of tools")
	}
	seen := make(map[string]bool, len(list))
	for i, t := range list {
		path := "tools." + strconv.Itoa(i)
		var ft functionTool
		if err := json.Unmarshal(t, &ft); err != nil {
			return nil, invalid(path, "want a tool object with type, name and parameters")
		}
		switch {
		case ft.Type == "":
			return nil, invalid(path+".type", "field required")
		case ft.Type != "function":
			return nil, invalid(path+".type", "the mock serves function tools only, got %q", ft.Type)
		case !toolName.MatchString(ft.Name):
			return nil, invalid(path+".name", "want 1 to 64 letters, digits, underscores or dashes, got %q", ft.Name)
		case seen[ft.Name]:
			return nil, invalid(path+".name", "duplicate function name %q", ft.Name)
		}
		seen[ft.Name] = true
		p := bytes.TrimSpace(ft.Parameters)
		switch {
		case len(p) == 0:
			ft.Parameters = json.RawMessage("null")
		case p[0] != '{' && !isNull(p):
			return nil, invalid(path+".parameters", "want a JSON Schema object")
		}
		if ft.Strict == nil {
			ft.Strict = new(bool)
			*ft.Strict = true
		}
		tools = append(tools, ft)
	}
	return tools, nil
}

// decodeToolChoice checks tool_choice against the tools: none, auto,
// required, a named function, or allowed_tools. Absent is auto.
func decodeToolChoice(raw json.RawMessage, tools []functionTool) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return "auto", nil
	}
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s) //nolint:errcheck // a valid string literal
		switch s {
		case "none", "auto":
			return s, nil
		case "required":
			if len(tools) == 0 {
				return nil, invalid("tool_choice", `"required" needs at least one tool in tools`)
			}
			return s, nil
		}
		return nil, invalid("tool_choice", "want none, auto, required or an object, got %q", s)
	}
	var tc struct {
		Type  string            `json:"type"`
		Name  string            `json:"name"`
		Mode  string            `json:"mode"`
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &tc); err != nil {
		return nil, invalid("tool_choice", "want none, auto, required or a tool choice object")
	}
	switch tc.Type {
	case "function":
		if !slices.ContainsFunc(tools, func(t functionTool) bool { return t.Name == tc.Name }) {
			return nil, invalid("tool_choice.name", "no function named %q in tools", tc.Name)
		}
		return map[string]string{"type": "function", "name": tc.Name}, nil
	case "allowed_tools":
		if tc.Mode != "auto" && tc.Mode != "required" {
			return nil, invalid("tool_choice.mode", "want auto or required, got %q", tc.Mode)
		}
		if tc.Tools == nil {
			tc.Tools = []json.RawMessage{}
		}
		for i, t := range tc.Tools {
			if t = bytes.TrimSpace(t); len(t) == 0 || t[0] != '{' {
				return nil, invalid("tool_choice.tools."+strconv.Itoa(i), "want a tool object")
			}
		}
		return map[string]any{"type": "allowed_tools", "mode": tc.Mode, "tools": tc.Tools}, nil
	case "":
		return nil, invalid("tool_choice.type", "field required")
	}
	return nil, invalid("tool_choice.type", "the mock serves function tools only, got %q", tc.Type)
}

// Defaults the Response repeats when the request has none; never written
// to.
var (
	plainText  = textFormat{Type: "text"}
	noMetadata = map[string]string{}
)

// textFormat is text.format: {type: text}, {type: json_object} or
// {type: json_schema, name, schema, strict, description}.
type textFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description *string         `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

func decodeTextFormat(raw json.RawMessage) (*textFormat, error) {
	var f textFormat
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, invalid("text.format", "want an object with type text, json_object or json_schema")
	}
	switch f.Type {
	case "text", "json_object":
		return &textFormat{Type: f.Type}, nil
	case "json_schema":
		if !toolName.MatchString(f.Name) {
			return nil, invalid("text.format.name", "want 1 to 64 letters, digits, underscores or dashes, got %q", f.Name)
		}
		if s := bytes.TrimSpace(f.Schema); len(s) == 0 || s[0] != '{' {
			return nil, invalid("text.format.schema", "field required: a JSON Schema object")
		}
		if f.Strict == nil {
			f.Strict = new(bool)
		}
		return &f, nil
	case "":
		return nil, invalid("text.format.type", "field required")
	}
	return nil, invalid("text.format.type", "want text, json_object or json_schema, got %q", f.Type)
}

// status is the Response's status once its output is complete.
func (r *result) status() string {
	if r.capped {
		return "incomplete"
	}
	return "completed"
}

// itemID is the id of the response's message item: the response id's
// random part under the msg_ prefix.
func itemID(b []byte, r *result) []byte {
	b = append(b, "msg_"...)
	if len(r.id) > len("resp_") {
		return append(b, r.id[len("resp_"):]...)
	}
	return append(b, r.id...)
}

// appendOutputText appends an output_text content part holding tokens
// [0, n) of the answer.
func appendOutputText(b []byte, r *result, n int) []byte {
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":"`...)
	b = appendText(b, r, 0, n)
	return append(b, `"}`...)
}

// appendMessageItem appends the output message; content false leaves its
// content empty (the item as first announced).
func appendMessageItem(b []byte, r *result, status string, content bool) []byte {
	b = append(b, `{"id":"`...)
	b = itemID(b, r)
	b = append(b, `","type":"message","status":"`...)
	b = append(b, status...)
	b = append(b, `","content":[`...)
	if content {
		b = appendOutputText(b, r, r.n)
	}
	return append(b, `],"role":"assistant"}`...)
}

// appendResponse appends the Response object with the given status:
// in_progress (no output yet), completed or incomplete (the whole output
// and usage) or failed.
func appendResponse(b []byte, c *call, r *result, status string) []byte {
	b = slices.Grow(b, 900+4*r.n+len(c.model)+len(c.responses.echo))
	b = append(b, `{"id":"`...)
	b = append(b, r.id...)
	b = append(b, `","object":"response","created_at":`...)
	b = strconv.AppendInt(b, r.created.Unix(), 10)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","completed_at":`...)
	if status == "completed" {
		b = strconv.AppendInt(b, time.Now().Unix(), 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"error":`...)
	if status == "failed" {
		b = append(b, `{"code":"server_error","message":"The server is overloaded. Please try again later."}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if status == "incomplete" {
		b = append(b, `{"reason":"max_output_tokens"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.model)
	b = append(b, `,"output":[`...)
	final := status == "completed" || status == "incomplete"
	if final {
		b = appendMessageItem(b, r, status, true)
	}
	b = append(b, ']')
	if final { // The schema has no null usage: absent until the end.
		b = append(b, `,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(c.input), 10)
		b = append(b, `,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0},"output_tokens":`...)
		b = strconv.AppendInt(b, int64(r.n), 10)
		b = append(b, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
		b = strconv.AppendInt(b, int64(c.input+r.n), 10)
		b = append(b, '}')
	}
	b = append(b, ',')
	b = append(b, c.responses.echo...)
	return append(b, '}')
}

func (responses) body(b []byte, c *call, r *result) ([]byte, error) {
	return appendResponse(b, c, r, r.status()), nil
}

// event appends the start of an event frame up to the members after
// sequence_number, numbering the events of c's stream from 0.
func event(b []byte, c *call, typ string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, int64(c.responses.seq), 10)
	c.responses.seq++
	return b
}

// endEvent closes an event's object and frame.
func endEvent(b []byte) []byte { return append(b, "}\n\n"...) }

// partHead appends the members that place an event in the message's first
// content part.
func partHead(b []byte, r *result) []byte {
	b = append(b, `,"item_id":"`...)
	b = itemID(b, r)
	return append(b, `","output_index":0,"content_index":0`...)
}

func (responses) streamStart(b []byte, c *call, r *result) []byte {
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		b = event(b, c, typ)
		b = append(b, `,"response":`...)
		b = appendResponse(b, c, r, "in_progress")
		b = endEvent(b)
	}
	b = event(b, c, "response.output_item.added")
	b = append(b, `,"output_index":0,"item":`...)
	b = appendMessageItem(b, r, "in_progress", false)
	b = endEvent(b)
	b = event(b, c, "response.content_part.added")
	b = partHead(b, r)
	b = append(b, `,"part":`...)
	b = appendOutputText(b, r, 0)
	return endEvent(b)
}

func (responses) streamDelta(b []byte, c *call, r *result, from, to int) []byte {
	b = event(b, c, "response.output_text.delta")
	b = partHead(b, r)
	b = append(b, `,"delta":"`...)
	b = appendText(b, r, from, to)
	b = append(b, `","logprobs":[]`...)
	return endEvent(b)
}

func (responses) streamEnd(b []byte, c *call, r *result) []byte {
	status := r.status()
	b = event(b, c, "response.output_text.done")
	b = partHead(b, r)
	b = append(b, `,"text":"`...)
	b = appendText(b, r, 0, r.n)
	b = append(b, `","logprobs":[]`...)
	b = endEvent(b)
	b = event(b, c, "response.content_part.done")
	b = partHead(b, r)
	b = append(b, `,"part":`...)
	b = appendOutputText(b, r, r.n)
	b = endEvent(b)
	b = event(b, c, "response.output_item.done")
	b = append(b, `,"output_index":0,"item":`...)
	b = appendMessageItem(b, r, status, true)
	b = endEvent(b)
	b = event(b, c, "response."+status)
	b = append(b, `,"response":`...)
	b = appendResponse(b, c, r, status)
	return endEvent(b)
}

// streamError ends the stream with response.failed, the API's terminal
// event for a response that failed after it started.
func (responses) streamError(b []byte, c *call, r *result) []byte {
	b = event(b, c, "response.failed")
	b = append(b, `,"response":`...)
	b = appendResponse(b, c, r, "failed")
	return endEvent(b)
}

// isOpenAI reports whether wr is one of OpenAI's APIs, which take the key
// as a bearer token only.
func isOpenAI(wr wire) bool {
	switch wr.(type) {
	case openai, responses:
		return true
	}
	return false
}
