package mock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/openaichat"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// A 429 for concurrency reports the requests dimension as it is: only the
// exhausted dimension says 0 (issue 13: a header-reading client otherwise
// waits for the requests bucket's reset for nothing).
func TestConcurrency429KeepsRequestsRemaining(t *testing.T) {
	for _, api := range []struct{ path, header string }{
		{"/v1/messages", "Anthropic-Ratelimit-Requests-Remaining"},
		{"/v1/chat/completions", "X-Ratelimit-Remaining-Requests"},
	} {
		t.Run(api.path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Limits = Limits{MaxConcurrent: 1, RPM: 600}
				ts := startServer(t, cfg)
				defer ts.stop()
				body := anthropicBody(100, false, "hi")
				if api.path != "/v1/messages" {
					body = openaiBody(100, false, false, "hi")
				}
				done := make(chan reply)
				go func() { done <- ts.do(t, "POST", api.path, body) }()
				time.Sleep(10 * time.Millisecond)
				r := ts.do(t, "POST", api.path, body)
				if r.status != 429 {
					t.Fatalf("second concurrent request: status %d, want 429", r.status)
				}
				if got := r.header.Get(api.header); got != "599" {
					t.Errorf("concurrency 429: %s = %q, want 599 (600 minus the one admitted)", api.header, got)
				}
				if first := <-done; first.status != 200 {
					t.Errorf("first request: status %d, want 200", first.status)
				}
			})
		})
	}
}

// Metrics and stats name keys by fingerprint; /metrics is behind the admin
// token when one is set, and behind the metrics token when that is set.
func TestMetricsKeysAndAuth(t *testing.T) {
	const key = "sk-ant-secret-key-0001"
	for _, tt := range []struct {
		name          string
		admin, metric string
		token         string
		want          int
	}{
		{"open", "", "", "", 200},
		{"admin token required", "adm", "", "", 401},
		{"admin token accepted", "adm", "", "adm", 200},
		{"metrics token required", "adm", "met", "wrong", 401},
		{"metrics token accepted", "adm", "met", "met", 200},
		{"admin token opens metrics too", "adm", "met", "adm", 200},
		{"metrics token alone", "", "met", "", 401},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Latency.PerToken = 0
			cfg.APIKeys = []string{key}
			cfg.AdminToken, cfg.MetricsToken = tt.admin, tt.metric
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(anthropicBody(3, false, "hi")))
			req.Header.Set("X-Api-Key", key)
			req.Header.Set("Anthropic-Version", "2023-06-01")
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Fatalf("model request: %d %s", rec.Code, rec.Body)
			}
			req = httptest.NewRequest("GET", "/metrics", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec = httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("GET /metrics: %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			if rec.Code != 200 {
				// A bearer token alone reads as an OpenAI client; none, as Anthropic.
				if b := rec.Body.String(); !strings.Contains(b, `"authentication_error"`) && !strings.Contains(b, `"invalid_api_key"`) || !strings.Contains(b, "metrics token required") {
					t.Errorf("GET /metrics 401 body %s, want an error envelope", rec.Body)
				}
				return
			}
			body := rec.Body.String()
			if strings.Contains(body, key) {
				t.Errorf("/metrics shows the API key in clear:\n%s", body)
			}
			if want := `key="` + Fingerprint(key) + `"`; !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s:\n%s", want, body)
			}
			st := s.Stats()
			if _, ok := st.Keys[Fingerprint(key)]; !ok || len(st.Keys) != 1 {
				t.Errorf("Stats().Keys = %v, want only the fingerprint %s", st.Keys, Fingerprint(key))
			}
		})
	}
}

func TestFingerprintFormat(t *testing.T) {
	// sha256sum of "sk-test" is f3abf2a6cc4f0098…: the fingerprint is its
	// first 12 hex digits.
	if got, want := Fingerprint("sk-test"), "f3abf2a6cc4f"; got != want {
		t.Errorf("Fingerprint(sk-test) = %q, want %q", got, want)
	}
}

