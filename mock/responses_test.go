package mock_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ratelab/ratelab/mock"
)

// The Responses API tests validate every body and event the mock serves on
// /v1/responses against the official OpenAPI schema, extracted into
// testdata/openai.schema.json (its x-source names the repository
// and commit; testdata/openapi/extract.go regenerates it).

const responsesSchemaFile = "testdata/openai.schema.json"

var responsesSchema = struct {
	once     sync.Once
	compiler *jsonschema.Compiler
	err      error
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}{compiled: map[string]*jsonschema.Schema{}}

// schemaFor compiles the extracted OpenAPI schema named def.
func schemaFor(t testing.TB, def string) *jsonschema.Schema {
	t.Helper()
	s := &responsesSchema
	s.once.Do(func() {
		f, err := os.Open(responsesSchemaFile)
		if err != nil {
			s.err = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			s.err = fmt.Errorf("%s: %w", responsesSchemaFile, err)
			return
		}
		s.compiler = jsonschema.NewCompiler()
		s.err = s.compiler.AddResource("https://ratelab.test/openai.schema.json", doc)
	})
	if s.err != nil {
		t.Fatalf("loading the OpenAPI schema: %v", s.err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.compiled[def]; ok {
		return sch
	}
	sch, err := s.compiler.Compile("https://ratelab.test/openai.schema.json#/$defs/" + def)
	if err != nil {
		t.Fatalf("compiling %s: %v", def, err)
	}
	s.compiled[def] = sch
	return sch
}

// validate checks that data is a JSON document valid against def.
func validate(t testing.TB, def string, data []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", def, err, data)
	}
	if err := schemaFor(t, def).Validate(v); err != nil {
		t.Errorf("%s does not match the OpenAPI schema: %v\n%s", def, err, data)
	}
}

// streamEventSchemas maps each event type the mock sends to its schema.
var streamEventSchemas = map[string]string{
	"response.created":                       "ResponseCreatedEvent",
	"response.in_progress":                   "ResponseInProgressEvent",
	"response.output_item.added":             "ResponseOutputItemAddedEvent",
	"response.content_part.added":            "ResponseContentPartAddedEvent",
	"response.output_text.delta":             "ResponseTextDeltaEvent",
	"response.output_text.done":              "ResponseTextDoneEvent",
	"response.content_part.done":             "ResponseContentPartDoneEvent",
	"response.output_item.done":              "ResponseOutputItemDoneEvent",
	"response.function_call_arguments.delta": "ResponseFunctionCallArgumentsDeltaEvent",
	"response.function_call_arguments.done":  "ResponseFunctionCallArgumentsDoneEvent",
	"response.completed":                     "ResponseCompletedEvent",
	"response.incomplete":                    "ResponseIncompleteEvent",
	"response.failed":                        "ResponseFailedEvent",
	"error":                                  "ResponseErrorEvent",
}

// sse is one event as the mock framed it.
type sse struct {
	event string
	data  []byte
}

// parseEvents splits an event stream into its events and checks each one:
// an event: line naming the data's type, the schema of that type, and
// sequence numbers counting from 0.
func parseEvents(t testing.TB, body []byte) []sse {
	t.Helper()
	var evs []sse
	for _, frame := range strings.Split(string(body), "\n\n") {
		if strings.TrimSpace(frame) == "" {
			continue
		}
		var ev sse
		for _, line := range strings.Split(frame, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data = []byte(line[len("data: "):])
			default:
				t.Fatalf("unexpected line %q in frame %q", line, frame)
			}
		}
		var head struct {
			Type string `json:"type"`
			Seq  *int   `json:"sequence_number"`
		}
		if err := json.Unmarshal(ev.data, &head); err != nil {
			t.Fatalf("event %q: data is not JSON: %v", ev.event, err)
		}
		if head.Type != ev.event {
			t.Errorf("event: %q carries type %q; want the same", ev.event, head.Type)
		}
		if head.Seq == nil || *head.Seq != len(evs) {
			t.Errorf("event %d (%s): sequence_number = %v, want %d", len(evs), ev.event, head.Seq, len(evs))
		}
		def, ok := streamEventSchemas[ev.event]
		if !ok {
			t.Fatalf("event %q: not an event the mock should send", ev.event)
		}
		validate(t, def, ev.data)
		evs = append(evs, ev)
	}
	return evs
}

