package recordproxy_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/internal/recordproxy"
	"github.com/ratelab/ratelab/mock"
)

// answer is what a client saw of one request: its status, its refusal's
// headers and body (ids taken out), and a stream's content deltas as
// offsets from sending.
type answer struct {
	status  int
	refusal string
	deltas  []time.Duration
}

var ids = regexp.MustCompile(`(req|msg)_[0-9A-Za-z]+`)

// send posts one Anthropic request (max_tokens 20) through rt and reads
// the whole response as it arrives.
func send(t *testing.T, rt http.RoundTripper, stream bool) answer {
	body := fmt.Sprintf(`{"model":"claude-haiku-4-5","max_tokens":20,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
	req, _ := http.NewRequest("POST", "http://proxy.test/v1/messages", strings.NewReader(body))
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("x-api-key", "sk-user")
	sent := time.Now()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		var h []string
		for k, v := range resp.Header {
			if k != "Request-Id" {
				h = append(h, k+": "+strings.Join(v, ","))
			}
		}
		slices.Sort(h)
		a.refusal = strings.Join(h, "\n") + "\n" + ids.ReplaceAllString(string(b), "$1_X")
		return a
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: content_block_delta" {
			a.deltas = append(a.deltas, time.Since(sent))
		}
	}
	return a
}

// script sends three rounds of requests through rt, one a millisecond: 8
// streams at 0 s, 8 plain calls at 2 s, 4 streams at 25 s.
func script(t *testing.T, rt http.RoundTripper) []answer {
	start := time.Now()
	out := make([]answer, 20)
	var wg sync.WaitGroup
	for i := range out {
		at, stream := time.Duration(i)*time.Millisecond, true
		switch {
		case i >= 16:
			at += 25*time.Second - 16*time.Millisecond
		case i >= 8:
			at, stream = at+2*time.Second-8*time.Millisecond, false
		}
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(at)))
			out[i] = send(t, rt, stream)
		})
	}
	wg.Wait()
	return out
}

// TestLimitedVirtual: a proxy with max_concurrent 3 and rpm 6 in front of
// a mock with no limits answers exactly what a mock with those limits
// answers, in virtual time: the same requests refused, with the same 429s
// (headers, retry-after, body); the admitted ones forwarded, their streams'
// deltas arriving one by one at the upstream's instants.
func TestLimitedVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := mock.DefaultConfig()
		cfg.Latency.TTFT, cfg.Latency.PerToken = 100*time.Millisecond, 10*time.Millisecond
		limited := cfg
		limited.Limits = mock.Limits{MaxConcurrent: 3, RPM: 6}
		direct, err := mock.New(limited)
		if err != nil {
			t.Fatal(err)
		}
		upstream, err := mock.New(cfg) // no limits
		if err != nil {
			t.Fatal(err)
		}
		pcfg, err := mock.UpstreamConfig(limited)
		if err != nil {
			t.Fatal(err)
		}
		psrv, err := mock.New(pcfg)
		if err != nil {
			t.Fatal(err)
		}
		var rec bytes.Buffer
		w, _ := record.NewWriter(&rec, record.Header{Source: "mockllm proxy"})
		u, _ := url.Parse("http://upstream.test")
		proxy := mock.NewInProcess(recordproxy.Limited(psrv, u, w, upstream.InProcess()), nil)

		var want, got []answer
		var wg sync.WaitGroup
		wg.Go(func() { want = script(t, direct.InProcess()) })
		wg.Go(func() { got = script(t, proxy) })
		wg.Wait()

		refused := 0
		for i := range got {
			g, d := got[i], want[i]
			if g.status != d.status || g.refusal != d.refusal || !slices.Equal(g.deltas, d.deltas) {
				t.Errorf("request %d: through the proxy %d %q %v\nthe mock with the limits %d %q %v", i, g.status, g.refusal, g.deltas, d.status, d.refusal, d.deltas)
			}
			if g.status == 429 {
				refused++
				if !strings.Contains(g.refusal, "Retry-After: ") || !strings.Contains(g.refusal, "rate_limit_error") {
					t.Errorf("request %d: a 429 without retry-after or rate_limit_error: %q", i, g.refusal)
				}
			}
			if i < 8 || i >= 16 {
				if g.status == 200 && len(g.deltas) != 20 {
					t.Errorf("request %d: %d deltas, want 20", i, len(g.deltas))
				}
				for j := 1; j < len(g.deltas); j++ {
					if gap := g.deltas[j] - g.deltas[j-1]; gap != 10*time.Millisecond {
						t.Errorf("request %d: delta %d came %v after the one before, want 10ms (merged?)", i, j, gap)
						break
					}
				}
			}
		}
		// By hand: 3 of each 8 at 0 s and 2 s fit max_concurrent; at 25 s
		// the requests bucket holds 6 − 6 + 2.5 refilled: 2 of 4 fit.
		if refused != 12 {
			t.Errorf("%d refused, want 12 (5 + 5 + 2)", refused)
		}
		if !strings.Contains(got[18].refusal, "Retry-After: 5") {
			t.Errorf("the first rpm 429 at 25 s: %q, want retry-after 5 (half a request at 6/min)", got[18].refusal)
		}
		f, err := record.Parse(&rec, "proxy.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		frames := 0
		for _, a := range f.Attempts {
			if a.Status != 200 {
				t.Errorf("recorded %+v: the upstream has no limits", a)
			}
			frames += a.Frames
		}
		if len(f.Attempts) != 8 || frames != 5*20 {
			t.Errorf("recorded %d attempts, %d frames; want the 8 admitted, 100 frames (5 streams of 20)", len(f.Attempts), frames)
		}
	})
}

// TestLimitedSDK: anthropic-sdk-go, unchanged, through a proxy with
// max_concurrent 1: of two concurrent streams one is refused with the
// mock's 429 and retry-after 1, which the SDK honours, retrying after
// exactly 1 s of virtual time; the retry is forwarded with the SDK's
// retry count, and both streams arrive whole.
func TestLimitedSDK(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := mock.DefaultConfig()
		cfg.Latency.TTFT, cfg.Latency.PerToken = 0, 10*time.Millisecond
		upstream, err := mock.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		limited := cfg
		limited.Limits = mock.Limits{MaxConcurrent: 1}
		pcfg, err := mock.UpstreamConfig(limited)
		if err != nil {
			t.Fatal(err)
		}
		psrv, err := mock.New(pcfg)
		if err != nil {
			t.Fatal(err)
		}
		var rec bytes.Buffer
		w, _ := record.NewWriter(&rec, record.Header{Source: "mockllm proxy"})
		u, _ := url.Parse("http://upstream.test")
		proxy := mock.NewInProcess(recordproxy.Limited(psrv, u, w, upstream.InProcess()), nil)
		c := anthropic.NewClient(option.WithBaseURL("http://proxy.test"), option.WithAPIKey("sk-user"),
			option.WithHTTPClient(&http.Client{Transport: proxy}), option.WithMaxRetries(2))
		start := time.Now()
		deltas := make([]int, 2)
		var wg sync.WaitGroup
		for i := range deltas {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * time.Millisecond) // the first holds the slot
				st := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
					Model: "claude-haiku-4-5", MaxTokens: 20,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
				})
				for st.Next() {
					if st.Current().Type == "content_block_delta" {
						deltas[i]++
					}
				}
				if err := st.Err(); err != nil {
					t.Errorf("stream %d: %v", i, err)
				}
				st.Close()
			})
		}
		wg.Wait()
		if deltas[0] != 20 || deltas[1] != 20 {
			t.Errorf("deltas %v, want 20 each", deltas)
		}
		f, err := record.Parse(&rec, "proxy.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Attempts) != 2 {
			t.Fatalf("%d forwarded, want 2 (the 429 is the proxy's own)", len(f.Attempts))
		}
		retry := f.Attempts[1]
		if f.Attempts[0].RetryCount != 0 || retry.RetryCount != 1 || retry.SentAt.Sub(start) != time.Second+time.Millisecond || retry.Frames != 20 {
			t.Errorf("forwarded %+v then %+v: want the retry (retry count 1) sent 1 s after the refusal at 1 ms", f.Attempts[0], retry)
		}
	})
}