// Values that would overflow are refused, naming the field: in request
// bodies, in the config and through the admin API (issue 10 item 10).
func TestOverflowRefused(t *testing.T) {
	for _, tt := range []struct{ name, path, body, param string }{
		{"anthropic max_tokens MinInt64", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":-9223372036854775808,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"anthropic escaped key", "/v1/messages", `{"model":"claude-sonnet-4-5","max\u005ftokens":-9223372036854775808,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"openai max_tokens MinInt64", "/v1/chat/completions", `{"model":"gpt-4o-mini","max_tokens":-9223372036854775808,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"openai max_completion_tokens MinInt64", "/v1/chat/completions", `{"model":"gpt-4o-mini","MAX_COMPLETION_TOKENS":-9223372036854775808,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "max_completion_tokens"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body))
			req.Header.Set("Anthropic-Version", "2023-06-01")
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != 400 || !strings.Contains(rec.Body.String(), tt.param+": must be at least 1, got -9223372036854775808") {
				t.Errorf("status %d body %s, want 400 naming %s", rec.Code, rec.Body, tt.param)
			}
		})
	}

	for _, tt := range []struct{ yaml, want string }{
		{"latency: {ttft_per_input_token: 1000h}", "latency.ttft_per_input_token: 1000h0m0s × up to 16777216 input tokens"},
		{"latency: {per_token: 2562047h}", "latency.per_token: 2562047h0m0s is above the longest duration"},
		{"latency: {per_token: 6h}", "latency.per_token: 6h0m0s × up to 128000 output tokens (max_tokens) overflows"},
		{"latency: {ttft: 100000h, per_token: 5h, ttft_per_input_token: 100ms}", "latency: the worst case"},
		{"limits: {retry_after: 2562047h}", "limits.retry_after: 2562047h0m0s is above"},
		{"faults: {slow: {rate: 1, extra: 2562047h}}", "faults.slow.extra: 2562047h0m0s is above"},
	} {
		_, err := ParseConfig([]byte(tt.yaml), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseConfig(%s) = %v, want an error containing %q", tt.yaml, err, tt.want)
		}
	}
	// The limits themselves are accepted.
	for _, y := range []string{"latency: {ttft_per_input_token: 137ms, ttft: 1h}", "latency: {per_token: 5h, ttft: 1h}"} {
		if _, err := ParseConfig([]byte(y), "c.yaml"); err != nil {
			t.Errorf("ParseConfig(%s), within the bounds: %v", y, err)
		}
	}

	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"per_token": "2562047h"}`, `{"ttft_per_input_token": "1000h"}`} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("PUT", "/_admin/latency", strings.NewReader(body)))
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "latency.") {
			t.Errorf("PUT /_admin/latency %s: %d %s, want 400 naming the field", body, rec.Code, rec.Body)
		}
	}
	if got := s.Latency(); got != DefaultConfig().Latency {
		t.Errorf("latency after refused PUTs = %+v, want the default", got)
	}
}

// A latency set through SetLatency, which does not validate, saturates
// instead of wrapping around into an instant response.
func TestLatencySaturates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, Config{})
		defer ts.stop()
		ts.SetLatency(Latency{TTFTPerInputToken: 1000 * time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://mock/v1/messages", strings.NewReader(anthropicBody(1, false, strings.Repeat("x", 40000))))
		req.Header.Set("Anthropic-Version", "2023-06-01")
		start := time.Now()
		_, err := ts.client.Do(req)
		if err == nil || time.Since(start) != time.Hour {
			t.Errorf("1000h per input token × 10000 tokens: err %v after %v, want the client's timeout after 1h", err, time.Since(start))
		}
	})
}

// Headers above Config.MaxHeaderBytes get 431 in the envelope of the API
// the request was for; above net/http's own limit, whose plain-text answer
// is written before any handler runs, a JSON envelope both SDK families
// parse (issue 10 item 7).
func TestHeaderLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, Config{})
		defer ts.stop()
		big := strings.Repeat("x", 70<<10) // above the default 64 KiB
		r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"), "Anthropic-Version", "2023-06-01", "X-Big", big)
		if r.status != 431 || !strings.HasPrefix(compactJSON(t, r.body), `{"type":"error","error":{"type":"invalid_request_error","message":"request headers of 718`) ||
			!strings.HasSuffix(string(r.body), `bytes are above the limit of 65536 bytes"},"request_id":"`+r.header.Get("Request-Id")+`"}`) {
			t.Errorf("anthropic, 70 KiB header: %d %s", r.status, r.body)
		}
		r = ts.do(t, "POST", "/v1/chat/completions", openaiBody(1, false, false, "hi"), "X-Big", big)
		if r.status != 431 || !strings.Contains(string(r.body), `"code":"request_header_fields_too_large"`) || r.header.Get("X-Request-Id") == "" {
			t.Errorf("openai, 70 KiB header: %d %s", r.status, r.body)
		}
		// Just under the limit passes.
		r = ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi"), "Anthropic-Version", "2023-06-01", "X-Big", strings.Repeat("x", 60<<10))
		if r.status != 200 {
			t.Errorf("60 KiB header: %d %s", r.status, r.body)
		}

		// Above the hard limit (1 MiB) net/http answers before the handler.
		conn, err := ts.ln.Dial(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		go func() {
			fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: mock\r\nX-Big: %s\r\nContent-Length: 2\r\n\r\n{}", strings.Repeat("x", 2<<20))
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		var env struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message, Code string
				Param               *string
			} `json:"error"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(body, &env); err != nil || resp.StatusCode != 431 || env.Type != "error" || env.Error.Type != "invalid_request_error" ||
			env.Error.Code != "request_header_fields_too_large" || env.RequestID == "" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("2 MiB header: %d %s %s (%v)", resp.StatusCode, resp.Header, body, err)
		}

		// A request net/http cannot parse gets 400 in the same envelope.
		conn2, err := ts.ln.Dial(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		defer conn2.Close()
		go fmt.Fprintf(conn2, "POST /v1/messages HTTP/1.1\r\nHost: mock\r\nbad header line\r\n\r\n")
		resp, err = http.ReadResponse(bufio.NewReader(conn2), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(body), `"type":"invalid_request_error"`) {
			t.Errorf("malformed request: %d %s", resp.StatusCode, body)
		}
	})
}

// The decode budget bounds the body bytes held at once: a request that
// cannot get its share within BodyTimeout gets 429 with retry-after in its
// API's envelope, and every share is given back (issue 10 item 5).
func TestDecodeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, Config{DecodeBudget: MaxBodyBytes})
		defer ts.stop()
		body := anthropicBody(1, false, strings.Repeat("x", 1000))
		if r := ts.do(t, "POST", "/v1/messages", body, "Anthropic-Version", "2023-06-01"); r.status != 200 {
			t.Fatalf("with the budget free: %d %s", r.status, r.body)
		}
		// Hold the whole budget, as 32 MB of bodies being decoded would.
		if err := ts.budget.acquire(context.Background(), MaxBodyBytes); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := ts.do(t, "POST", "/v1/chat/completions", openaiBody(1, false, false, "hi"))
		if r.status != 429 || r.header.Get("Retry-After") != "1" || !strings.Contains(string(r.body), `"code":"rate_limit_exceeded"`) || !strings.Contains(string(r.body), "decode_budget") {
			t.Errorf("budget held: %d %s %s, want 429 with retry-after 1 in OpenAI's envelope", r.status, r.header, r.body)
		}
		if waited := time.Since(start); waited != BodyTimeout {
			t.Errorf("waited %v for the budget, want BodyTimeout %v", waited, BodyTimeout)
		}
		// Counted once, as a 429 by the decode budget, in both accounts.
		st := ts.Stats()
		if st.Throttled != 1 || st.ThrottledBy[wire.LimitDecodeBudget] != 1 || st.Errors != 0 ||
			st.Calls.Throttled != 1 || st.Calls.ThrottledBy[wire.LimitDecodeBudget] != 1 || st.Calls.Errors != 0 {
			t.Errorf("stats after the budget's 429: throttled %d by %v errors %d; calls throttled %d by %v errors %d; want 1 by decode_budget, 0 errors in both",
				st.Throttled, st.ThrottledBy, st.Errors, st.Calls.Throttled, st.Calls.ThrottledBy, st.Calls.Errors)
		}
		// A request waiting for the budget gets it when it is given back.
		done := make(chan reply)
		go func() { done <- ts.do(t, "POST", "/v1/messages/count_tokens", body, "Anthropic-Version", "2023-06-01") }()
		time.Sleep(time.Second)
		ts.budget.release(MaxBodyBytes)
		if r := <-done; r.status != 200 || time.Since(start) != BodyTimeout+time.Second {
			t.Errorf("after release: %d %s at %v", r.status, r.body, time.Since(start))
		}
		// Bodies without a Content-Length take the budget as they grow, up
		// to MaxBodyBytes.
		for _, tt := range []struct {
			size int
			want int
		}{{3 << 20, 200}, {MaxBodyBytes + 10, 413}} {
			big := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"` + strings.Repeat("y", tt.size) + `"}]}`
			req, _ := http.NewRequest("POST", "http://mock/v1/messages/count_tokens", io.MultiReader(strings.NewReader(big)))
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := ts.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if req.ContentLength != 0 || resp.StatusCode != tt.want {
				t.Errorf("chunked body of %d bytes: %d %.200s, want %d", len(big), resp.StatusCode, b, tt.want)
			}
		}
		if n := ts.budget.inUse.Load(); n != 0 {
			t.Errorf("budget in use after every request ended: %d bytes, want 0", n)
		}
	})
}

