package mock

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestAdminToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.AdminToken = "s3cret"
		ts := startServer(t, cfg)
		defer ts.stop()
		tests := []struct {
			headers []string
			want    int
		}{
			{nil, 401},
			{[]string{"Authorization", "Bearer nope"}, 401},
			{[]string{"Authorization", "Bearer s3cret"}, 200},
			{[]string{"X-Admin-Token", "s3cret"}, 200},
		}
		for _, tt := range tests {
			if r := ts.do(t, "GET", "/_admin/stats", "", tt.headers...); r.status != tt.want {
				t.Errorf("GET /_admin/stats with %q: %d, want %d", tt.headers, r.status, tt.want)
			}
		}
	})
}

func TestAdminLimitsLatencyFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Limits = Limits{MaxConcurrent: 20, RetryAfter: time.Second}
		ts := startServer(t, cfg)
		defer ts.stop()

		r := ts.do(t, "GET", "/_admin/limits", "")
		if got, want := compactJSON(t, r.body), `{"count_rejected":false,"itpm":0,"max_concurrent":20,"otpm":0,"retry_after":"1s","rpm":0,"tpm":0}`; got != want {
			t.Errorf("GET limits = %s, want %s", got, want)
		}
		// A partial PUT changes only the keys it holds; JSON and YAML both work.
		r = ts.do(t, "PUT", "/_admin/limits", `{"rpm": 2, "retry_after": "3s"}`)
		if r.status != 200 || ts.Limits() != (Limits{MaxConcurrent: 20, RPM: 2, RetryAfter: 3 * time.Second}) {
			t.Errorf("PUT limits: %d %s; limits now %+v", r.status, r.body, ts.Limits())
		}
		r = ts.do(t, "PUT", "/_admin/latency", "per_token: 1ms\nttft: 10ms\n")
		if r.status != 200 || ts.Latency() != (Latency{PerToken: time.Millisecond, TTFT: 10 * time.Millisecond}) {
			t.Errorf("PUT latency: %d %s; latency now %+v", r.status, r.body, ts.Latency())
		}
		start := time.Now()
		ts.do(t, "POST", "/v1/messages", anthropicBody(10, false, "hi"))
		if got, want := time.Since(start), 20*time.Millisecond; got != want {
			t.Errorf("after PUT latency a response took %v, want %v", got, want)
		}

		bad := []struct{ path, body, want string }{
			{"/_admin/limits", `{"rpm": -1}`, "limits.rpm: must not be negative"},
			{"/_admin/limits", `{"rmp": 1}`, `limits.rmp: unknown key \"rmp\" (did you mean rpm?)`},
			{"/_admin/latency", `{"per_token": 5}`, "per_token"},
			{"/_admin/faults", `{"error_500": 3}`, "faults.error_500"},
			{"/_admin/faults", `[`, "request body"},
		}
		for _, b := range bad {
			r := ts.do(t, "PUT", b.path, b.body)
			if r.status != 400 || !strings.Contains(string(r.body), b.want) {
				t.Errorf("PUT %s %s: %d %s, want 400 mentioning %q", b.path, b.body, r.status, r.body, b.want)
			}
		}

		if r := ts.do(t, "PUT", "/_admin/faults", `{"error_500": 1}`); r.status != 200 {
			t.Fatalf("PUT faults: %d %s", r.status, r.body)
		}
		if r := ts.do(t, "POST", "/v1/messages", anthropicBody(1, false, "hi")); r.status != 500 {
			t.Errorf("after PUT faults error_500=1: status %d, want 500", r.status)
		}
		if r := ts.do(t, "GET", "/_admin/faults", ""); !strings.Contains(string(r.body), `"error_500":1`) || !strings.Contains(string(r.body), `"extra":"0s"`) {
			t.Errorf("GET faults = %s", r.body)
		}

		r = ts.do(t, "GET", "/_admin/stats", "")
		st := r.json(t)
		if st["attempts"] != 2.0 || st["errors"] != 1.0 || st["admitted"] != 1.0 {
			t.Errorf("GET stats = %s", r.body)
		}
		if r := ts.do(t, "POST", "/_admin/reset", ""); r.status != 200 {
			t.Errorf("POST reset: %d", r.status)
		}
		if st := ts.Stats(); st.Attempts != 0 {
			t.Errorf("after reset: attempts %d, want 0", st.Attempts)
		}
		if r := ts.do(t, "GET", "/_admin/reset", ""); r.status != 405 {
			t.Errorf("GET /_admin/reset: %d, want 405", r.status)
		}
	})
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Limits.MaxConcurrent = 1
		ts := startServer(t, cfg)
		defer ts.stop()
		// Three distinct calls: identical bodies without retry headers would
		// be one call and its retries (see CallStats).
		fanOut(t, 3, 0, func(i int) (reply, error) {
			return ts.send("POST", "/v1/messages", anthropicBody(10, false, fmt.Sprintf("hi %d", i)))
		})
		body := string(ts.do(t, "GET", "/metrics", "").body)
		for _, want := range []string{
			`mockllm_requests_total{api="anthropic",key="anonymous",status="200"} 1`,
			`mockllm_requests_total{api="anthropic",key="anonymous",status="429"} 2`,
			`mockllm_rejections_total{limit="max_concurrent"} 2`,
			`mockllm_in_flight_requests 0`,
			`mockllm_tokens_total{direction="output"} 10`,
			`mockllm_request_duration_seconds_bucket{api="anthropic",status="200",le="0.08"} 1`,
			`mockllm_request_duration_seconds_count{api="anthropic",status="200"} 1`,
			`mockllm_early_retries_total 0`,
			`mockllm_calls_total 3`,
			`mockllm_calls_completed_total 1`,
			`mockllm_calls_failed 2`,
			`mockllm_throttled_by_attempt_total{attempt="1"} 2`,
			"# TYPE mockllm_request_duration_seconds histogram",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %q:\n%s", want, body)
			}
		}
		// An unknown model is counted by the status it was answered with.
		if r := ts.do(t, "POST", "/v1/messages", strings.Replace(anthropicBody(10, false, "hi"), "claude-sonnet-4-5", "claude-nope", 1)); r.status != 404 {
			t.Fatalf("unknown model: %d %s, want 404", r.status, r.body)
		}
		body = string(ts.do(t, "GET", "/metrics", "").body)
		if want := `mockllm_requests_total{api="anthropic",key="anonymous",status="404"} 1`; !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	})
}

