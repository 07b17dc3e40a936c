package mock

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// fastDecodeSeeds are request bodies that exercise the hand-written
// decoder's paths and its fallbacks.
var fastDecodeSeeds = []string{
	`{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}`,
	`{"model":"m","max_tokens":1,"stream":true,"system":"Be terse.","messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":"b"}]}`,
	`{"model":"gpt-4o","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],"max_completion_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"m","max_tokens":3,"messages":[],"tools":[{"name":"t","input_schema":{}}]}`,
	` { "model" : "m" , "max_tokens" : 7 , "messages" : [ { "role" : "user" , "content" : "x" } ] } `,
	`{"model":"m\u00e9","max_tokens":1,"messages":[{"role":"us\u0065r","content":"é\n\"q\""}]}`,
	`{"MODEL":"m","Max_Tokens":2,"messages":null}`,
	`{"model":"a","model":"b","max_tokens":1,"max_tokens":2,"messages":[]}`,
	`{"model":null,"max_tokens":null,"stream":null,"system":null}`,
	`{"model":1,"max_tokens":"1","messages":{}}`,
	`{"model":"m","max_tokens":1e2,"messages":[{"role":"user"}]}`,
	`{"model":"m","max_tokens":-0,"messages":[{"content":"x","role":"user","extra":[1,{"a":null}]}]}`,
	`{"model":"m","max_tokens":9223372036854775808}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"t","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"output_config":{"format":{"type":"json_schema","schema":{}}},"output_format":null,"stop_sequences":["a"]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"required","response_format":{"type":"json_object"},"stop":["x","y"],"n":2,"logprobs":true,"top_logprobs":3}`,
	`{"model":"m","messages":[],"Tool_Choice":"auto","STOP":"x","Response_Format":null}`,
	`{"model":"m","messages":[],"tool_choice":"a","tool_choice":"b"}`,
	`[]`, `null`, `{`, `{"model":"m",}`, ``,
}

// FuzzFastDecode checks the hand-written request decoders against
// encoding/json: whenever the fast path accepts a body, json.Unmarshal must
// accept it too and fill an identical request. (When the fast path declines,
// the handler falls back to json.Unmarshal, so declining is always safe.)
func FuzzFastDecode(f *testing.F) {
	for _, s := range fastDecodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		{
			fast := anthropicRequest{Model: absentString, MaxTokens: absentInt}
			if fast.fastDecode(bytes.Clone(body)) {
				slow := anthropicRequest{Model: absentString, MaxTokens: absentInt}
				if err := json.Unmarshal(body, &slow); err != nil {
					t.Fatalf("anthropic: fast path accepted %q, encoding/json: %v", body, err)
				}
				if !reflect.DeepEqual(normalize(fast), normalize(slow)) {
					t.Fatalf("anthropic %q:\nfast %+v\nslow %+v", body, fast, slow)
				}
			}
		}
		{
			fast := openaiRequest{Model: absentString, MaxTokens: absentInt, MaxCompletionTokens: absentInt}
			if fast.fastDecode(bytes.Clone(body)) {
				slow := openaiRequest{Model: absentString, MaxTokens: absentInt, MaxCompletionTokens: absentInt}
				if err := json.Unmarshal(body, &slow); err != nil {
					t.Fatalf("openai: fast path accepted %q, encoding/json: %v", body, err)
				}
				if !reflect.DeepEqual(normalize(fast), normalize(slow)) {
					t.Fatalf("openai %q:\nfast %+v\nslow %+v", body, fast, slow)
				}
			}
		}
	})
}

// normalize makes raw JSON fields comparable: an empty RawMessage and a nil
// one mean the same (absent).
func normalize[T any](v T) string {
	b, _ := json.Marshal(v)
	return string(b)
}