// Errors outside the model endpoints take the envelope of the API the
// request's headers say it was for (issue 12: a 404 for an OpenAI-keyed
// request came in Anthropic's envelope).
func TestRouteErrorEnvelope(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, method, path string
		headers            []string
		want               string
	}{
		{"openai key, unknown path", "GET", "/v1/assistants", []string{"Authorization", "Bearer sk-x"}, `{"error":{"message":"not found: GET /v1/assistants","type":"invalid_request_error","param":null,"code":"unknown_url"}}`},
		{"anthropic key, unknown path", "GET", "/v1/assistants", []string{"X-Api-Key", "sk-x", "Anthropic-Version", "2023-06-01"}, `"type":"not_found_error"`},
		{"anthropic bearer token", "GET", "/v1/assistants", []string{"Authorization", "Bearer tok", "Anthropic-Version", "2023-06-01"}, `"type":"not_found_error"`},
		{"openai path, no headers", "GET", "/v1/chat/completions", nil, `"code":null`},
		{"wrong method on a model", "POST", "/v1/models/gpt-4o", []string{"Authorization", "Bearer sk-x"}, `"message":"method POST not allowed for /v1/models/gpt-4o; use GET"`},
	} {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		for i := 0; i+1 < len(tt.headers); i += 2 {
			req.Header.Set(tt.headers[i], tt.headers[i+1])
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if !strings.Contains(rec.Body.String(), tt.want) {
			t.Errorf("%s: %d %s, want %s", tt.name, rec.Code, rec.Body, tt.want)
		}
	}
}

