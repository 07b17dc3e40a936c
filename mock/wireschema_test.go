package mock_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/pagination"
	"github.com/anthropics/anthropic-sdk-go/packages/respjson"
)

// The wire-schema tests hold every body and event the mock serves for
// Chat Completions and models to the official OpenAPI schema
// (testdata/openai.schema.json), and every Messages API body and event to
// the types of the official Go SDK: decoded into them, no field has a
// value of the wrong type, every field the SDK marks required is present,
// and no field is one the SDK does not know.

// wireConfig has no latency, so the bubble's clock barely moves;
// limitedConfig answers a second request in a minute with a 429.
const (
	wireConfig = `
seed: 3
latency: {ttft: 0s, ttft_per_input_token: 0s, per_token: 0s}
`
	limitedConfig = wireConfig + "limits: {rpm: 1}\n"
)

const schema3 = `{"type":"object","additionalProperties":false,"required":["city","days","units"],"properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7},"units":{"type":"string","enum":["metric","imperial"]}}}`

// get sends a GET with the given headers and reads the whole response.
func (h *harness) get(t testing.TB, path string, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, sdkBaseURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// sseData is the data of each event of an event stream, without [DONE].
func sseData(t testing.TB, body []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, frame := range strings.Split(string(body), "\n\n") {
		for _, line := range strings.Split(frame, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
				out = append(out, []byte(d))
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no events in %q", body)
	}
	return out
}

func TestChatCompletionsMatchOpenAPI(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"forecast","description":"The forecast.","strict":true,"parameters":` + schema3 + `}}]`
	cases := []struct{ name, body string }{
		{"plain", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello there"}]}`},
		{"max-tokens", `{"model":"gpt-4o-mini","max_completion_tokens":5,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}]}`},
		{"tool-required", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather in Paris?"}],` + tools + `,"tool_choice":"required"}`},
		{"tool-named", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather?"}],` + tools + `,"tool_choice":{"type":"function","function":{"name":"forecast"}}}`},
		{"json-schema", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Forecast"}],"response_format":{"type":"json_schema","json_schema":{"name":"f","strict":true,"schema":` + schema3 + `}}}`},
		{"json-object", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Answer in JSON"}],"response_format":{"type":"json_object"}}`},
		{"n-logprobs", `{"model":"gpt-4o-mini","n":2,"logprobs":true,"top_logprobs":2,"max_completion_tokens":8,"messages":[{"role":"user","content":"Hi"}]}`},
		{"stop", `{"model":"gpt-4o-mini","stop":["e"],"messages":[{"role":"user","content":"Tell me more"}]}`},
	}
	synctest.Test(t, func(t *testing.T) {
		h, limited := startMock(t, wireConfig), startMock(t, limitedConfig)
		for _, tc := range cases {
			status, _, b := h.post(t, "/v1/chat/completions", tc.body)
			if status != http.StatusOK {
				t.Fatalf("%s: %d %s", tc.name, status, b)
			}
			validate(t, "CreateChatCompletionResponse", b)

			stream := strings.Replace(tc.body, `{"model"`, `{"stream":true,"stream_options":{"include_usage":true},"model"`, 1)
			status, _, b = h.post(t, "/v1/chat/completions", stream)
			if status != http.StatusOK {
				t.Fatalf("%s stream: %d %s", tc.name, status, b)
			}
			for _, d := range sseData(t, b) {
				validate(t, "CreateChatCompletionStreamResponse", d)
			}
		}

		// Errors: a bad request, an unknown model, a 429.
		for _, tc := range []struct {
			name, body string
			h          *harness
			status     int
		}{
			{"bad-request", `{"model":"gpt-4o-mini","messages":[]}`, h, 400},
			{"unknown-model", `{"model":"gpt-nope","messages":[{"role":"user","content":"Hi"}]}`, h, 404},
			{"rate-limited", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`, limited, 429},
		} {
			var status int
			var b []byte
			for range 2 { // the limited mock's first request goes through
				status, _, b = tc.h.post(t, "/v1/chat/completions", tc.body)
			}
			if status != tc.status {
				t.Fatalf("%s: %d %s, want %d", tc.name, status, b, tc.status)
			}
			validate(t, "ErrorResponse", b)
		}

		auth := []string{"Authorization", "Bearer " + sdkKey}
		status, b := h.get(t, "/v1/models/gpt-4o-mini", auth...)
		if status != http.StatusOK {
			t.Fatalf("GET model: %d %s", status, b)
		}
		validate(t, "Model", b)
		status, b = h.get(t, "/v1/models", auth...)
		if status != http.StatusOK {
			t.Fatalf("GET models: %d %s", status, b)
		}
		validate(t, "ListModelsResponse", b)
	})
}

func TestMessagesMatchSDKTypes(t *testing.T) {
	tools := `"tools":[{"name":"forecast","description":"The forecast.","input_schema":` + schema3 + `}]`
	cases := []struct{ name, body string }{
		{"plain", `{"model":"claude-sonnet-4-5","max_tokens":200,"messages":[{"role":"user","content":"Hello there"}]}`},
		{"max-tokens", `{"model":"claude-sonnet-4-5","max_tokens":5,"system":"Be brief.","messages":[{"role":"user","content":"Hello"}]}`},
		{"tool-any", `{"model":"claude-sonnet-4-5","max_tokens":300,"messages":[{"role":"user","content":"Weather in Paris?"}],` + tools + `,"tool_choice":{"type":"any"}}`},
		{"tool-named", `{"model":"claude-sonnet-4-5","max_tokens":300,"messages":[{"role":"user","content":"Weather?"}],` + tools + `,"tool_choice":{"type":"tool","name":"forecast"}}`},
		{"structured", `{"model":"claude-sonnet-4-5","max_tokens":300,"messages":[{"role":"user","content":"Forecast"}],"output_config":{"format":{"type":"json_schema","schema":` + schema3 + `}}}`},
		{"stop", `{"model":"claude-sonnet-4-5","max_tokens":200,"stop_sequences":["e"],"messages":[{"role":"user","content":"Tell me more"}]}`},
	}
	version := []string{"anthropic-version", "2023-06-01", "x-api-key", sdkKey}
	synctest.Test(t, func(t *testing.T) {
		h, limited := startMock(t, wireConfig), startMock(t, limitedConfig)
		for _, tc := range cases {
			status, _, b := h.post(t, "/v1/messages", tc.body, version...)
			if status != http.StatusOK {
				t.Fatalf("%s: %d %s", tc.name, status, b)
			}
			checkSDKType(t, tc.name, b, &anthropic.Message{})

			stream := strings.Replace(tc.body, `{"model"`, `{"stream":true,"model"`, 1)
			status, _, b = h.post(t, "/v1/messages", stream, version...)
			if status != http.StatusOK {
				t.Fatalf("%s stream: %d %s", tc.name, status, b)
			}
			for i, d := range sseData(t, b) {
				if string(d) == `{"type": "ping"}` {
					continue // the API's keep-alive, which the SDK skips
				}
				checkSDKType(t, fmt.Sprintf("%s event %d", tc.name, i), d, &anthropic.MessageStreamEventUnion{})
			}
		}

		status, _, b := h.post(t, "/v1/messages/count_tokens", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hello"}],`+tools+`}`, version...)
		if status != http.StatusOK {
			t.Fatalf("count_tokens: %d %s", status, b)
		}
		checkSDKType(t, "count_tokens", b, &anthropic.MessageTokensCount{})
		// The models, as Models and Beta.Models ask for them (the beta form
		// adds ?beta=true).
		for _, tc := range []struct {
			path string
			v    any
		}{
			{"/v1/models/claude-sonnet-4-5", &anthropic.ModelInfo{}},
			{"/v1/models", &pagination.Page[anthropic.ModelInfo]{}},
			{"/v1/models/claude-sonnet-4-5?beta=true", &anthropic.BetaModelInfo{}},
			{"/v1/models?beta=true", &pagination.Page[anthropic.BetaModelInfo]{}},
		} {
			status, b = h.get(t, tc.path, version...)
			if status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", tc.path, status, b)
			}
			checkSDKType(t, "GET "+tc.path, b, tc.v)
		}

		for _, tc := range []struct {
			name, body string
			h          *harness
			status     int
		}{
			{"bad-request", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[]}`, h, 400},
			{"unknown-model", `{"model":"claude-nope","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`, h, 404},
			{"rate-limited", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`, limited, 429},
		} {
			var status int
			var b []byte
			for range 2 {
				status, _, b = tc.h.post(t, "/v1/messages", tc.body, version...)
			}
			if status != tc.status {
				t.Fatalf("%s: %d %s, want %d", tc.name, status, b, tc.status)
			}
			// request_id is in every error body the API sends, and in none
			// of the SDK's types; it is the one field allowed beyond them.
			checkSDKType(t, tc.name, b, &anthropic.ErrorResponse{}, "request_id")
		}
	})
}

// checkSDKType decodes data into v, an SDK response type, and walks it:
// see checkFields.
func checkSDKType(t *testing.T, what string, data []byte, v any, extraAllowed ...string) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: the SDK cannot decode %s: %v", what, data, err)
	}
	for _, p := range checkFields(reflect.ValueOf(v), "$", extraAllowed) {
		t.Errorf("%s: %s\n%s", what, p, data)
	}
}

var fieldType = reflect.TypeFor[respjson.Field]()

// apiOmits are the fields, by SDK type and Go field name, that the SDK
// marks required and the real API leaves out, so the mock does too: a text
// block's citations (mock/internal/anthropic/anthropic.go says how that is known). Present,
// they are checked like any other field.
var apiOmits = map[[2]string]bool{{"TextBlock", "Citations"}: true}

// checkFields walks a decoded SDK value. In each struct with a JSON
// metadata struct, a field whose status is invalid (present, of a type the
// SDK does not accept), a field tagged required that is absent, and an
// extra field are problems. Required is the SDK's api:"required" tag: the
// API always sends the field, if only as null (apiOmits lists the
// exceptions). A union (a type with AsAny) is walked as the
// variant its discriminator names, which must be one the SDK knows.
func checkFields(v reflect.Value, path string, extraAllowed []string) []string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	var problems []string
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			problems = append(problems, checkFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i), extraAllowed)...)
		}
		return problems
	case reflect.Map:
		for _, k := range v.MapKeys() {
			problems = append(problems, checkFields(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k), extraAllowed)...)
		}
		return problems
	case reflect.Struct:
	default:
		return nil
	}
	if !v.CanAddr() { // a variant AsAny returned by value
		p := reflect.New(v.Type())
		p.Elem().Set(v)
		v = p.Elem()
	}
	if asAny := v.Addr().MethodByName("AsAny"); asAny.IsValid() {
		variant := asAny.Call(nil)[0]
		if variant.IsNil() {
			return []string{path + ": a union variant the SDK does not know"}
		}
		return checkFields(variant, path, extraAllowed)
	}
	meta := v.FieldByName("JSON")
	if !meta.IsValid() || meta.Kind() != reflect.Struct {
		return nil
	}
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		if !sf.IsExported() || sf.Name == "JSON" {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		required := strings.Contains(sf.Tag.Get("api"), "required")
		f := meta.FieldByName(sf.Name)
		if f.IsValid() && f.Type() == fieldType {
			field := f.Interface().(respjson.Field)
			switch {
			case !field.Valid() && field.Raw() != "" && field.Raw() != respjson.Null:
				problems = append(problems, fmt.Sprintf("%s.%s: %s is not of the type the SDK expects", path, name, field.Raw()))
			case required && field.Raw() == "" && !apiOmits[[2]string{v.Type().Name(), sf.Name}]:
				problems = append(problems, fmt.Sprintf("%s.%s: required, absent", path, name))
			}
			if !field.Valid() {
				continue // absent or null: nothing below it to check
			}
		}
		problems = append(problems, checkFields(v.Field(i), path+"."+name, extraAllowed)...)
	}
	if extra := meta.FieldByName("ExtraFields"); extra.IsValid() {
		for _, k := range extra.MapKeys() {
			if !containsString(extraAllowed, k.String()) {
				problems = append(problems, fmt.Sprintf("%s.%s: a field the SDK does not know", path, k))
			}
		}
	}
	return problems
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestCheckFieldsCatches: the walker finds each kind of problem it claims
// to, so the Messages test above can fail.
func TestCheckFieldsCatches(t *testing.T) {
	good := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hi"}],"container":null,"stop_reason":"end_turn","stop_sequence":null,"stop_details":null,` +
		`"usage":{"input_tokens":1,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},` +
		`"output_tokens_details":{"thinking_tokens":0},"server_tool_use":null,"service_tier":"standard","speed":"standard","inference_geo":"not_available"},"diagnostics":null}`
	for _, tc := range []struct{ name, body, want string }{
		{"good", good, ""},
		{"wrong type", strings.Replace(good, `"input_tokens":1`, `"input_tokens":"one"`, 1), `$.usage.input_tokens: "one" is not of the type`},
		{"missing", strings.Replace(good, `"id":"msg_1",`, ``, 1), `$.id: required, absent`},
		{"missing null", strings.Replace(good, `"container":null,`, ``, 1), `$.container: required, absent`},
		{"missing nested", strings.Replace(good, `,"ephemeral_1h_input_tokens":0`, ``, 1), `$.usage.cache_creation.ephemeral_1h_input_tokens: required, absent`},
		{"citations present", strings.Replace(good, `"text":"hi"`, `"text":"hi","citations":7`, 1), `$.content[0].citations: 7 is not of the type`},
		{"extra nested", strings.Replace(good, `"ephemeral_1h_input_tokens":0`, `"ephemeral_1h_input_tokens":0,"extra":0`, 1), `$.usage.cache_creation.extra: a field the SDK does not know`},
		{"extra", strings.Replace(good, `"id":"msg_1",`, `"id":"msg_1","surprise":1,`, 1), `$.surprise: a field the SDK does not know`},
		{"unknown block", strings.Replace(good, `"type":"text","text":"hi"`, `"type":"hologram"`, 1), `$.content[0]: a union variant the SDK does not know`},
	} {
		var m anthropic.Message
		if err := json.Unmarshal([]byte(tc.body), &m); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(checkFields(reflect.ValueOf(&m), "$", nil), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}
}
