package mock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// sdkGenerated is one of the official SDKs' own generated API tests for an
// endpoint mockllm serves, run from the SDK's module as `go test` runs it
// against the Prism mock server it was written for. Where it fails against
// mockllm, reason is the error mockllm answers and why the real API would
// answer the same (docs/time-and-tests.md lists each).
type sdkGenerated struct {
	test   string
	reason string // "" when the test passes
}

var sdkGeneratedTests = []struct {
	pkgs  []string
	base  string // appended to the mock's URL for TEST_API_BASE_URL
	tests []sdkGenerated
}{
	{
		pkgs: []string{"github.com/anthropics/anthropic-sdk-go"},
		tests: []sdkGenerated{
			// Its tool's input_schema has "properties": {"location": "bar"}:
			// a property schema must be an object or a boolean, and the
			// Messages API validates input_schema as JSON Schema 2020-12.
			{"TestMessageNewWithOptionalParams", "tools.0.input_schema: invalid schema"},
			{"TestMessageCountTokensWithOptionalParams", ""},
			// It asks for the model "model_id", which does not exist.
			{"TestModelGetWithOptionalParams", "model: model_id"},
			{"TestModelListWithOptionalParams", ""},
			{"TestMessageBatchNewWithOptionalParams", ""},
			// The batch tests name batches that were never created
			// ("message_batch_id"), and list with both cursors at once.
			{"TestMessageBatchGetWithOptionalParams", "GET /v1/messages/batches/message_batch_id: 404"},
			{"TestMessageBatchListWithOptionalParams", "after_id and before_id: give at most one"},
			{"TestMessageBatchDeleteWithOptionalParams", "DELETE /v1/messages/batches/message_batch_id: 404"},
			{"TestMessageBatchCancelWithOptionalParams", "POST /v1/messages/batches/message_batch_id/cancel: 404"},
		},
	},
	{
		pkgs: []string{"github.com/openai/openai-go/v3", "github.com/openai/openai-go/v3/responses"},
		base: "/v1",
		tests: []sdkGenerated{
			// It sends max_tokens: 0; the API's minimum is 1.
			{"TestChatCompletionNewWithOptionalParams", "max_tokens: must be at least 1, got 0"},
			{"TestModelGet", ""},
			{"TestModelList", ""},
			// It continues "previous_response_id", a response that was never
			// created (the mock stores none).
			{"TestResponseNewWithOptionalParams", "previous_response_not_found"},
			// The batch and file tests name objects that were never
			// created ("input_file_id", "batch_id", "file_id"), and list
			// with limit 0, below the API's minimum of 1.
			{"TestBatchNewWithOptionalParams", "No such File object: input_file_id"},
			{"TestBatchGet", "GET /v1/batches/batch_id: 404"},
			{"TestBatchListWithOptionalParams", "limit: want an integer in [1, 100], got \\\"0\\\""},
			{"TestBatchCancel", "POST /v1/batches/batch_id/cancel: 404"},
			{"TestFileNewWithOptionalParams", ""},
			{"TestFileGet", "GET /v1/files/file_id: 404"},
			{"TestFileListWithOptionalParams", "limit: want an integer in [1, 10000], got \\\"0\\\""},
			{"TestFileDelete", "DELETE /v1/files/file_id: 404"},
			// It downloads from a server of its own (httptest), not the mock.
			{"TestFileContent", ""},
		},
	},
}

// TestSDKGeneratedTests runs the official Go SDKs' generated tests of the
// endpoints mockllm serves (from the SDK modules go.mod pins, compiled by
// the go command the tests run under) against a mockllm: each passes, or
// fails with exactly the error its table entry gives, and the mock answers
// no other error.
func TestSDKGeneratedTests(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the SDKs' tests: %v", err)
	}
	cfg, err := mock.ParseConfig([]byte("seed: 1\nlatency: {ttft: 0s, ttft_per_input_token: 0s, per_token: 0s}\n"), "sdkgen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// On loopback: the SDKs' tests run in processes of their own.
	rec := &errorRecorder{}
	url := mocktest.Start(t, cfg, mocktest.Wrap(func(h http.Handler) http.Handler { rec.h = h; return rec })).URL

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, set := range sdkGeneratedTests {
		wg.Go(func() {
			names := make([]string, len(set.tests))
			for i, tc := range set.tests {
				names[i] = tc.test
			}
			args := append([]string{"test", "-count=1", "-vet=off", "-json", "-run", "^(" + strings.Join(names, "|") + ")$"}, set.pkgs...)
			cmd := exec.CommandContext(ctx, goBin, args...)
			cmd.Env = append(os.Environ(), "TEST_API_BASE_URL="+url+set.base)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, runErr := cmd.Output()
			got := map[string]string{} // test → pass | fail
			for line := range bytes.Lines(out) {
				var ev struct{ Action, Test, Output string }
				if json.Unmarshal(line, &ev) == nil && ev.Test != "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
					got[ev.Test] = ev.Action
				}
			}
			for _, tc := range set.tests {
				want := "pass"
				if tc.reason != "" {
					want = "fail"
				}
				if got[tc.test] != want {
					t.Errorf("%s: %q, want %s (go test: %v; stderr: %.2000s)", tc.test, got[tc.test], want, runErr, stderr.String())
				}
			}
		})
	}
	wg.Wait()

	// Every error the mock answered is one the table explains, and every
	// reason in the table was answered.
	errs := rec.errors()
	for _, set := range sdkGeneratedTests {
		for _, tc := range set.tests {
			if tc.reason != "" && !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.reason) }) {
				t.Errorf("%s: the mock never answered %q; errors: %q", tc.test, tc.reason, errs)
			}
		}
	}
	for _, e := range errs {
		explained := false
		for _, set := range sdkGeneratedTests {
			for _, tc := range set.tests {
				explained = explained || (tc.reason != "" && strings.Contains(e, tc.reason))
			}
		}
		if !explained {
			t.Errorf("the mock answered an error no table entry explains: %s", e)
		}
	}
}

// errorRecorder keeps the status and body of every answer of 400 or more,
// but the harness's probe.
type errorRecorder struct {
	h    http.Handler
	mu   sync.Mutex
	errs []string
}

func (r *errorRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	cw := &captureWriter{ResponseWriter: w}
	r.h.ServeHTTP(cw, req)
	// The SDKs' test harness (testutil.CheckTestServer) first GETs the
	// base URL to see that a server is up; any answer will do.
	probe := req.Method == http.MethodGet && (req.URL.Path == "/" || req.URL.Path == "/v1")
	if cw.status >= 400 && !probe {
		r.mu.Lock()
		r.errs = append(r.errs, fmt.Sprintf("%s %s: %d %s", req.Method, req.URL.Path, cw.status, cw.body.String()))
		r.mu.Unlock()
	}
}

func (r *errorRecorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

type captureWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.status >= 400 && c.body.Len() < 4096 {
		c.body.Write(b)
	}
	return c.ResponseWriter.Write(b)
}

func (c *captureWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
