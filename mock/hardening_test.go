package mock

import (
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
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
				if !strings.Contains(rec.Body.String(), `"authentication_error"`) {
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
