package mock_test

import (
	"path/filepath"
	"testing"
)

// TestNodeClients runs testdata/node/clients.mjs — the Vercel AI SDK and
// LangChain JS, unchanged — against a mock configured as mockllm serves by
// default (natural stops), with the AI SDK 6 (testdata/node) and 7
// (testdata/node-ai7, the same script through a symlink). The mock's
// metrics then show that every request succeeded and that the AI SDK's
// default OpenAI provider used the Responses API: its five checks, one
// request each. It needs node and the packages `npm ci` installs in each
// folder (make node-deps does).
func TestNodeClients(t *testing.T) {
	for _, dir := range []string{"node", "node-ai7"} {
		t.Run(dir, func(t *testing.T) {
			base := scriptMock(t, "output:\n  length: natural\nlatency:\n  per_token: 1ms\n").URL
			// --preserve-symlinks-main: node-ai7's clients.mjs is a symlink, and its
			// imports must resolve in its own folder's node_modules.
			runNode(t, clientScript{
				dir:  filepath.Join("testdata", dir),
				argv: []string{"--preserve-symlinks", "--preserve-symlinks-main", "clients.mjs"},
				env:  []string{"ANTHROPIC_BASE_URL=" + base, "OPENAI_BASE_URL=" + base + "/v1"},
			})
			ok, failed := requestsByAPI(t, base)
			t.Logf("successful requests by API: %v", ok)
			if len(failed) > 0 {
				t.Errorf("requests that did not succeed, by API and status: %v", failed)
			}
			if ok["openai-responses"] != 5 {
				t.Errorf("%d successful /v1/responses requests, want 5 (the default provider's checks); by API: %v", ok["openai-responses"], ok)
			}
		})
	}
}
