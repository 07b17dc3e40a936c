package mock_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/pyenv"
	"github.com/ratelab/ratelab/mock"
)

// startTCPMock serves yaml (after a fast latency) on 127.0.0.1 until the
// test ends and returns its base URL.
func startTCPMock(t *testing.T, yaml string) string {
	t.Helper()
	cfg, err := mock.ParseConfig([]byte("latency: {ttft: 0s, per_token: 1ms}\n"+yaml), "bedrock-clients.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// withoutAWSEnv is the environment without AWS_* variables: the clients
// get their credentials and endpoints from the scripts only.
func withoutAWSEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestPythonBedrock runs testdata/python/bedrock_boto3.py — boto3's
// bedrock-runtime client from the project's venv, unchanged — against
// four mocks (see the script), then checks every attempt each mock saw.
func TestPythonBedrock(t *testing.T) {
	py := pyenv.Python(t)
	urls := map[string]string{
		"BEDROCK_BASE_URL":      startTCPMock(t, ""),
		"BEDROCK_THROTTLE_URL":  startTCPMock(t, "faults: {script: [{attempts: 1, status: 429}]}\n"),
		"BEDROCK_RPM_URL":       startTCPMock(t, "limits: {rpm: 1}\n"),
		"BEDROCK_NOT_READY_URL": startTCPMock(t, "faults: {script: [{attempts: 2, status: 529}]}\n"),
		"BEDROCK_SIGNED_URL":    startTCPMock(t, "aws_secret_keys: {AKIDPYTHONTEST: py-secret}\n"),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "python", "bedrock_boto3.py"))
	cmd.Env = append(withoutAWSEnv(), "FILLER_5="+mock.Filler(5), "FILLER_12="+mock.Filler(12))
	for k, v := range urls {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("bedrock_boto3.py:\n%s", out)
	if err != nil {
		t.Fatalf("bedrock_boto3.py: %v", err)
	}
	want := map[string]string{
		"BEDROCK_BASE_URL":      "map[bedrock:5] map[bedrock 400:1]", // 5 calls and the ValidationException, not retried
		"BEDROCK_THROTTLE_URL":  "map[bedrock:1] map[bedrock 429:1]", // retried once
		"BEDROCK_RPM_URL":       "map[bedrock:1] map[bedrock 429:3]", // standard mode's 3 attempts
		"BEDROCK_NOT_READY_URL": "map[bedrock:1] map[bedrock 529:2]", // sent as 429, counted as the scripted 529
		"BEDROCK_SIGNED_URL":    "map[bedrock:2] map[bedrock 401:1]", // the wrong secret: sent as 403, counted as 401
	}
	for k, base := range urls {
		ok, failed := requestsByAPI(t, base)
		if got := fmt.Sprint(ok, " ", failed); got != want[k] {
			t.Errorf("%s: requests by status %s, want %s", k, got, want[k])
		}
	}
}
