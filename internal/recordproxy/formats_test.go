package recordproxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/ratelab/ratelab/internal/memnet"
	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/internal/recordproxy"
	"github.com/ratelab/ratelab/mock"
)

// A formatCall is one request of a format's row.
type formatCall struct {
	path, body string
	stream     bool
}

// A formatRow is how a client of one wire format calls: its credential
// (and the headers the format sends with it), the model its line names and
// its calls, at least one plain and one streamed.
type formatRow struct {
	key   string // whose label the line gets
	auth  func(t *testing.T, req *http.Request, body string)
	model string
	calls []formatCall
	// eventstream: the streams are application/vnd.amazon.eventstream
	// (Bedrock), not server-sent events.
	eventstream bool
}

func header(pairs ...string) func(*testing.T, *http.Request, string) {
	return func(_ *testing.T, req *http.Request, _ string) {
		for i := 0; i < len(pairs); i += 2 {
			req.Header.Set(pairs[i], pairs[i+1])
		}
	}
}

// sigV4 signs a Bedrock request as the AWS SDKs do, for the host it is
// sent to: the upstream verifies the signature (its aws_secret_keys), so
// a proxy that sent it on with another Host would be refused.
func sigV4(t *testing.T, req *http.Request, body string) {
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: "AKIDPROXYTABLE", SecretAccessKey: "table-secret"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
}