func TestModelsAndStrictConfig(t *testing.T) {
	for _, tt := range []struct {
		yaml   string
		any    bool
		extra  []string
		strict bool
		err    string
	}{
		{"seed: 1", false, nil, true, ""},
		{"models: any", true, nil, true, ""},
		{"models: known\nstrict: false", false, nil, false, ""},
		{"models: [my-model, other]", false, []string{"my-model", "other"}, true, ""},
		{"models: some", false, nil, true, `c.yaml:1: models: invalid models "some": want known, any or a list of model names`},
		{"models: ['']", false, nil, true, "models[0]: must not be empty"},
	} {
		cfg, err := ParseConfig([]byte(tt.yaml), "c.yaml")
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseConfig(%q) = %v, want %q", tt.yaml, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseConfig(%q): %v", tt.yaml, err)
		}
		s, _ := New(cfg)
		if cfg.Models.Any != tt.any || fmt.Sprint(cfg.Models.Extra) != fmt.Sprint(tt.extra) || s.strict() != tt.strict {
			t.Errorf("ParseConfig(%q): models %+v strict %v, want any %v extra %v strict %v", tt.yaml, cfg.Models, s.strict(), tt.any, tt.extra, tt.strict)
		}
	}
	// Extra names are accepted by both APIs.
	cfg := Config{Models: Models{Extra: []string{"my-model"}}}
	s, _ := New(cfg)
	if !s.acceptsModel(anthropic.Format{}, "my-model") || !s.acceptsModel(openaichat.Format{}, "my-model") || s.acceptsModel(openaichat.Format{}, "claude-haiku-4-5") || !s.acceptsModel(openaichat.Format{}, "gpt-5-mini") {
		t.Errorf("acceptsModel with extra my-model: wrong answers")
	}
}

