package recordproxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/pyenv"
	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/internal/recordproxy"
	"github.com/ratelab/ratelab/mock"
)

// TestBoto3ThroughProxy runs testdata/boto3_proxy.py — boto3's
// bedrock-runtime client from the project's venv, unchanged — against the
// recording proxy with max_concurrent 1 (mockllm --upstream URL --record
// FILE --max-concurrent 1) in front of a mock that verifies botocore's
// SigV4 signature (so the proxy must keep the Host it was signed for). A
// stream holds the slot; the converse that follows is refused by the
// proxy itself (ThrottlingException, no retry-after: Bedrock sends none),
// and botocore's retry, once the stream is drained, goes through the proxy
// and succeeds. The recording has the two forwarded attempts only: the
// stream, and the converse's successful attempt with botocore's attempt
// count (amz-sdk-request) as its retry count; the proxy's refusals are
// its own, not the upstream's.
func TestBoto3ThroughProxy(t *testing.T) {
	py := pyenv.Python(t)
	cfg := mock.DefaultConfig()
	cfg.Latency.TTFT, cfg.Latency.PerToken = 0, time.Millisecond
	cfg.Output.Tokens = mock.Distribution{Kind: mock.MaxTokens}
	cfg.AWSSecretKeys = map[string]string{"AKIDPROXYPY": "proxy-secret"}
	up, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	upstream := httptest.NewServer(up.Handler())
	defer upstream.Close()
	lcfg := mock.DefaultConfig()
	lcfg.Limits.MaxConcurrent = 1
	lcfg, err = mock.UpstreamConfig(lcfg)
	if err != nil {
		t.Fatal(err)
	}
	psrv, err := mock.New(lcfg)
	if err != nil {
		t.Fatal(err)
	}
	var rec bytes.Buffer
	w, _ := record.NewWriter(&rec, record.Header{Source: "mockllm proxy"})
	u, _ := url.Parse(upstream.URL)
	proxy := httptest.NewServer(recordproxy.Limited(psrv, u, w, nil))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "boto3_proxy.py"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") { // the script's credentials and endpoint only
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PROXY_URL="+proxy.URL)
	out, err := cmd.CombinedOutput()
	t.Logf("boto3_proxy.py:\n%s", out)
	if err != nil {
		t.Fatalf("boto3_proxy.py: %v", err)
	}
	proxy.Close() // every exchange has ended: the recording is whole
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var saw struct {
		Retries      int `json:"retries"`
		OutputTokens int `json:"output_tokens"`
		StreamDeltas int `json:"stream_deltas"`
		Throttles    []struct {
			Attempt    int     `json:"attempt"`
			Code       string  `json:"code"`
			RetryAfter *string `json:"retry_after"`
		} `json:"throttles"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &saw); err != nil {
		t.Fatalf("the script's last line: %v", err)
	}
	if saw.Retries < 1 || len(saw.Throttles) != saw.Retries || saw.OutputTokens != 12 || saw.StreamDeltas == 0 {
		t.Errorf("boto3 saw %+v: want at least one throttle retried, 12 output tokens and the stream's deltas", saw)
	}
	for i, th := range saw.Throttles {
		if th.Attempt != i+1 || th.Code != "ThrottlingException" || th.RetryAfter != nil {
			t.Errorf("throttle %d: %+v; want attempt %d, ThrottlingException, no retry-after", i, th, i+1)
		}
	}
	if st := psrv.Stats(); st.Throttled != int64(saw.Retries) || st.Admitted != 2 {
		t.Errorf("the proxy's limits: %d admitted, %d throttled; want 2 and the SDK's %d retries", st.Admitted, st.Throttled, saw.Retries)
	}
	if st := up.Stats(); st.Admitted != 2 || st.Errors != 0 || st.Throttled != 0 {
		t.Errorf("the upstream: %d admitted, %d errors, %d throttled; want the 2 forwarded (signatures verified), 0, 0", st.Admitted, st.Errors, st.Throttled)
	}

	f, err := record.Parse(&rec, "proxy.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Attempts) != 2 {
		t.Fatalf("%d lines, want 2 (the stream and the converse's forwarded attempt): %+v", len(f.Attempts), f.Attempts)
	}
	var stream, conv record.Attempt
	for _, a := range f.Attempts {
		if a.Stream {
			stream = a
		} else {
			conv = a
		}
	}
	label := record.KeyLabel("AKIDPROXYPY")
	if stream.Provider != "bedrock" || !strings.HasSuffix(stream.Path, "/converse-stream") || stream.Status != 200 || stream.Key != label ||
		stream.RetryCount != 0 || stream.Frames != saw.StreamDeltas || stream.Usage == nil || stream.Usage.OutputTokens != 12 {
		t.Errorf("the stream's line %+v; want bedrock converse-stream, 200, key %s, retry count 0, %d frames, 12 output tokens", stream, label, saw.StreamDeltas)
	}
	if conv.Provider != "bedrock" || !strings.HasSuffix(conv.Path, "/converse") || conv.Status != 200 || conv.Key != label ||
		conv.RetryCount != saw.Retries || conv.Model != "anthropic.claude-haiku-4-5-20251001-v1:0" || conv.Usage == nil || conv.Usage.OutputTokens != 12 {
		t.Errorf("the converse's line %+v; want bedrock converse, 200, key %s, retry count %d, 12 output tokens", conv, label, saw.Retries)
	}
}
