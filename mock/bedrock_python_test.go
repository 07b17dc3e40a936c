package mock_test

import (
	"path/filepath"
	"testing"

	"github.com/ratelab/ratelab/mock"
)

// TestPythonBedrock runs testdata/python/bedrock_boto3.py — boto3's
// bedrock-runtime client from the project's venv, unchanged — against
// four mocks (see the script), then checks every attempt each mock saw.
func TestPythonBedrock(t *testing.T) {
	urls := map[string]string{
		"BEDROCK_BASE_URL":      bedrockMock(t, ""),
		"BEDROCK_THROTTLE_URL":  bedrockMock(t, "faults: {script: [{attempts: 1, status: 429}]}\n"),
		"BEDROCK_RPM_URL":       bedrockMock(t, "limits: {rpm: 1}\n"),
		"BEDROCK_NOT_READY_URL": bedrockMock(t, "faults: {script: [{attempts: 2, status: 529}]}\n"),
		"BEDROCK_SIGNED_URL":    bedrockMock(t, "aws_secret_keys: {AKIDPYTHONTEST: py-secret}\n"),
	}
	runPython(t, clientScript{
		argv:  []string{filepath.Join("testdata", "python", "bedrock_boto3.py")},
		env:   append(urlEnv(urls), "FILLER_5="+mock.Filler(5), "FILLER_12="+mock.Filler(12)),
		noAWS: true,
	})
	checkRequests(t, urls, map[string]string{
		"BEDROCK_BASE_URL":      "map[bedrock:5] map[bedrock 400:1]", // 5 calls and the ValidationException, not retried
		"BEDROCK_THROTTLE_URL":  "map[bedrock:1] map[bedrock 429:1]", // retried once
		"BEDROCK_RPM_URL":       "map[bedrock:1] map[bedrock 429:3]", // standard mode's 3 attempts
		"BEDROCK_NOT_READY_URL": "map[bedrock:1] map[bedrock 529:2]", // sent as 429, counted as the scripted 529
		"BEDROCK_SIGNED_URL":    "map[bedrock:2] map[bedrock 401:1]", // the wrong secret: sent as 403, counted as 401
	})
}