// post sends one request to the mock, bypassing the tape's SDK-oriented
// recording, and reads the whole response.
func (h *harness) post(t testing.TB, path, body string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, sdkBaseURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+sdkKey)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading the body: %v", path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// responseObject is the part of a Response the tests read.
type responseObject struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Status            string `json:"status"`
	Model             string `json:"model"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Instructions    *string `json:"instructions"`
	MaxOutputTokens *int    `json:"max_output_tokens"`
	Output          []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Text       json.RawMessage `json:"text"`
	Metadata   json.RawMessage `json:"metadata"`
}

func (r responseObject) text() string {
	var b strings.Builder
	for _, it := range r.Output {
		for _, c := range it.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

func decodeResponse(t testing.TB, b []byte) responseObject {
	t.Helper()
	var r responseObject
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("response %s: %v", b, err)
	}
	return r
}

// responsesLatency: 300 ms to the first token, 10 ms a token, and answers
// of 20 tokens unless max_output_tokens is lower.
const responsesLatency = sdkLatency + "output: {tokens: {fixed: 20}}\n"

// TestResponsesJSONAndStream: for each shape of input, the JSON answer and
// the stream carry the same text (the filler), the documented input-token
// estimate, a status that says whether max_output_tokens cut the answer,
// and take the same virtual time; every body and event matches the OpenAPI
// schema, and the events come in the API's order.
func TestResponsesJSONAndStream(t *testing.T) {
	cases := []struct {
		name      string
		body      string // without "stream"
		wantIn    int64
		wantN     int
		wantState string
	}{
		{"string", `{"model":"gpt-5-mini","input":"Hello"}`, promptTokens("Hello"), 20, "completed"},
		{"instructions", `{"model":"gpt-5-mini","instructions":"Be terse.","input":"What is the capital of France?"}`,
			promptTokens("Be terse.", "What is the capital of France?"), 20, "completed"},
		{"items", `{"model":"gpt-5-mini","input":[
			{"role":"developer","content":"Be helpful."},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Hi there, how are you?"},{"type":"input_text","text":" Fine?"}]},
			{"role":"assistant","content":[{"type":"output_text","text":"Fine, thanks."}]},
			{"role":"user","content":"Tell me a story."}]}`,
			promptTokens("Be helpful.", "Hi there, how are you? Fine?", "Fine, thanks.", "Tell me a story."), 20, "completed"},
		{"function-output", `{"model":"gpt-5-mini","input":[
			{"role":"user","content":"Weather in Paris?"},
			{"type":"function_call_output","call_id":"call_1","output":"sunny, 21 C"}]}`,
			promptTokens("Weather in Paris?", "sunny, 21 C"), 20, "completed"},
		{"max-output-tokens", `{"model":"gpt-5-mini","input":"Hello","max_output_tokens":16}`, promptTokens("Hello"), 16, "incomplete"},
		{"unicode", `{"model":"gpt-5-mini","input":"Grüße aus Köln — 東京へようこそ 🚀🚀🚀"}`, promptTokens("Grüße aus Köln — 東京へようこそ 🚀🚀🚀"), 20, "completed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, responsesLatency)
				start := time.Now()
				status, hdr, body := h.post(t, "/v1/responses", tc.body)
				jsonTook := time.Since(start)
				if status != 200 {
					t.Fatalf("status %d: %s", status, body)
				}
				if ct := hdr.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				if hdr.Get("X-Request-Id") == "" {
					t.Errorf("no x-request-id header")
				}
				validate(t, "Response", body)
				r := decodeResponse(t, body)
				want := mock.Filler(tc.wantN)
				if r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") || r.Model != "gpt-5-mini" {
					t.Errorf("object/id/model = %q/%q/%q, want response/resp_…/gpt-5-mini", r.Object, r.ID, r.Model)
				}
				if r.Status != tc.wantState {
					t.Errorf("status = %q, want %q", r.Status, tc.wantState)
				}
				if tc.wantState == "incomplete" && (r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens") {
					t.Errorf("incomplete_details = %+v, want reason max_output_tokens", r.IncompleteDetails)
				}
				if len(r.Output) != 1 || r.Output[0].Type != "message" || r.Output[0].Role != "assistant" || !strings.HasPrefix(r.Output[0].ID, "msg_") {
					t.Fatalf("output = %+v, want one assistant message", r.Output)
				}
				if got := r.text(); got != want {
					t.Errorf("text = %q, want %q", got, want)
				}
				if u := r.Usage; u == nil || int64(u.InputTokens) != tc.wantIn || u.OutputTokens != tc.wantN || int64(u.TotalTokens) != tc.wantIn+int64(tc.wantN) {
					t.Errorf("usage = %+v, want input %d, output %d, total %d", u, tc.wantIn, tc.wantN, tc.wantIn+int64(tc.wantN))
				}

				start = time.Now()
				status, hdr, body = h.post(t, "/v1/responses", tc.body[:len(tc.body)-1]+`,"stream":true}`)
				streamTook := time.Since(start)
				if status != 200 {
					t.Fatalf("stream: status %d: %s", status, body)
				}
				if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
					t.Errorf("stream: Content-Type = %q, want text/event-stream", ct)
				}
				evs := parseEvents(t, body)
				var order []string
				var deltas strings.Builder
				for _, ev := range evs {
					if ev.event == "response.output_text.delta" {
						var d struct{ Delta string }
						json.Unmarshal(ev.data, &d)
						deltas.WriteString(d.Delta)
						if len(order) > 0 && order[len(order)-1] == ev.event {
							continue
						}
					}
					order = append(order, ev.event)
				}
				wantOrder := []string{"response.created", "response.in_progress", "response.output_item.added",
					"response.content_part.added", "response.output_text.delta", "response.output_text.done",
					"response.content_part.done", "response.output_item.done", "response." + tc.wantState}
				if fmt.Sprint(order) != fmt.Sprint(wantOrder) {
					t.Errorf("events = %v, want %v (deltas collapsed)", order, wantOrder)
				}
				if deltas.String() != want {
					t.Errorf("stream: deltas = %q, want %q", deltas.String(), want)
				}
				var final struct{ Response json.RawMessage }
				json.Unmarshal(evs[len(evs)-1].data, &final)
				fr := decodeResponse(t, final.Response)
				if fr.ID == r.ID {
					t.Errorf("stream and JSON responses share id %q; want fresh ids", r.ID)
				}
				if fr.Status != r.Status || fr.text() != want || fr.Usage == nil || *fr.Usage != *r.Usage {
					t.Errorf("stream: final response status/text/usage = %q/%q/%+v, want %q/%q/%+v", fr.Status, fr.text(), fr.Usage, r.Status, want, r.Usage)
				}
				if streamTook != jsonTook {
					t.Errorf("stream took %v, JSON %v; want equal", streamTook, jsonTook)
				}
				wantTook := 300*time.Millisecond + time.Duration(tc.wantN)*10*time.Millisecond
				if jsonTook != wantTook {
					t.Errorf("JSON took %v, want %v (ttft + n × per_token)", jsonTook, wantTook)
				}
			})
		})
	}
}

// TestResponsesEcho: the Response repeats the request's instructions,
// max_output_tokens, tools (function tools, strict by default), tool_choice,
// text.format and metadata, and the result still matches the schema.
func TestResponsesEcho(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, responsesLatency)
		const tools = `[{"type":"function","name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}]`
		body := `{"model":"gpt-5-mini","instructions":"Be terse.","input":"Weather in Paris?","max_output_tokens":64,
			"tools":` + tools + `,"tool_choice":{"type":"function","name":"get_weather"},
			"text":{"format":{"type":"json_schema","name":"weather","schema":{"type":"object","properties":{"temp":{"type":"number"}}},"strict":true}},
			"temperature":0.5,"top_p":0.9,"metadata":{"run":"42"},"store":false}`
		status, _, b := h.post(t, "/v1/responses", body)
		if status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
		validate(t, "Response", b)
		r := decodeResponse(t, b)
		if r.Instructions == nil || *r.Instructions != "Be terse." || r.MaxOutputTokens == nil || *r.MaxOutputTokens != 64 {
			t.Errorf("instructions/max_output_tokens = %v/%v, want Be terse./64", r.Instructions, r.MaxOutputTokens)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		checks := []struct{ field, want string }{
			{"tools", `[{"description":"Weather of a city","name":"get_weather","parameters":{"additionalProperties":false,"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"strict":true,"type":"function"}]`},
			{"tool_choice", `{"name":"get_weather","type":"function"}`},
			{"text", `{"format":{"name":"weather","schema":{"properties":{"temp":{"type":"number"}},"type":"object"},"strict":true,"type":"json_schema"},"verbosity":"medium"}`},
			{"metadata", `{"run":"42"}`},
			{"temperature", `0.5`},
			{"top_p", `0.9`},
			{"store", `false`},
		}
		for _, c := range checks {
			got, _ := json.Marshal(m[c.field])
			if string(got) != c.want {
				t.Errorf("%s = %s, want %s", c.field, got, c.want)
			}
		}
		// The tools count toward the input tokens as their JSON does.
		toolTokens := (len([]rune(tools)) + 3) / 4
		if want := int(promptTokens("Be terse.", "Weather in Paris?")) + toolTokens; r.Usage.InputTokens != want {
			t.Errorf("input_tokens = %d, want %d (instructions + input + tools)", r.Usage.InputTokens, want)
		}
	})
}

