package record

import (
	"bytes"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// A format is one wire format the recorder reads: which request paths are
// its model calls, what the path says of the call (the model, a stream),
// how its streams are framed and which of their frames carry output. The
// bodies of every format are read by one parser (parse), whose fields do
// not collide between formats. The table is the recorder's own, written
// from docs/wire.md: the recorder runs in mockllm's proxy too, so it shares
// no code with the client (provider/) nor with the mock's formats.
type format struct {
	name string
	// shape is the paths re matches, as messages show them.
	shape string
	// re matches the path's end; its groups are named model and op.
	re *regexp.Regexp
	// streamOps are the ops (the path's last part) that stream.
	streamOps []string
	// notModels are path models that name another endpoint (Vertex AI's
	// count-tokens:rawPredict).
	notModels []string
	// token reports whether a frame (its event name and data) carries
	// output.
	token func(event string, data []byte) bool
}

// formats are tried in order: the first whose pattern matches the path is
// the call's.
var formats = []format{
	// Azure OpenAI before OpenAI: its paths end as OpenAI's do.
	{name: "azure-openai", shape: "/openai/deployments/D/chat/completions", re: regexp.MustCompile(`/openai/deployments/(?P<model>[^/]+)/(?P<op>chat/completions)$`), token: chatToken},
	{name: "azure-openai", shape: "/openai/v1/chat/completions", re: regexp.MustCompile(`/openai/v1/(?P<op>chat/completions)$`), token: chatToken},
	{name: "azure-openai-responses", shape: "/openai/responses, /openai/v1/responses", re: regexp.MustCompile(`/openai/(v1/)?(?P<op>responses)$`), token: responsesToken},
	// Google: Vertex AI's publishers before AI Studio's models.
	{name: "vertex-anthropic", shape: "…/publishers/anthropic/models/M:rawPredict, :streamRawPredict", re: regexp.MustCompile(`/publishers/anthropic/models/(?P<model>[^/:]+):(?P<op>rawPredict|streamRawPredict)$`), streamOps: []string{"streamRawPredict"}, notModels: []string{"count-tokens"}, token: anthropicToken},
	{name: "vertex", shape: "…/publishers/google/models/M:generateContent, :streamGenerateContent", re: regexp.MustCompile(`/publishers/google/models/(?P<model>[^/:]+):(?P<op>generateContent|streamGenerateContent)$`), streamOps: []string{"streamGenerateContent"}, token: geminiToken},
	{name: "gemini", shape: "/v1beta/models/M:generateContent, :streamGenerateContent", re: regexp.MustCompile(`/models/(?P<model>[^/:]+):(?P<op>generateContent|streamGenerateContent)$`), streamOps: []string{"streamGenerateContent"}, token: geminiToken},
	// Bedrock Runtime: Converse and InvokeModel (an Anthropic body).
	{name: "bedrock", shape: "/model/ID/converse, converse-stream, invoke, invoke-with-response-stream", re: regexp.MustCompile(`/model/(?P<model>[^/]+)/(?P<op>converse|converse-stream|invoke|invoke-with-response-stream)$`), streamOps: []string{"converse-stream", "invoke-with-response-stream"}, token: bedrockToken},
	{name: "anthropic", shape: "/v1/messages", re: regexp.MustCompile(`/(?P<op>messages)$`), token: anthropicToken},
	{name: "openai", shape: "/v1/chat/completions", re: regexp.MustCompile(`/(?P<op>chat/completions)$`), token: chatToken},
	{name: "openai-responses", shape: "/v1/responses", re: regexp.MustCompile(`/(?P<op>responses)$`), token: responsesToken},
}

// Formats are the names ProviderOf gives, in the order it tries them
// (azure-openai twice: its deployment and v1 paths).
func Formats() []string {
	var out []string
	for _, f := range formats {
		if len(out) == 0 || out[len(out)-1] != f.name {
			out = append(out, f.name)
		}
	}
	return out
}

// Supported lists every format with the paths it is recorded from, in
// ProviderOf's order, for the messages that refuse another: "azure-openai
// (/openai/deployments/D/chat/completions, /openai/v1/chat/completions),
// …, anthropic (/v1/messages), …".
func Supported() string {
	var b strings.Builder
	for i, f := range formats {
		switch {
		case i > 0 && formats[i-1].name == f.name:
			b.WriteString(", ")
		case i > 0:
			b.WriteString("), ")
			fallthrough
		default:
			b.WriteString(f.name + " (")
		}
		b.WriteString(f.shape)
	}
	b.WriteString(")")
	return b.String()
}

// call is what a request's path says of it.
type call struct {
	f      *format
	model  string // "" when the path names none
	stream bool   // the path asks for a stream
}

// route finds the format of a request path (its raw, escaped form: a
// Bedrock model id may hold an escaped "/"); f is nil for a path of no
// supported model call.
func route(u *url.URL) call {
	path := u.EscapedPath()
	for i := range formats {
		f := &formats[i]
		m := f.re.FindStringSubmatch(path)
		if m == nil {
			continue
		}
		c := call{f: f}
		if j := f.re.SubexpIndex("model"); j >= 0 {
			c.model, _ = url.PathUnescape(m[j])
		}
		if slices.Contains(f.notModels, c.model) {
			return call{}
		}
		op := m[f.re.SubexpIndex("op")]
		for _, s := range f.streamOps {
			c.stream = c.stream || op == s
		}
		return c
	}
	return call{}
}

// ProviderOf names the wire format of a request path: anthropic
// (/v1/messages), openai (/v1/chat/completions), openai-responses
// (/v1/responses), azure-openai (/openai/deployments/D/chat/completions,
// /openai/v1/chat/completions), azure-openai-responses
// (/openai/responses, /openai/v1/responses), gemini
// (/v1beta/models/M:generateContent, :streamGenerateContent), vertex
// (…/publishers/google/models/M:generateContent), vertex-anthropic
// (…/publishers/anthropic/models/M:rawPredict, :streamRawPredict), bedrock
// (/model/ID/converse, converse-stream, invoke,
// invoke-with-response-stream); "" for any other.
func ProviderOf(path string) string {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	if c := route(u); c.f != nil {
		return c.f.name
	}
	return ""
}

// keyOf is the credential a request carries, whose label the line gets:
// x-api-key (Anthropic), api-key (Azure), x-goog-api-key or ?key= (the
// Gemini API), a bearer token, or a SigV4 signature's access key id
// (Bedrock: the secret never travels).
func keyOf(req *http.Request) string {
	h := req.Header
	for _, name := range []string{"X-Api-Key", "Api-Key", "X-Goog-Api-Key"} {
		if k := h.Get(name); k != "" {
			return k
		}
	}
	a := h.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return a[7:]
	}
	if rest, ok := strings.CutPrefix(a, "AWS4-HMAC-SHA256 "); ok {
		if _, cred, ok := strings.Cut(rest, "Credential="); ok {
			akid, _, _ := strings.Cut(cred, "/")
			return akid
		}
	}
	return req.URL.Query().Get("key")
}

