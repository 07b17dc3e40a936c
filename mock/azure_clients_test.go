package mock_test

import (
	"path/filepath"
	"testing"
)

// azureClientsConfig is the Azure mock the Python and Node clients run
// against: chat-prod serves gpt-4o, limited and limited-ai serve it at one request at
// once, then one a second (the clients' 429 checks wait up to that second);
// mini serves gpt-4o-mini. Answers are 12 tokens.
const azureClientsConfig = `
api_keys: [` + sdkKey + `]
latency: {per_token: 1ms}
output: {tokens: {fixed: 12}}
azure:
  deployments:
    chat-prod: {model: gpt-4o}
    limited: {model: gpt-4o, limits: {rpm: 60, burst: 1s}}
    limited-ai: {model: gpt-4o, limits: {rpm: 60, burst: 1s}}
    mini: {model: gpt-4o-mini}
`

// runAzureClient runs a client script with MOCK_URL and MOCK_FILTER_URL
// and checks that it printed every check's ok line.
func runAzureClient(t *testing.T, want []string, run func(*testing.T, clientScript) string, script string) {
	t.Helper()
	url := scriptMock(t, azureClientsConfig).URL
	filter := scriptMock(t, azureClientsConfig+"  content_filter: 1\n").URL
	out := run(t, clientScript{
		dir:  filepath.Dir(script),
		argv: []string{filepath.Base(script)},
		env:  []string{"MOCK_URL=" + url, "MOCK_FILTER_URL=" + filter},
	})
	checkOKLines(t, out, want)
}

// TestAzurePythonClient runs openai.AzureOpenAI, unchanged, against the
// mock: plain, stream, tools, structured output, a 429 it retries after
// retry-after-ms, and the content filter's 400.
func TestAzurePythonClient(t *testing.T) {
	runAzureClient(t, []string{"plain", "stream", "tools", "structured", "429 retried", "429 error", "content_filter"}, runPython, "testdata/python/azure_openai.py")
}

// TestAzureNodeClients runs openai's AzureOpenAI and the AI SDK's
// @ai-sdk/azure, unchanged, against the mock (testdata/node/azure.mjs).
func TestAzureNodeClients(t *testing.T) {
	var want []string
	for _, c := range []string{"openai", "ai-sdk responses", "ai-sdk chat"} {
		for _, k := range []string{"plain", "stream", "tools", "structured"} {
			want = append(want, c+" "+k)
		}
	}
	runNodeAzure := func(t *testing.T, s clientScript) string { return runNode(t, s, "@ai-sdk/azure") }
	runAzureClient(t, append(want, "openai 429", "openai content_filter", "ai-sdk 429"), runNodeAzure, "testdata/node/azure.mjs")
}