// TestResponsesBadRequest: malformed requests get a 400 in OpenAI's error
// envelope (matching the schema's ErrorResponse) whose param names the
// field, and are counted as errors, not admitted.
func TestResponsesBadRequest(t *testing.T) {
	cases := []struct {
		name, body, param, msg string
	}{
		{"not-json", `{"model":`, "", "invalid JSON"},
		{"no-model", `{"input":"hi"}`, "model", "field required"},
		{"no-input", `{"model":"gpt-5-mini"}`, "input", "field required"},
		{"input-number", `{"model":"gpt-5-mini","input":3}`, "input", "want a string or an array"},
		{"empty-items", `{"model":"gpt-5-mini","input":[]}`, "input", "at least one"},
		{"item-not-object", `{"model":"gpt-5-mini","input":["hi"]}`, "input.0", "input item object"},
		{"bad-role", `{"model":"gpt-5-mini","input":[{"role":"robot","content":"hi"}]}`, "input.0.role", `"robot"`},
		{"no-content", `{"model":"gpt-5-mini","input":[{"role":"user"}]}`, "input.0.content", "field required"},
		{"bad-part", `{"model":"gpt-5-mini","input":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, "input.0.content.0.type", `"text"`},
		{"part-text-number", `{"model":"gpt-5-mini","input":[{"role":"user","content":[{"type":"input_text","text":1}]}]}`, "input.0.content.0.text", "want a string"},
		{"item-reference", `{"model":"gpt-5-mini","input":[{"type":"item_reference","id":"msg_1"}]}`, "input.0.id", "not found"},
		{"previous-response", `{"model":"gpt-5-mini","input":"hi","previous_response_id":"resp_1"}`, "previous_response_id", "not found"},
		{"max-output-small", `{"model":"gpt-5-mini","input":"hi","max_output_tokens":8}`, "max_output_tokens", "at least 16"},
		{"max-output-large", `{"model":"gpt-5-mini","input":"hi","max_output_tokens":999999}`, "max_output_tokens", "above the maximum"},
		{"max-output-float", `{"model":"gpt-5-mini","input":"hi","max_output_tokens":20.5}`, "max_output_tokens", "integer"},
		{"temperature", `{"model":"gpt-5-mini","input":"hi","temperature":3}`, "temperature", "Expected a value <= 2"},
		{"top-p", `{"model":"gpt-5-mini","input":"hi","top_p":1.5}`, "top_p", "Expected a value <= 1"},
		{"builtin-tool", `{"model":"gpt-5-mini","input":"hi","tools":[{"type":"web_search"}]}`, "tools.0.type", "function tools only"},
		{"tool-name", `{"model":"gpt-5-mini","input":"hi","tools":[{"type":"function","name":"get weather"}]}`, "tools.0.name", "letters"},
		{"tool-params", `{"model":"gpt-5-mini","input":"hi","tools":[{"type":"function","name":"f","parameters":"x"}]}`, "tools.0.parameters", "JSON Schema"},
		{"choice-unknown", `{"model":"gpt-5-mini","input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}}`, "tool_choice.name", `"g"`},
		{"choice-required-no-tools", `{"model":"gpt-5-mini","input":"hi","tool_choice":"required"}`, "tool_choice", "at least one tool"},
		{"format-type", `{"model":"gpt-5-mini","input":"hi","text":{"format":{"type":"yaml"}}}`, "text.format.type", `"yaml"`},
		{"format-no-schema", `{"model":"gpt-5-mini","input":"hi","text":{"format":{"type":"json_schema","name":"x"}}}`, "text.format.schema", "field required"},
		{"stream-options", `{"model":"gpt-5-mini","input":"hi","stream_options":{"include_obfuscation":false}}`, "stream_options", "stream is true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startMock(t, responsesLatency)
				status, hdr, b := h.post(t, "/v1/responses", tc.body)
				if status != 400 {
					t.Fatalf("status %d, want 400: %s", status, b)
				}
				if hdr.Get("X-Request-Id") == "" {
					t.Errorf("no x-request-id")
				}
				validate(t, "ErrorResponse", b)
				var e struct {
					Error struct {
						Message string
						Type    string
						Param   *string
					}
				}
				json.Unmarshal(b, &e)
				param := ""
				if e.Error.Param != nil {
					param = *e.Error.Param
				}
				if e.Error.Type != "invalid_request_error" || param != tc.param || !strings.Contains(e.Error.Message, tc.msg) {
					t.Errorf("error = %s; want type invalid_request_error, param %q, message containing %q", b, tc.param, tc.msg)
				}
				if st := h.srv.Stats(); st.Errors != 1 || st.Admitted != 0 {
					t.Errorf("Stats errors/admitted = %d/%d, want 1/0", st.Errors, st.Admitted)
				}
			})
		})
	}
}