const (
	anthropicPlain  = `{"model":"claude-haiku-4-5","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`
	anthropicStream = `{"model":"claude-haiku-4-5","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	chatPlain       = `{"model":"gpt-4o-mini","max_completion_tokens":20,"messages":[{"role":"user","content":"hi"}]}`
	chatStream      = `{"model":"gpt-4o-mini","max_completion_tokens":20,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	responsesPlain  = `{"model":"gpt-4o-mini","input":"hi","max_output_tokens":20}`
	responsesStream = `{"model":"gpt-4o-mini","input":"hi","max_output_tokens":20,"stream":true}`
	geminiBody      = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":20}}`
	vertexClaude    = `{"anthropic_version":"vertex-2023-10-16","max_tokens":20,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`
	converseBody    = `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":20}}`
	invokeBody      = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`
)

// formatRows has a row for every format the recorder knows
// (record.Formats); TestProxyEveryFormat fails for a format without one.
var formatRows = map[string]formatRow{
	"anthropic": {key: "sk-ant", auth: header("x-api-key", "sk-ant", "anthropic-version", "2023-06-01"), model: "claude-haiku-4-5",
		calls: []formatCall{{"/v1/messages", anthropicPlain, false}, {"/v1/messages", anthropicStream, true}}},
	"openai": {key: "sk-oai", auth: header("Authorization", "Bearer sk-oai"), model: "gpt-4o-mini",
		calls: []formatCall{{"/v1/chat/completions", chatPlain, false}, {"/v1/chat/completions", chatStream, true}}},
	"openai-responses": {key: "sk-oai", auth: header("Authorization", "Bearer sk-oai"), model: "gpt-4o-mini",
		calls: []formatCall{{"/v1/responses", responsesPlain, false}, {"/v1/responses", responsesStream, true}}},
	// Both of Azure's path shapes.
	"azure-openai": {key: "az-key", auth: header("api-key", "az-key"), model: "gpt-4o-mini",
		calls: []formatCall{{"/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21", chatPlain, false},
			{"/openai/v1/chat/completions", chatStream, true}}},
	"azure-openai-responses": {key: "az-key", auth: header("api-key", "az-key"), model: "gpt-4o-mini",
		calls: []formatCall{{"/openai/responses?api-version=2025-03-01-preview", responsesPlain, false},
			{"/openai/v1/responses", responsesStream, true}}},
	"gemini": {key: "g-key", auth: header("x-goog-api-key", "g-key"), model: "gemini-2.5-flash",
		calls: []formatCall{{"/v1beta/models/gemini-2.5-flash:generateContent", geminiBody, false},
			{"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", geminiBody, true}}},
	"vertex": {key: "ya29.token", auth: header("Authorization", "Bearer ya29.token"), model: "gemini-2.5-flash",
		calls: []formatCall{{"/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent", geminiBody, false},
			{"/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse", geminiBody, true}}},
	"vertex-anthropic": {key: "ya29.token", auth: header("Authorization", "Bearer ya29.token"), model: "claude-haiku-4-5@20251001",
		calls: []formatCall{{"/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict", fmt.Sprintf(vertexClaude, false), false},
			{"/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict", fmt.Sprintf(vertexClaude, true), true}}},
	// Converse and InvokeModel, each plain and streamed.
	"bedrock": {key: "AKIDPROXYTABLE", auth: sigV4, model: "anthropic.claude-haiku-4-5-20251001-v1:0", eventstream: true,
		calls: []formatCall{{"/model/anthropic.claude-haiku-4-5-20251001-v1:0/converse", converseBody, false},
			{"/model/anthropic.claude-haiku-4-5-20251001-v1:0/converse-stream", converseBody, true},
			{"/model/anthropic.claude-haiku-4-5-20251001-v1:0/invoke", invokeBody, false},
			{"/model/anthropic.claude-haiku-4-5-20251001-v1:0/invoke-with-response-stream", invokeBody, true}}},
}

// serve serves h with net/http's server over an in-memory network
// (memnet: in a synctest bubble its server and client, their buffering,
// chunked encoding and flushes, run in virtual time) until the test ends,
// and returns a transport to it.
func serve(t *testing.T, h http.Handler) *http.Transport {
	l := memnet.New()
	hs := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() { hs.Serve(l); close(served) }()
	tr := &http.Transport{DialContext: l.Dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		hs.Close()
		<-served
	})
	return tr
}

// A reply is what a client read of one response: status, headers, the
// body, and each frame of a stream (an SSE event, an eventstream message)
// with when its last byte arrived, from sending.
type reply struct {
	status int
	header http.Header
	body   []byte
	frames []arrival
}

type arrival struct {
	frame string
	at    time.Duration
}

// call sends c through rt to host and reads the response as it arrives,
// one Read at a time.
func call(t *testing.T, rt http.RoundTripper, host string, row formatRow, c formatCall) reply {
	req, err := http.NewRequest("POST", "http://"+host+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	row.auth(t, req, c.body)
	sent := time.Now()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s: %v", c.path, err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	p := make([]byte, 64<<10)
	cut := 0 // where the next frame starts in r.body
	for {
		n, err := resp.Body.Read(p)
		r.body = append(r.body, p[:n]...)
		at := time.Since(sent)
		for {
			end := frameEnd(r.body[cut:], row.eventstream)
			if end < 0 {
				break
			}
			r.frames = append(r.frames, arrival{string(r.body[cut : cut+end]), at})
			cut += end
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
	}
	return r
}

// frameEnd is the length of the first whole frame of b, -1 when b holds
// none: an eventstream message is as long as its first 4 bytes say, an
// SSE event ends with a blank line (CRLF or LF).
func frameEnd(b []byte, eventstream bool) int {
	if eventstream {
		if len(b) < 4 || int(binary.BigEndian.Uint32(b)) > len(b) {
			return -1
		}
		return int(binary.BigEndian.Uint32(b))
	}
	i, j := bytes.Index(b, []byte("\n\n")), bytes.Index(b, []byte("\r\n\r\n"))
	switch {
	case i >= 0 && (j < 0 || i < j):
		return i + 2
	case j >= 0:
		return j + 4
	}
	return -1
}

// TestProxyEveryFormat: for every format the recorder knows, a plain and
// a streamed call through the proxy (mockllm --upstream; New, and Limited
// behind limits it never reaches) in front of a mock, each proxy and mock
// a real net/http server over an in-memory network, in virtual time,
// against the same call to an identical mock directly: the status, headers
// and body bytes are the same, every frame of a stream arrives at the same
// instant (each token at its own: none merged), and the recording has one
// line per call with the format, path, model, key label, status, usage and
// the stream's token timings.
func TestProxyEveryFormat(t *testing.T) {
	for _, name := range record.Formats() {
		row, ok := formatRows[name]
		if !ok {
			t.Errorf("the recorder knows format %q, which has no row in formatRows", name)
			continue
		}
		plain, streamed := 0, 0
		for _, c := range row.calls {
			if record.ProviderOf(c.path) != name {
				t.Errorf("%s: ProviderOf(%q) = %q", name, c.path, record.ProviderOf(c.path))
			}
			if c.stream {
				streamed++
			} else {
				plain++
			}
		}
		if plain == 0 || streamed == 0 {
			t.Errorf("%s: the row has %d plain and %d streamed calls, want one of each at least", name, plain, streamed)
		}
		for _, limited := range []bool{false, true} {
			sub := name + "/new"
			if limited {
				sub = name + "/limited"
			}
			t.Run(sub, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testProxyFormat(t, name, row, limited) })
			})
		}
	}
	for name := range formatRows {
		if !slices.Contains(record.Formats(), name) {
			t.Errorf("formatRows has a row for %q, which the recorder does not know (%q)", name, record.Formats())
		}
	}
}

func testProxyFormat(t *testing.T, name string, row formatRow, limited bool) {
	cfg := mock.DefaultConfig()
	cfg.Latency.TTFT, cfg.Latency.PerToken = 100*time.Millisecond, 10*time.Millisecond
	cfg.Output.Tokens = mock.Distribution{Kind: mock.MaxTokens}
	cfg.Limits = mock.Limits{RPM: 1000, TPM: 1 << 20} // their headers, where the format sends them
	cfg.AWSSecretKeys = map[string]string{"AKIDPROXYTABLE": "table-secret"}
	newMock := func() *mock.Server {
		srv, err := mock.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	direct := serve(t, newMock().Handler())
	upstream := serve(t, newMock().Handler())
	var rec bytes.Buffer
	w, _ := record.NewWriter(&rec, record.Header{Source: "mockllm proxy"})
	u, _ := url.Parse("http://upstream.test")
	h := recordproxy.New(u, w, upstream)
	if limited {
		lcfg := cfg
		lcfg.Limits = mock.Limits{MaxConcurrent: 100, RPM: 10000}
		lcfg, err := mock.UpstreamConfig(lcfg)
		if err != nil {
			t.Fatal(err)
		}
		psrv, err := mock.New(lcfg)
		if err != nil {
			t.Fatal(err)
		}
		h = recordproxy.Limited(psrv, u, w, upstream)
	}
	proxy := serve(t, h)

	// The same calls, one after another, directly and through the proxy,
	// at the same instants.
	want, got := make([]reply, len(row.calls)), make([]reply, len(row.calls))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, c := range row.calls {
			want[i] = call(t, direct, "mock.test", row, c)
		}
	})
	wg.Go(func() {
		for i, c := range row.calls {
			got[i] = call(t, proxy, "proxy.test", row, c)
		}
	})
	wg.Wait()

	for i, c := range row.calls {
		g, d := got[i], want[i]
		if d.status != 200 {
			t.Fatalf("%s directly: status %d %s", c.path, d.status, d.body)
		}
		if g.status != d.status || !bytes.Equal(g.body, d.body) {
			t.Errorf("%s: through the proxy %d\n%s\ndirectly %d\n%s", c.path, g.status, g.body, d.status, d.body)
		}
		if !maps.EqualFunc(g.header, d.header, slices.Equal) {
			t.Errorf("%s: headers through the proxy\n%v\ndirectly\n%v", c.path, g.header, d.header)
		}
		if !c.stream {
			continue
		}
		if !slices.Equal(g.frames, d.frames) {
			t.Errorf("%s: frames through the proxy\n%v\ndirectly\n%v", c.path, g.frames, d.frames)
		}
		// 20 tokens, one every 10 ms: at least 20 distinct instants.
		instants := map[time.Duration]bool{}
		for _, f := range g.frames {
			instants[f.at] = true
		}
		if len(instants) < 20 {
			t.Errorf("%s: %d frames arrived at %d distinct instants, want at least 20 (one a token): merged", c.path, len(g.frames), len(instants))
		}
	}

	f, err := record.Parse(&rec, "proxy.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Attempts) != len(row.calls) {
		t.Fatalf("%d lines recorded, want %d (one a call): %+v", len(f.Attempts), len(row.calls), f.Attempts)
	}
	for i, a := range f.Attempts { // the calls were sequential: a line each, in order
		c := row.calls[i]
		if p, _, _ := strings.Cut(c.path, "?"); a.Path != p || a.Stream != c.stream {
			t.Errorf("line %d is of %s (stream %v), want %s (stream %v)", i, a.Path, a.Stream, p, c.stream)
		}
		if a.Provider != name || a.Model != row.model || a.Key != record.KeyLabel(row.key) || a.Status != 200 ||
			a.ErrorType != "" || a.MaxTokens != 20 || a.StopReason == "" {
			t.Errorf("%s: line %+v; want provider %s, model %s, key %s, status 200, max_tokens 20", c.path, a, name, row.model, record.KeyLabel(row.key))
		}
		if a.Usage == nil || a.Usage.OutputTokens != 20 || a.Usage.InputTokens == 0 {
			t.Errorf("%s: usage %+v, want 20 output tokens and some input", c.path, a.Usage)
		}
		for k, v := range a.Headers {
			if got[i].header.Get(k) != v {
				t.Errorf("%s: recorded %s: %s, the client saw %q", c.path, k, v, got[i].header.Get(k))
			}
		}
		// Token i at ttft + i × per_token: the first at 110 ms, the last
		// at 300 ms, one every 10 ms.
		if c.stream && (a.Frames != 20 || a.TTFTMS != 110 || a.LastTokenMS != 300 || a.GapMeanMS != 10 || a.GapStdMS != 0) {
			t.Errorf("%s: stream timings %d frames, ttft %v, last %v, gap %v ± %v; want 20, 110, 300, 10 ± 0",
				c.path, a.Frames, a.TTFTMS, a.LastTokenMS, a.GapMeanMS, a.GapStdMS)
		}
		if !c.stream && (a.Frames != 0 || a.LatencyMS != 300) {
			t.Errorf("%s: plain call %d frames, latency %v ms; want 0 and 300 (100 + 20 × 10)", c.path, a.Frames, a.LatencyMS)
		}
	}
}
