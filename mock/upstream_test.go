package mock

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
)

// TestUpstreamEveryFormat: in front of an upstream, the server admits the
// model requests of every format it registers by its own limits: at rpm 1
// the first request of each format is forwarded unchanged and the second
// is the mock's own 429 in that format's envelope, never forwarded; a
// request the mock does not route goes on to the upstream.
func TestUpstreamEveryFormat(t *testing.T) {
	const key = "sk-upstream"
	for _, wr := range formats {
		f, ok := serverConformanceTable[wr.Name()]
		if !ok {
			continue // TestServerConformanceCoversEveryFormat fails
		}
		t.Run(wr.Name(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg, err := UpstreamConfig(Config{Limits: Limits{RPM: 1}})
				if err != nil {
					t.Fatal(err)
				}
				s, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				var forwarded []string
				h := s.Upstream(func(w http.ResponseWriter, req *http.Request) int {
					b, _ := io.ReadAll(req.Body)
					forwarded = append(forwarded, req.URL.Path+" "+string(b))
					w.WriteHeader(http.StatusOK)
					io.WriteString(w, "{}")
					return 16
				})
				path := wr.Spec().Path
				if f.path != nil {
					path = f.path(false)
				}
				body := f.body(16, false)
				send := func(p string) reply {
					req := httptest.NewRequest(http.MethodPost, "http://proxy"+p, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+key)
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					return reply{rec.Code, rec.Header(), rec.Body.Bytes()}
				}
				if r := send(path); r.status != 200 || len(forwarded) != 1 || forwarded[0] != path+" "+body {
					t.Fatalf("first request: status %d, forwarded %q; want 200 and the request forwarded unchanged", r.status, forwarded)
				}
				r := send(path)
				if r.status != 429 || len(forwarded) != 1 {
					t.Fatalf("second request at rpm 1: status %d body %s, %d forwarded; want the mock's 429, not forwarded", r.status, r.body, len(forwarded))
				}
				if typ := f.errType(t, r); typ != f.limitType {
					t.Errorf("429 error type %q, want the format's %q", typ, f.limitType)
				}
				if r := send("/not/a/mock/path"); r.status != 200 || len(forwarded) != 2 {
					t.Errorf("unknown path: status %d, %d forwarded; want it forwarded", r.status, len(forwarded))
				}
			})
		})
	}
}

// TestUpstreamOpsRoutes: in front of an upstream, the mock answers every
// route of its own operation in its table (opsRoutes: admin, metrics,
// probes) itself, by each of its methods as the mock alone does, and a
// wrong method or an unknown admin path as well; a model request and the
// providers' admin rate-limit APIs go on to the upstream.
func TestUpstreamOpsRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := UpstreamConfig(Config{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		forwarded := 0
		h := s.Upstream(func(w http.ResponseWriter, req *http.Request) int {
			forwarded++
			w.WriteHeader(http.StatusTeapot)
			return 0
		})
		do := func(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, "http://proxy"+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer sk-upstream")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		// served checks that the mock answers method path in front of an
		// upstream as it does alone.
		served := func(method, path string) {
			t.Helper()
			before := forwarded
			got, want := do(h, method, path, ""), do(s.Handler(), method, path, "")
			if forwarded != before || got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
				t.Errorf("%s %s in front of an upstream: status %d (%q), forwarded %t; want the mock's own %d (%q)",
					method, path, got.Code, got.Header().Get("Content-Type"), forwarded != before, want.Code, want.Header().Get("Content-Type"))
			}
		}
		inTable := make(map[string]bool)
		for _, rt := range s.routeTable() {
			inTable[rt.path+" "+strings.Join(rt.methods, ",")] = true
		}
		ops := make(map[string]bool)
		for _, rt := range s.opsRoutes() {
			if !inTable[rt.path+" "+strings.Join(rt.methods, ",")] {
				t.Errorf("ops route %s %v is not in the route table", rt.path, rt.methods)
			}
			ops[rt.path] = true
			for _, m := range rt.methods {
				served(m, rt.path)
			}
			served(http.MethodDelete, rt.path) // the mock's 405
		}
		for _, p := range []string{"/metrics", "/healthz", "/readyz", "/_admin/limits", "/_admin/stats", "/_admin/reset"} {
			if !ops[p] {
				t.Errorf("%s is not an ops route", p)
			}
		}
		served(http.MethodGet, "/_admin/no-such-setting") // the mock's 404

		for _, p := range []string{"/v1/organizations/rate_limits", "/v1/organization/projects/proj_1/rate_limits"} {
			before := forwarded
			if r := do(h, http.MethodGet, p, ""); r.Code != http.StatusTeapot || forwarded != before+1 {
				t.Errorf("GET %s: status %d, forwarded %t; want the upstream's answer", p, r.Code, forwarded != before)
			}
		}
		before := forwarded
		body := `{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
		if r := do(h, http.MethodPost, "/v1/messages", body); r.Code != http.StatusTeapot || forwarded != before+1 {
			t.Errorf("POST /v1/messages: status %d body %s, forwarded %t; want the upstream's answer", r.Code, r.Body, forwarded != before)
		}
	})
}
