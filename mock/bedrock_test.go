package mock_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
)

// TestBedrockBadRequests: every malformed Bedrock request is a 400
// ValidationException whose message names what is wrong, never a 500 or
// a panic; a malformed signature is refused even in open mode.
func TestBedrockBadRequests(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":[{"text":"x"}]}]`
	cases := []struct {
		path, body, auth string
		status           int
		typ, want        string
	}{
		{"converse", `null`, "", 400, "ValidationException", "messages"},
		{"converse", `[]`, "", 400, "ValidationException", "JSON object"},
		{"converse", `{`, "", 400, "ValidationException", "invalid JSON"},
		{"converse", `{"messages":"x"}`, "", 400, "ValidationException", "messages"},
		{"converse", `{"messages":[{"role":"user","content":"x"}]}`, "", 400, "ValidationException", "messages.0.content"},
		{"converse", `{"messages":[{"role":"user","content":[{}]}]}`, "", 400, "ValidationException", "messages.0.content.0"},
		{"converse", `{"messages":[{"role":"robot","content":[{"text":"x"}]}]}`, "", 400, "ValidationException", "messages.0.role"},
		{"converse", `{"messages":[{"role":"assistant","content":[{"text":"x"}]}]}`, "", 400, "ValidationException", "start with a user message"},
		{"converse", `{` + msgs + `,"inferenceConfig":{"maxTokens":0}}`, "", 400, "ValidationException", "inferenceConfig.maxTokens"},
		{"converse", `{` + msgs + `,"toolConfig":{"tools":[]}}`, "", 400, "ValidationException", "toolConfig.tools"},
		{"converse", `{` + msgs + `,"toolConfig":{"tools":[{"toolSpec":{"name":"t"}}]}}`, "", 400, "ValidationException", "toolConfig.tools.0.toolSpec.inputSchema.json"},
		{"converse", `{` + msgs + `,"toolConfig":{"tools":[{"toolSpec":{"name":"t","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"tool":{"name":"u"}}}}`, "", 400, "ValidationException", "toolConfig.toolChoice.tool.name"},
		{"converse", `{` + msgs + `,"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":"{not json"}}}}}`, "", 400, "ValidationException", "outputConfig.textFormat.structure.jsonSchema.schema"},
		{"converse", `{` + msgs + `,"additionalModelRequestFields":{"output_config":{"format":{"type":"text"}}}}`, "", 400, "ValidationException", "additionalModelRequestFields.output_config.format.type"},
		{"converse-stream", `{` + msgs + `,"inferenceConfig":{"topP":2}}`, "", 400, "ValidationException", "inferenceConfig.topP"},
		{"invoke", `{}`, "", 400, "ValidationException", "anthropic_version"},
		{"invoke", `null`, "", 400, "ValidationException", "anthropic_version"},
		{"invoke", `{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"model":"x","messages":[{"role":"user","content":"x"}]}`, "", 400, "ValidationException", "model"},
		{"invoke", `{"anthropic_version":"bedrock-2023-05-31","messages":[{"role":"user","content":"x"}]}`, "", 400, "ValidationException", "max_tokens"},
		{"invoke", `{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"temperature":3,"messages":[{"role":"user","content":"x"}]}`, "", 400, "ValidationException", "temperature"},
		{"invoke-with-response-stream", `{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "", 400, "ValidationException", "bedrock-2023-05-31"},
		{"converse", `{` + msgs + `}`, "AWS4-HMAC-SHA256 Credential=AKID/20000101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + strings.Repeat("a", 64), 400, "IncompleteSignatureException", "'bedrock'"},
		{"converse", `{` + msgs + `}`, "AWS4-HMAC-SHA256 Credential=AKID", 400, "IncompleteSignatureException", "Credential"},
	}
	synctest.Test(t, func(t *testing.T) {
		h := startMock(t, "models: any\n")
		for _, tc := range cases {
			model := "anthropic.claude-sonnet-4-5-20250929-v1:0"
			req, _ := http.NewRequest(http.MethodPost, sdkBaseURL+"/model/"+model+"/"+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Amz-Date", "20000101T000000Z")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := h.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var body struct{ Message string }
			json.Unmarshal(b, &body)
			typ, _, _ := strings.Cut(resp.Header.Get("X-Amzn-Errortype"), ":")
			if resp.StatusCode != tc.status || typ != tc.typ || !strings.Contains(body.Message, tc.want) {
				t.Errorf("%s %s: %d %s %q, want %d %s naming %q", tc.path, tc.body, resp.StatusCode, typ, body.Message, tc.status, tc.typ, tc.want)
			}
		}
		// InvokeModel for another provider's model.
		req, _ := http.NewRequest(http.MethodPost, sdkBaseURL+"/model/amazon.nova-pro-v1:0/invoke", strings.NewReader(`{}`))
		resp, err := h.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), "Anthropic models") {
			t.Errorf("invoke amazon.nova-pro: %d %s, want 400 naming the Anthropic-only InvokeModel", resp.StatusCode, b)
		}
	})
}
