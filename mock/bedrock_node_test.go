package mock_test

import (
	"path/filepath"
	"testing"

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
	urls := map[string]string{
		"BEDROCK_BASE_URL":      bedrockMock(t, ""),
		"BEDROCK_THROTTLE_URL":  bedrockMock(t, "faults: {script: [{attempts: 1, status: 429}]}\n"),
		"BEDROCK_RPM_URL":       bedrockMock(t, "limits: {rpm: 1}\n"),
		"BEDROCK_NOT_READY_URL": bedrockMock(t, "faults: {script: [{attempts: 2, status: 529}]}\n"),
		"BEDROCK_AI_RPM_URL":    bedrockMock(t, "limits: {rpm: 1}\n"),
		"BEDROCK_SIGNED_URL":    bedrockMock(t, "aws_secret_keys: {AKIDNODETEST: js-secret}\n"),
	}
	// No AWS_* variable of the environment: an AWS_BEARER_TOKEN_BEDROCK,
	// even empty, makes the JavaScript SDK choose bearer auth.
	runNode(t, clientScript{
		dir:   filepath.Join("testdata", "node"),
		argv:  []string{"bedrock.mjs"},
		env:   append(urlEnv(urls), "FILLER_5="+mock.Filler(5), "FILLER_12="+mock.Filler(12)),
		noAWS: true,
	}, "@aws-sdk/client-bedrock-runtime")
	// What each mock saw: the attempts behind the script's checks.
	checkRequests(t, urls, map[string]string{
		"BEDROCK_BASE_URL":      "map[bedrock:9] map[]",              // 5 AWS SDK calls, 4 AI SDK calls
		"BEDROCK_THROTTLE_URL":  "map[bedrock:1] map[bedrock 429:1]", // retried once
		"BEDROCK_RPM_URL":       "map[bedrock:1] map[bedrock 429:3]", // 3 attempts, all throttled
		"BEDROCK_NOT_READY_URL": "map[bedrock:1] map[bedrock 529:2]", // ModelNotReadyException retried twice: sent as 429, counted in /metrics as the scripted 529 (docs/bedrock.md)
		"BEDROCK_AI_RPM_URL":    "map[bedrock:1] map[bedrock 429:3]",
		"BEDROCK_SIGNED_URL":    "map[bedrock:3] map[bedrock 401:1]", // the wrong secret: sent as 403, counted as 401 // the AI SDK's maxRetries 2
	})
}