// TestResponsesRoutes: authentication, methods and unknown paths under
// /v1/responses answer in OpenAI's envelope, and the key goes as a bearer
// token only (x-api-key is Anthropic's).
func TestResponsesRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, responsesLatency)
		const body = `{"model":"gpt-5-mini","input":"hi"}`
		cases := []struct {
			name   string
			method string
			path   string
			hdr    []string
			status int
			code   string
		}{
			{"wrong-key", http.MethodPost, "/v1/responses", []string{"Authorization", "Bearer nope"}, 401, "invalid_api_key"},
			{"x-api-key", http.MethodPost, "/v1/responses", []string{"Authorization", "", "X-Api-Key", sdkKey}, 401, "invalid_api_key"},
			{"get", http.MethodGet, "/v1/responses", nil, 405, ""},
			{"retrieve", http.MethodGet, "/v1/responses/resp_1", nil, 404, "unknown_url"},
		}
		for _, tc := range cases {
			req, _ := http.NewRequest(tc.method, sdkBaseURL+tc.path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+sdkKey)
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				req.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			resp, err := h.hc.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("%s: status %d, want %d: %s", tc.name, resp.StatusCode, tc.status, b)
				continue
			}
			validate(t, "ErrorResponse", b)
			var e struct{ Error struct{ Code *string } }
			json.Unmarshal(b, &e)
			if tc.code != "" && (e.Error.Code == nil || *e.Error.Code != tc.code) {
				t.Errorf("%s: error %s, want code %s", tc.name, b, tc.code)
			}
		}
	})
}