var (
	chatContent  = []byte(`"content":"`)
	anthropicEvs = map[string]bool{"content_block_delta": true}
	responsesEvs = map[string]bool{"response.output_text.delta": true, "response.function_call_arguments.delta": true, "response.refusal.delta": true}
)

func anthropicToken(event string, _ []byte) bool { return anthropicEvs[event] }

func responsesToken(event string, _ []byte) bool { return responsesEvs[event] }

// chatToken: a Chat Completions chunk with content or a tool call (Azure's
// first chunk, of prompt_filter_results only, has neither).
func chatToken(_ string, data []byte) bool {
	if i := bytes.Index(data, chatContent); i >= 0 && i+len(chatContent) < len(data) && data[i+len(chatContent)] != '"' {
		return true
	}
	return bytes.Contains(data, []byte(`"tool_calls":[`))
}

// geminiToken: a chunk of streamGenerateContent whose first candidate has
// a part with text or a function call (the last chunk's empty text part,
// with the finishReason, is none).
func geminiToken(_ string, data []byte) bool {
	found := false
	gjson.GetBytes(data, "candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
		found = p.Get("text").String() != "" || p.Get("functionCall").Exists()
		return !found
	})
	return found
}

// bedrockToken: ConverseStream's contentBlockDelta with text or tool-use
// input, or InvokeModelWithResponseStream's chunk holding a Messages
// content_block_delta (the chunk is decoded before this is asked: its
// event is then the Messages event's type).
func bedrockToken(event string, data []byte) bool {
	switch event {
	case "contentBlockDelta":
		d := gjson.GetBytes(data, "delta")
		return d.Get("text").String() != "" || d.Get("toolUse").Exists() || d.Get("reasoningContent").Exists()
	case "content_block_delta":
		return true
	}
	return false
}
