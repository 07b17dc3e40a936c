package mock_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
)

// TestNodeBedrock runs testdata/node/bedrock.mjs — the AWS SDK for
// JavaScript v3's BedrockRuntimeClient and the AI SDK's
// @ai-sdk/amazon-bedrock, unchanged — against five mocks: one without
// faults (Converse, ConverseStream, tool calls, structured output,
// InvokeModel), one whose first attempt of each call is a scripted
// ThrottlingException, two with rpm 1 and one whose first two attempts are
// ModelNotReadyException. The script asserts what each client returns; the
// mocks' metrics then show every attempt each client made, by status.
func TestNodeBedrock(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the JavaScript client tests need node and `npm ci` in mock/testdata/node (make node-deps)")
	}
	dir := filepath.Join("testdata", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@aws-sdk", "client-bedrock-runtime")); err != nil {
		t.Fatalf("%s/node_modules lacks @aws-sdk/client-bedrock-runtime: run `npm ci` in %s (make node-deps)", dir, dir)
	}
	urls := map[string]string{
		"BEDROCK_BASE_URL":      startTCPMock(t, ""),
		"BEDROCK_THROTTLE_URL":  startTCPMock(t, "faults: {script: [{attempts: 1, status: 429}]}\n"),
		"BEDROCK_RPM_URL":       startTCPMock(t, "limits: {rpm: 1}\n"),
		"BEDROCK_NOT_READY_URL": startTCPMock(t, "faults: {script: [{attempts: 2, status: 529}]}\n"),
		"BEDROCK_AI_RPM_URL":    startTCPMock(t, "limits: {rpm: 1}\n"),
		"BEDROCK_SIGNED_URL":    startTCPMock(t, "aws_secret_keys: {AKIDNODETEST: js-secret}\n"),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "bedrock.mjs")
	cmd.Dir = dir
	// No AWS_* variable of the environment: an AWS_BEARER_TOKEN_BEDROCK,
	// even empty, makes the JavaScript SDK choose bearer auth.
	cmd.Env = withoutAWSEnv()
	cmd.Env = append(cmd.Env, "FILLER_5="+mock.Filler(5), "FILLER_12="+mock.Filler(12))
	for k, v := range urls {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("node bedrock.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("node bedrock.mjs: %v", err)
	}
	// What each mock saw: the attempts behind the script's checks.
	want := map[string]string{
		"BEDROCK_BASE_URL":      "map[bedrock:9] map[]",              // 5 AWS SDK calls, 4 AI SDK calls
		"BEDROCK_THROTTLE_URL":  "map[bedrock:1] map[bedrock 429:1]", // retried once
		"BEDROCK_RPM_URL":       "map[bedrock:1] map[bedrock 429:3]", // 3 attempts, all throttled
		"BEDROCK_NOT_READY_URL": "map[bedrock:1] map[bedrock 529:2]", // ModelNotReadyException retried twice: sent as 429, counted in /metrics as the scripted 529 (docs/bedrock.md)
		"BEDROCK_AI_RPM_URL":    "map[bedrock:1] map[bedrock 429:3]",
		"BEDROCK_SIGNED_URL":    "map[bedrock:3] map[bedrock 401:1]", // the wrong secret: sent as 403, counted as 401 // the AI SDK's maxRetries 2
	}
	for k, base := range urls {
		ok, failed := requestsByAPI(t, base)
		if got := fmt.Sprint(ok, " ", failed); got != want[k] {
			t.Errorf("%s: requests by status %s, want %s", k, got, want[k])
		}
	}
}