// TestResponsesLimits: the Responses API shares the key's limits with the
// other endpoints: while a Messages request holds the only slot, a
// Responses request gets a 429 in OpenAI's envelope (type requests, code
// rate_limit_exceeded) with x-ratelimit-* headers and a retry-after that is
// the time until the slot frees; a tokens-per-minute limit charges
// max(max_output_tokens, input) and reports itself in the token headers.
func TestResponsesLimits(t *testing.T) {
	t.Run("concurrency", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 100ms}
limits: {max_concurrent: 1, rpm: 100}
`)
			held := h.block(t, 25)
			status, hdr, b := h.post(t, "/v1/responses", `{"model":"gpt-5-mini","input":"hi","max_output_tokens":16}`)
			if status != 429 {
				t.Fatalf("status %d, want 429: %s", status, b)
			}
			validate(t, "ErrorResponse", b)
			var e struct{ Error struct{ Type, Code string } }
			json.Unmarshal(b, &e)
			if e.Error.Type != "requests" || e.Error.Code != "rate_limit_exceeded" {
				t.Errorf("error %s, want type requests, code rate_limit_exceeded", b)
			}
			if got := hdr.Get("Retry-After"); got != "3" {
				t.Errorf("retry-after = %q, want 3 (the held request's 2.5 s, rounded up)", got)
			}
			if hdr.Get("X-Ratelimit-Limit-Requests") != "100" || hdr.Get("X-Ratelimit-Remaining-Requests") == "" || hdr.Get("X-Ratelimit-Reset-Requests") == "" {
				t.Errorf("x-ratelimit-*-requests = %q/%q/%q, want 100 and values", hdr.Get("X-Ratelimit-Limit-Requests"),
					hdr.Get("X-Ratelimit-Remaining-Requests"), hdr.Get("X-Ratelimit-Reset-Requests"))
			}
			if st := <-held; st != 200 {
				t.Errorf("held request: %d", st)
			}
			if st := h.srv.Stats(); st.Throttled != 1 || st.ThrottledBy["max_concurrent"] != 1 {
				t.Errorf("Stats throttled = %d by %v, want 1 by max_concurrent", st.Throttled, st.ThrottledBy)
			}
		})
	})
	t.Run("tpm", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 1ms}
limits: {tpm: 100}
`)
			status, hdr, b := h.post(t, "/v1/responses", `{"model":"gpt-5-mini","input":"hi","max_output_tokens":60}`)
			if status != 200 {
				t.Fatalf("first: status %d: %s", status, b)
			}
			if got := hdr.Get("X-Ratelimit-Remaining-Tokens"); got != "40" {
				t.Errorf("remaining tokens after charging max_output_tokens 60 of 100 = %q, want 40", got)
			}
			status, _, b = h.post(t, "/v1/responses", `{"model":"gpt-5-mini","input":"hi","max_output_tokens":60}`)
			if status != 429 {
				t.Fatalf("second: status %d, want 429: %s", status, b)
			}
			var e struct{ Error struct{ Type string } }
			json.Unmarshal(b, &e)
			if e.Error.Type != "tokens" {
				t.Errorf("error %s, want type tokens", b)
			}
		})
	})
}

