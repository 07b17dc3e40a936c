package mock

import (
	"context"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

// probe sends a request to the handler directly: during Shutdown the
// listener is closed, but a connection already open still reaches it.
func probe(s *Server, method, path string) (int, string) {
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code, rec.Body.String()
}

// TestHealthProbes: /healthz and /readyz answer without a credential;
// /readyz turns 503 as soon as Shutdown starts, while in-flight calls
// still finish, and /healthz stays 200.
func TestHealthProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.AdminToken = "secret" // the probes need none
		ts := startServer(t, cfg)
		defer ts.stop()
		for _, tt := range []struct {
			method, path string
			status       int
			body         string
		}{
			{"GET", "/healthz", 200, "ok\n"},
			{"GET", "/readyz", 200, "ready\n"},
			{"HEAD", "/readyz", 200, ""},
		} {
			r := ts.do(t, tt.method, tt.path, "")
			if r.status != tt.status || string(r.body) != tt.body {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, r.status, r.body, tt.status, tt.body)
			}
		}
		if r := ts.do(t, "POST", "/readyz", ""); r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST /readyz = %d, Allow %q; want 405, GET, HEAD", r.status, r.header.Get("Allow"))
		}

		// A call of 100 tokens (500 ms) is in flight when Shutdown starts.
		call := make(chan int, 1)
		go func() { call <- ts.do(t, "POST", "/v1/messages", anthropicBody(100, false, "hi")).status }()
		time.Sleep(100 * time.Millisecond)
		shut := make(chan error, 1)
		go func() { shut <- ts.Server.Shutdown(context.Background()) }()
		time.Sleep(10 * time.Millisecond)
		if code, body := probe(ts.Server, "GET", "/readyz"); code != 503 || body != "shutting down\n" {
			t.Errorf("during Shutdown: /readyz = %d %q, want 503 %q", code, body, "shutting down\n")
		}
		if code, _ := probe(ts.Server, "GET", "/healthz"); code != 200 {
			t.Errorf("during Shutdown: /healthz = %d, want 200", code)
		}
		select {
		case err := <-shut:
			t.Fatalf("Shutdown returned %v with a call in flight", err)
		default:
		}
		if got := <-call; got != 200 {
			t.Errorf("in-flight call = %d, want 200", got)
		}
		if err := <-shut; err != nil {
			t.Errorf("Shutdown = %v, want nil", err)
		}
	})
}
