package recordproxy_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/internal/recordproxy"
	"github.com/ratelab/ratelab/mock"
)

// BenchmarkProxyAdded reports the p50 of a non-streamed call straight to
// the mock and through the recording proxy, and their difference
// (added-p50-µs; the target is at most 1000); and through the proxy with
// limits of its own (Limited: max_concurrent and rpm it never reaches), the
// same difference (limited-added-p50-µs).
func BenchmarkProxyAdded(b *testing.B) {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = 0
	srv, err := mock.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	up := httptest.NewServer(srv.Handler())
	defer up.Close()
	u, _ := url.Parse(up.URL)
	w, _ := record.NewWriter(io.Discard, record.Header{Source: "bench"})
	px := httptest.NewServer(recordproxy.New(u, w, nil))
	defer px.Close()
	lcfg := mock.DefaultConfig()
	lcfg.Limits = mock.Limits{MaxConcurrent: 1000, RPM: 1 << 30}
	lcfg, err = mock.UpstreamConfig(lcfg)
	if err != nil {
		b.Fatal(err)
	}
	lsrv, err := mock.New(lcfg)
	if err != nil {
		b.Fatal(err)
	}
	lpx := httptest.NewServer(recordproxy.Limited(lsrv, u, w, nil))
	defer lpx.Close()
	body := `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	p50 := func(base string) time.Duration {
		var ds []time.Duration
		for range b.N {
			req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(body))
			req.Header.Set("anthropic-version", "2023-06-01")
			req.Header.Set("content-type", "application/json")
			t0 := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var sink bytes.Buffer
			sink.ReadFrom(resp.Body)
			resp.Body.Close()
			ds = append(ds, time.Since(t0))
			if resp.StatusCode != 200 {
				b.Fatalf("status %d: %s", resp.StatusCode, sink.String())
			}
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	direct := p50(up.URL)
	proxied := p50(px.URL)
	limited := p50(lpx.URL)
	b.ReportMetric(float64(direct.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(proxied.Microseconds()), "proxy-p50-µs")
	b.ReportMetric(float64((proxied - direct).Microseconds()), "added-p50-µs")
	b.ReportMetric(float64((limited - direct).Microseconds()), "limited-added-p50-µs")
}
