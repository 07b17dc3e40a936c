// Package recordproxy is a transparent reverse proxy that records every
// attempt passing through it (package internal/record) in the format
// loadgen calibrate reads: a user's own program, in any language, is
// recorded by pointing its base URL at the proxy. See docs/calibrate.md.
package recordproxy

import (
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/ratelab/ratelab/internal/record"
)

// New returns a handler forwarding every request unchanged to upstream
// (its scheme, host and path prefix), recording each attempt in w. Streams
// are flushed as each chunk arrives (FlushInterval -1), so SSE frames are
// never merged. base is the upstream transport; nil is
// http.DefaultTransport.
func New(upstream *url.URL, w *record.Writer, base http.RoundTripper) http.Handler {
	if base == nil {
		base = http.DefaultTransport
	}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		Transport:     &record.Transport{Base: base, W: w, Run: "proxy"},
		FlushInterval: -1,
	}
}
