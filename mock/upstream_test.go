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