// TestResponsesFaults: the chat completions' faults apply: an injected
// stream error ends a started stream with response.failed (after some
// text, never response.completed); overload is a 503 in OpenAI's envelope.
func TestResponsesFaults(t *testing.T) {
	t.Run("stream-error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startMock(t, `
api_keys: [`+sdkKey+`]
latency: {ttft: 0s, per_token: 10ms}
faults: {stream_error: 1}
`)
			status, _, b := h.post(t, "/v1/responses", `{"model":"gpt-5-mini","input":"hi","max_output_tokens":40,"stream":true}`)
			if status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			evs := parseEvents(t, b)
			last := evs[len(evs)-1]
			if last.event != "response.failed" {
				t.Fatalf("last event %q, want response.failed", last.event)
			}
			var f struct {
				Response struct {
					Status string
					Error  struct{ Code string }
				}
			}
			json.Unmarshal(last.data, &f)
			if f.Response.Status != "failed" || f.Response.Error.Code != "server_error" {
				t.Errorf("response.failed = %s, want status failed, error code server_error", last.data)
			}
			deltas := 0
			for _, ev := range evs {
				if ev.event == "response.output_text.delta" {
					deltas++
				}
			}
			if deltas == 0 {
				t.Errorf("no text before the failure")
			}
		})
	})
	t.Run("overloaded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startMock(t, `
api_keys: [`+sdkKey+`]
faults: {overloaded: 1}
`)
			status, _, b := h.post(t, "/v1/responses", `{"model":"gpt-5-mini","input":"hi"}`)
			if status != 503 {
				t.Fatalf("status %d, want 503: %s", status, b)
			}
			validate(t, "ErrorResponse", b)
			if st := h.srv.Stats(); st.Overloaded != 1 {
				t.Errorf("Stats.Overloaded = %d, want 1", st.Overloaded)
			}
		})
	})
	t.Run("output-text", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startMock(t, `
api_keys: [`+sdkKey+`]
output: {text: '{"ok": "ja \"quoted\" — ✓"}'}
`)
			status, _, b := h.post(t, "/v1/responses", `{"model":"gpt-5-mini","input":"hi"}`)
			if status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			validate(t, "Response", b)
			if r := decodeResponse(t, b); r.text() != `{"ok": "ja \"quoted\" — ✓"}` || r.Status != "completed" {
				t.Errorf("text/status = %q/%q, want the configured text, completed", r.text(), r.Status)
			}
		})
	})
}

// responsesSeeds are bodies worth starting from for /v1/responses.
var responsesSeeds = []string{
	`{"model":"gpt-5-mini","input":"Hello"}`,
	`{"model":"gpt-5-mini","input":"Hello","stream":true}`,
	`{"model":"gpt-5-mini","instructions":"Be terse.","input":[{"role":"user","content":[{"type":"input_text","text":"Hi"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]},{"role":"assistant","content":"b"}],"max_output_tokens":16}`,
	`{"model":"gpt-5-mini","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}],"stream":true,"stream_options":{"include_obfuscation":false}}`,
	`{"model":"gpt-5-mini","input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":false}],"tool_choice":"required","parallel_tool_calls":false}`,
	`{"model":"gpt-5-mini","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}}`,
	`{"model":"gpt-5-mini","input":"x","text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"},"description":"d"},"verbosity":"low"}}`,
	`{"model":"gpt-5-mini","input":"x","text":{"format":{"type":"json_object"}},"reasoning":{"effort":"low","summary":"auto"},"metadata":{"a":"b"},"user":"u","safety_identifier":"s","prompt_cache_key":"k","truncation":"auto","top_logprobs":3,"max_tool_calls":2,"store":false}`,
	`{"model":"gpt-5-mini","input":[{"type":"item_reference","id":"x"}]}`,
	`{"model":"gpt-5-mini","input":"x","stream":true,"tools":[{"type":"function","name":"f","parameters":{"type":"object","required":["a"],"properties":{"a":{"type":"array","items":{"enum":["\"q\"","é"]},"minItems":1}}}}],"tool_choice":{"type":"function","name":"f"}}`,
	`{"model":"gpt-5-mini","input":"x","stream":true,"max_output_tokens":16,"text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object","required":["n"],"properties":{"n":{"type":"string","minLength":90}}}}}}`,
	`{"model":"gpt-5-mini","input":"x","previous_response_id":"resp_1"}`,
	`{"model":"gpt-5-mini","input":"x","max_output_tokens":15}`,
	`{"model":"gpt-5-mini","input":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
}

// FuzzResponses: no body sent to /v1/responses panics the server or gets a
// 5xx; every answer carries x-request-id; a 4xx is OpenAI's ErrorResponse
// and a 200 a Response, or a stream whose every event matches its schema
// and ends with response.completed or response.incomplete.
func FuzzResponses(f *testing.F) {
	for _, s := range append(slices.Clone(requestSeeds), responsesSeeds...) {
		f.Add([]byte(s))
	}
	h := fuzzHandler(f)
	hdr := map[string]string{"authorization": "Bearer " + fuzzKey}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := serveFuzz(t, h, "/v1/responses", hdr, body, "x-request-id", checkOpenAIError)
		switch {
		case rec.Code >= 400:
			validate(t, "ErrorResponse", rec.Body.Bytes())
		case strings.HasPrefix(rec.Header().Get("content-type"), "text/event-stream"):
			evs := parseEvents(t, rec.Body.Bytes())
			if last := evs[len(evs)-1].event; last != "response.completed" && last != "response.incomplete" {
				t.Errorf("stream ends with %s, want response.completed or response.incomplete", last)
			}
		default:
			validate(t, "Response", rec.Body.Bytes())
		}
	})
}

// BenchmarkResponsesHandler compares the cost of one Responses request with
// one Chat Completions request of the same prompt and answer (20 tokens,
// zero latency), served by the Handler in this goroutine, alternating the
// two so that both see the same machine: it reports each one's time and
// allocations per request and the ratio of the times.
//
//	go test -run '^$' -bench ResponsesHandler ./mock/
func BenchmarkResponsesHandler(b *testing.B) {
	cfg, err := mock.ParseConfig([]byte(`
latency: {ttft: 0s, per_token: 0s}
output: {tokens: {fixed: 20}}
`), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := mock.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	bodies := [2]string{
		`{"model":"gpt-5-mini","max_completion_tokens":64,"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Classify ticket 7."}]}`,
		`{"model":"gpt-5-mini","max_output_tokens":64,"instructions":"Be terse.","input":"Classify ticket 7."}`,
	}
	paths := [2]string{"/v1/chat/completions", "/v1/responses"}
	var took [2]time.Duration
	var allocs [2]uint64
	var ms runtime.MemStats
	serve := func(i int) {
		req := httptest.NewRequest(http.MethodPost, paths[i], strings.NewReader(bodies[i]))
		rec := httptest.NewRecorder()
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		start := time.Now()
		s.Handler().ServeHTTP(rec, req)
		took[i] += time.Since(start)
		runtime.ReadMemStats(&ms)
		allocs[i] += ms.Mallocs - before
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", paths[i], rec.Code, rec.Body.Bytes())
		}
	}
	for i := 0; b.Loop(); i++ {
		serve(i % 2)
		serve((i + 1) % 2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(took[0].Nanoseconds())/n, "chat-ns/req")
	b.ReportMetric(float64(took[1].Nanoseconds())/n, "responses-ns/req")
	b.ReportMetric(float64(allocs[0])/n, "chat-allocs/req")
	b.ReportMetric(float64(allocs[1])/n, "responses-allocs/req")
	b.ReportMetric(float64(took[1])/float64(took[0]), "responses/chat")
}
