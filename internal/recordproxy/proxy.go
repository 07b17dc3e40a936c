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

// New returns a handler that forwards every request to upstream, model
// call or not: its path is appended to upstream's (its query to
// upstream's), its scheme and host are upstream's, and so is its Host
// header, except on a SigV4-signed request (Bedrock), which keeps the Host
// it was signed for. The method, body and headers go on as sent, less the
// hop-by-hop headers and the client's Forwarded and X-Forwarded-* (none
// are added); the response comes back the same way, its body written to
// the client as each read from the upstream returns and flushed at once
// (FlushInterval -1), so no stream's frames are merged. Each attempt is
// one line in w (record.Transport, run "proxy"), written when its response
// body ends; an upstream that cannot be reached is a 502 with no body for
// the client and a line with status 0 and error type transport. base is
// the upstream transport; nil is http.DefaultTransport.
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
