package wire_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/openaichat"
	"github.com/ratelab/ratelab/mock/internal/openairesponses"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// decodeSeeds are bodies where JSON decoders are known to differ:
// case-insensitive and Unicode-folded keys, duplicates, invalid UTF-8 and
// surrogates, numbers out of range or of the wrong kind, trailing bytes,
// nulls, and the request shapes of every API.
var decodeSeeds = []string{
	``, `{}`, `null`, `[]`, `"x"`, `{"model":`, ` {"model":"a"} `, `{"model":"a"} x`, `{"model":"a"}{}`,
	`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"Say something short."}]}`,
	`{"model":"m","max_tokens":16,"system":[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
	`{"model":"m","max_tokens":16,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"stop_sequences":["x"],"output_config":{"format":{"type":"json_schema","schema":{}}}}`,
	`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":16,"stream":true,"stream_options":{"include_usage":true},"n":1,"stop":["a"],"response_format":{"type":"json_object"}}`,
	`{"model":"gpt-5-mini","input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}],"instructions":"i","max_output_tokens":64,"metadata":{"a":"b","a":"c"},"reasoning":{"effort":"low"},"text":{"format":{"type":"text"},"verbosity":"low"},"temperature":0.5,"top_p":1,"store":false}`,
	`{"MODEL":"x","Max_Tokens":16,"MESSAGES":[{"ROLE":"user","Content":"x"}]}`,
	`{"ſtream":true,"K":1,"max_toKens":3}`,
	`{"model":"a","model":"b","system":"x","system":null,"messages":[],"messages":null}`,
	`{"model":null,"max_tokens":null,"messages":[null],"metadata":null,"temperature":null}`,
	`{"model":"a\ud800b\udc00","messages":[{"role":"\u00e9","content":"\ud83d\ude00"}]}`,
	"{\"model\":\"\xff\xfe\",\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}",
	`{"model":"a\u0000b","inference_geo":"\t"}`,
	"{\"model\":\"a\tb\"}",
	`{"max_tokens":1e2}`, `{"max_tokens":1.0}`, `{"max_tokens":-0}`, `{"max_tokens":01}`, `{"max_tokens":1.}`,
	`{"max_tokens":9223372036854775807}`, `{"max_tokens":9223372036854775808}`, `{"max_tokens":-9223372036854775809}`,
	`{"max_tokens":"16"}`, `{"stream":"true"}`, `{"stream":1}`, `{"temperature":1e400}`, `{"temperature":-}`, `{"top_p":.5}`,
	`{"messages":[{"role":"user","content":"a"},]}`, `{"tools":[1,2,]}`, `{"tools":[1 2]}`, `{"a":1,}`, `{,}`,
	`{"messages":{"role":"user"}}`, `{"messages":[{"role":7}]}`, `{"metadata":{"a":1}}`, `{"metadata":[]}`,
	`{"stop_sequences":"x"}`, `{"stop_sequences":[1]}`, `{"reasoning":"low"}`, `{"text":[]}`,
	`{"model":"m","messages":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`[{"type":"text","text":"a"},{"type":"image","source":{}},null,7]`, `[{"TYPE":"text","Text":"x"}]`, `[`, `[1,]`,
	`{"type":"text","text":"\"q\""}`, `{"type":null}`,
}

// FuzzDecodeRequest: DecodeRequest, which decodes with segmentio/encoding
// and falls back to encoding/json on an error, gives every body the same
// verdict and the same values as encoding/json alone, for each type the
// request decoders read.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		same(t, body, anthropic.Request{Model: wire.AbsentString})
		same(t, body, openaichat.Request{Model: wire.AbsentString})
		same(t, body, openairesponses.Request{Model: wire.AbsentString})
		same(t, body, []json.RawMessage(nil))
		same(t, body, struct {
			Type *string         `json:"type"`
			Text json.RawMessage `json:"text"`
		}{})
	})
}

// same checks DecodeRequest against json.Unmarshal for one type, both
// starting from start. What DecodeRequest gives must not point into the
// body: the body's buffer is pooled and serves the next request, so it is
// overwritten before the values are compared.
func same[T any](t *testing.T, body []byte, start T) {
	t.Helper()
	got, want := start, start
	buf := bytes.Clone(body)
	gotErr := wire.DecodeRequest(buf, &got)
	for i := range buf {
		buf[i] = '!'
	}
	wantErr := json.Unmarshal(body, &want)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%T %q: DecodeRequest error %v, json.Unmarshal error %v", start, body, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%T %q: DecodeRequest gives %+v, json.Unmarshal %+v", start, body, got, want)
	}
}
