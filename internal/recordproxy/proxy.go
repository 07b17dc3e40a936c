// Package recordproxy is a transparent reverse proxy that records every
// attempt passing through it (package internal/record) in the format
// loadgen calibrate reads: a user's own program, in any language, is
// recorded by pointing its base URL at the proxy. See docs/calibrate.md.
package recordproxy

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/mock"
)

// New returns a handler forwarding every request unchanged to upstream
// (its scheme, host and path prefix), recording each attempt in w. Streams
// are flushed as each chunk arrives (FlushInterval -1), so SSE frames are
// never merged. base is the upstream transport; nil is
// http.DefaultTransport.
func New(upstream *url.URL, w *record.Writer, base http.RoundTripper) http.Handler {
	return proxy(upstream, w, base)
}

func proxy(upstream *url.URL, w *record.Writer, base http.RoundTripper) *httputil.ReverseProxy {
	if base == nil {
		base = http.DefaultTransport
	}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
			if strings.HasPrefix(r.In.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
				// A SigV4 signature covers the Host header: the request
				// goes on with the host it was signed for, or the upstream
				// refuses the signature (docs/calibrate.md, Bedrock).
				r.Out.Host = r.In.Host
			}
		},
		Transport:     &record.Transport{Base: base, W: w, Run: "proxy"},
		FlushInterval: -1,
	}
}

// Limited is New behind limits of its own: srv (a mock.Server, best built
// on mock.UpstreamConfig) admits each model request by its limits and
// answers a refusal itself, as the mock does (mock.Server.Upstream); the
// requests it admits are forwarded and recorded as New's, and each holds
// its slot until the upstream's response ends, whose reported output
// tokens settle its otpm reservation. The recording holds the upstream's
// exchanges only: the proxy's own refusals are the mock's, whose rules are
// its configuration.
func Limited(srv *mock.Server, upstream *url.URL, w *record.Writer, base http.RoundTripper) http.Handler {
	px := proxy(upstream, w, base)
	return srv.Upstream(func(rw http.ResponseWriter, req *http.Request) int {
		out := -1
		ctx := record.WithDone(req.Context(), func(a *record.Attempt) {
			switch {
			case a.Usage != nil:
				out = a.Usage.OutputTokens
			case a.Status != http.StatusOK:
				out = 0 // refused or failed upstream: nothing produced
			}
		})
		px.ServeHTTP(rw, req.WithContext(ctx))
		return out
	})
}