func TestMetricsPerServer(t *testing.T) {
	a, _ := New(DefaultConfig())
	b, _ := New(DefaultConfig())
	a.metrics.panics.Inc()
	rec := httptest.NewRecorder()
	b.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "mockllm_handler_panics_total 0") {
		t.Errorf("a second server shares the first one's metrics:\n%s", rec.Body)
	}
}

func TestPanicRecovered(t *testing.T) {
	var logs bytes.Buffer
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		h := s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, nil))
		want := `"type":"api_error","message":"internal server error"`
		if path == "/v1/chat/completions" {
			want = `"message":"internal server error","type":"server_error"`
		}
		if rec.Code != 500 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d %s, want 500 containing %s", path, rec.Code, rec.Body, want)
		}
	}
	if !strings.Contains(logs.String(), "panic=boom") || !strings.Contains(logs.String(), "stack=") {
		t.Errorf("log = %q, want the panic and its stack", logs.String())
	}

	// After the response started, the connection is aborted instead.
	h := s.recoverPanics(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(200)
		panic("late")
	}))
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("late panic: recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/messages", nil))
	}()
}

func TestShutdownDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, DefaultConfig())
		defer ts.stop()
		got := make(chan reply, 1)
		go func() {
			r, err := ts.send("POST", "/v1/messages", anthropicBody(200, true, "hi")) // 1s
			if err != nil {
				t.Errorf("in-flight request: %v", err)
			}
			got <- r
		}()
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		if err := ts.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if d := time.Since(start); d < 900*time.Millisecond {
			t.Errorf("Shutdown returned after %v, before the in-flight response ended", d)
		}
		if r := <-got; r.status != 200 || !strings.HasSuffix(string(r.body), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
			t.Errorf("in-flight response: %d, %d bytes, want 200 and a complete stream", r.status, len(r.body))
		}
		if _, err := ts.send("POST", "/v1/messages", anthropicBody(1, false, "hi")); err == nil {
			t.Error("a request after Shutdown succeeded")
		}
		<-ts.done
	})
}

func TestReadHeaderTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, DefaultConfig())
		defer ts.stop()
		conn, err := ts.ln.Dial(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		go conn.Write([]byte("POST /v1/messages HTTP/1.1\r\nHost: mock\r\n")) // never finishes its headers
		start := time.Now()
		buf := make([]byte, 512)
		var rerr error
		for rerr == nil {
			_, rerr = conn.Read(buf)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("slow headers: connection closed after %v, want 10s", d)
		}
	})
}

func TestSlowBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, DefaultConfig())
		defer ts.stop()
		conn, err := ts.ln.Dial(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Headers announce 100 bytes; the body never comes.
		go conn.Write([]byte("POST /v1/messages HTTP/1.1\r\nHost: mock\r\nAnthropic-Version: 2023-06-01\r\nContent-Length: 100\r\n\r\n{"))
		start := time.Now()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if d := time.Since(start); d != BodyTimeout || resp.StatusCode != 400 || !strings.Contains(string(b), "not received within 30s") {
			t.Errorf("slow body: %d %s after %v, want 400 naming the timeout after %v", resp.StatusCode, b, d, BodyTimeout)
		}
	})
}