// BenchmarkDecodeBudgetPeakHeap sends 32 concurrent count_tokens requests
// of 8 MB each (256 MB of bodies) through a server whose decode budget is
// one largest body (32 MiB), and reports the peak heap. The bound scales
// with the budget, not with the input: without the budget the peak grows
// with the number of bodies in flight.
func BenchmarkDecodeBudgetPeakHeap(b *testing.B) {
	const n, size = 32, 8 << 20
	s, err := New(Config{DecodeBudget: MaxBodyBytes})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"` + strings.Repeat("abcd", size/4) + `"}]}`)
	for b.Loop() {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		stop := make(chan struct{})
		peak := make(chan uint64)
		go func() {
			sample := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			var max uint64
			for {
				select {
				case <-stop:
					peak <- max
					return
				case <-time.After(time.Millisecond):
				}
				rtmetrics.Read(sample)
				if v := sample[0].Value.Uint64(); v > max {
					max = v
				}
			}
		}()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				req := httptest.NewRequest("POST", "/v1/messages/count_tokens", bytes.NewReader(body))
				req.Header.Set("Anthropic-Version", "2023-06-01")
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Errorf("status %d: %.200s", rec.Code, rec.Body)
				}
			})
		}
		wg.Wait()
		close(stop)
		p := <-peak
		b.ReportMetric(float64(p)/(1<<20), "peak-heap-MiB")
		// Bodies being decoded (at most the budget), their decoding copies,
		// garbage awaiting collection and the shared request body.
		if bound := uint64(8*MaxBodyBytes + len(body)); p > bound {
			b.Errorf("peak heap %d MiB, want at most %d MiB (8 × the decode budget + the request body)", p>>20, bound>>20)
		}
	}
}

// TestStrictSampling: temperature, top_p and the first turn are checked on
// what the decoder read, the same with and without stop_sequences and n
// (which once sent a body to a second decoder), and not at all
// (not even the type) with strict: false.
func TestStrictSampling(t *testing.T) {
	const (
		msgs = `"messages":[{"role":"user","content":"hi"}]`
		ant  = `{"model":"claude-sonnet-4-5","max_tokens":4,` + msgs
		oai  = `{"model":"gpt-4o-mini",` + msgs
	)
	for _, slow := range []bool{false, true} {
		antTail, oaiTail := "}", "}"
		if slow {
			antTail, oaiTail = `,"stop_sequences":["zz"]}`, `,"n":1}`
		}
		for _, tt := range []struct {
			name, path, body string
			want             int
			has              string
		}{
			{"anthropic in range", "/v1/messages", ant + `,"temperature":1,"top_p":0` + antTail, 200, ""},
			{"anthropic null", "/v1/messages", ant + `,"temperature":null` + antTail, 200, ""},
			{"anthropic temperature 1.5", "/v1/messages", ant + `,"temperature":1.5` + antTail, 400, "temperature: range: 0..1, got 1.5"},
			{"anthropic top_p -0.1", "/v1/messages", ant + `,"top_p":-0.1` + antTail, 400, "top_p: range: 0..1, got -0.1"},
			{"anthropic temperature a string", "/v1/messages", ant + `,"temperature":"hot"` + antTail, 400, "temperature: want a number"},
			{"anthropic assistant first", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":4,"messages":[{"role":"assistant","content":"hi"}]` + antTail, 400, `the first message must use the \"user\" role, got \"assistant\"`},
			{"openai temperature 2", "/v1/chat/completions", oai + `,"temperature":2` + oaiTail, 200, ""},
			{"openai temperature 2.5", "/v1/chat/completions", oai + `,"temperature":2.5` + oaiTail, 400, "decimal_above_max_value"},
			{"openai top_p -1", "/v1/chat/completions", oai + `,"top_p":-1` + oaiTail, 400, "decimal_below_min_value"},
			{"openai assistant first", "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"assistant","content":"hi"}]` + oaiTail, 200, ""},
		} {
			for _, strict := range []bool{true, false} {
				s, err := New(Config{Strict: &strict})
				if err != nil {
					t.Fatal(err)
				}
				req := httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body))
				req.Header.Set("Anthropic-Version", "2023-06-01")
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, req)
				want, has := tt.want, tt.has
				if !strict {
					want, has = 200, ""
				}
				if rec.Code != want || !strings.Contains(rec.Body.String(), has) {
					t.Errorf("%s (encoding/json %v, strict %v): %d %s, want %d containing %q", tt.name, slow, strict, rec.Code, rec.Body, want, has)
				}
			}
		}
	}
}
