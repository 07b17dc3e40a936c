package mock

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/openaichat"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// TestInProcessResponsesOutliveExchange: an in-process client's response
// headers are the handler's own map, not a copy, and its body was written
// from the exchange's buffer; the exchanges, request structs and body
// buffers are pooled. A response, admitted or refused, keeps every header
// value and its body while later requests reuse what its handler used.
func TestInProcessResponsesOutliveExchange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.Limits = Limits{RPM: 3, ITPM: 100000, OTPM: 100000}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		c := &http.Client{Transport: s.InProcess()}
		send := func(path, body string) (*http.Response, string) {
			t.Helper()
			req, err := http.NewRequest(http.MethodPost, "http://mock.invalid"+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			return resp, string(b)
		}
		type kept struct {
			resp   *http.Response
			header http.Header // a deep copy, taken at once
			body   string
		}
		var all []kept
		keep := func(resp *http.Response, body string) {
			h := make(http.Header, len(resp.Header))
			for k, v := range resp.Header {
				h[k] = slices.Clone(v)
			}
			all = append(all, kept{resp, h, body})
		}
		for i := range 5 { // 3 admitted, then 2 refused by the RPM limit
			resp, body := send("/v1/messages", anthropicBody(20, false, strings.Repeat("word ", i+1)))
			if want := http.StatusOK; i >= 3 {
				want = http.StatusTooManyRequests
				if resp.StatusCode != want {
					t.Fatalf("request %d: status %d, want %d: %s", i, resp.StatusCode, want, body)
				}
			} else if resp.StatusCode != want {
				t.Fatalf("request %d: status %d, want %d: %s", i, resp.StatusCode, want, body)
			}
			keep(resp, body)
		}
		resp, body := send("/v1/chat/completions", openaiBody(20, false, false, "hi"))
		keep(resp, body)
		resp, body = send("/v1/messages", `{"model":`) // a 400
		keep(resp, body)
		for i := range 20 { // more requests through the same pools
			send("/v1/messages", anthropicBody(20, false, strings.Repeat("other ", i+1)))
			send("/v1/chat/completions", openaiBody(20, true, true, "other"))
		}
		for i, k := range all {
			if k.header.Get("Request-Id")+k.header.Get("X-Request-Id") == "" {
				t.Errorf("response %d has no request id: %v", i, k.header)
			}
			if !maps.EqualFunc(k.resp.Header, k.header, slices.Equal) {
				t.Errorf("response %d: headers changed after later requests:\nwas %v\nnow %v", i, k.header, k.resp.Header)
			}
		}
		for i := range all {
			for j := range i {
				a, b := all[i].header, all[j].header
				if id := a.Get("Request-Id") + a.Get("X-Request-Id"); id == b.Get("Request-Id")+b.Get("X-Request-Id") {
					t.Errorf("responses %d and %d share request id %s", j, i, id)
				}
				if all[i].body == all[j].body {
					t.Errorf("responses %d and %d have the same body %s", j, i, all[i].body)
				}
			}
		}
	})
}

// TestBodyEndsAtContentLength: the handler reads a body up to its
// Content-Length and no further, also into a pooled buffer larger than that
// (net/http's server cuts a body there itself; a handler called directly,
// as the in-process transport calls it, is given the body as it is).
func TestBodyEndsAtContentLength(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		h := s.Handler()
		serve := func(body string, contentLength int64) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body))
			req.ContentLength = contentLength
			req.Header.Set("Anthropic-Version", "2023-06-01")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		for range 3 {
			// A large body first: its buffer goes back to the pool.
			large := anthropicBody(20, false, strings.Repeat("word ", 1000))
			if rec := serve(large, int64(len(large))); rec.Code != http.StatusOK {
				t.Fatalf("large body: status %d: %s", rec.Code, rec.Body)
			}
			body := anthropicBody(20, false, "hi")
			if rec := serve(body+" trailing bytes past the Content-Length", int64(len(body))); rec.Code != http.StatusOK {
				t.Fatalf("body cut at its Content-Length: status %d, want 200: %s", rec.Code, rec.Body)
			}
		}
	})
}

// TestRequestPoolKeepsNothing: a decoded request's struct goes back to its
// pool empty, so a large body's messages do not outlive the collection
// decodeBudget forces to give their memory back.
func TestRequestPoolKeepsNothing(t *testing.T) {
	// put clears what it is given. (The checks below go through the
	// package's pools, whose Get may hand out a fresh struct instead: the
	// race detector drops pooled items at random.)
	var pool wire.RequestPool[anthropic.Request]
	req := &anthropic.Request{Model: "m", Messages: make([]wire.Message, 3)}
	pool.Put(req)
	if req.Messages != nil || req.Model != "" {
		t.Errorf("put left %d messages of model %q in the struct", len(req.Messages), req.Model)
	}

	big := anthropicBody(20, false, strings.Repeat("word ", 10000))
	var c wire.Call
	if err := anthropic.DecodeMessages([]byte(big), true, &c); err != nil {
		t.Fatal(err)
	}
	if req := anthropic.Requests.Get(); req.Messages != nil || req.Model != "" {
		t.Errorf("pooled Messages request keeps %d messages of model %q", len(req.Messages), req.Model)
	}
	c = wire.Call{}
	if err := (openaichat.Format{}).Decode([]byte(openaiBody(20, false, false, strings.Repeat("word ", 10000))), 0, &c); err != nil {
		t.Fatal(err)
	}
	if req := openaichat.Requests.Get(); req.Messages != nil || req.Model != "" {
		t.Errorf("pooled Chat Completions request keeps %d messages of model %q", len(req.Messages), req.Model)
	}
}
