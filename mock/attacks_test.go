package mock

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Attacks on the server that held when issue 10 was filed, kept as tests so
// they keep holding. They run in virtual time over in-memory connections,
// so every cut is asserted at its exact instant.

// dialRaw opens a raw connection to ts.
func dialRaw(t *testing.T, ts *testServer) net.Conn {
	t.Helper()
	conn, err := ts.ln.Dial(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// readUntilClosed reads conn until the server closes it and returns what it
// read.
func readUntilClosed(conn net.Conn) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestIdleConnectionsCut holds 5,000 connections open doing nothing: half
// never send a byte and are closed at ReadHeaderTimeout (10s) after they
// opened, half are keep-alive connections after one request and are closed
// at IdleTimeout (2m) after their response. While all of them are held, a
// new client is still served. Nothing is left running afterwards (the
// bubble would report it).
func TestIdleConnectionsCut(t *testing.T) {
	const silent, keepAlive = 2500, 2500
	synctest.Test(t, func(t *testing.T) {
		ts := startServer(t, DefaultConfig())
		defer ts.stop()
		start := time.Now()
		var wg sync.WaitGroup
		closedAt := make([]time.Duration, silent+keepAlive) // since open, or since the response
		for i := range silent {
			conn := dialRaw(t, ts)
			wg.Go(func() {
				defer conn.Close()
				if got := readUntilClosed(conn); got != "" {
					t.Errorf("silent connection %d: server wrote %q, want nothing", i, got)
				}
				closedAt[i] = time.Since(start)
			})
		}
		for i := silent; i < silent+keepAlive; i++ {
			conn := dialRaw(t, ts)
			wg.Go(func() {
				defer conn.Close()
				if _, err := io.WriteString(conn, "GET /v1/models HTTP/1.1\r\nHost: mock\r\n\r\n"); err != nil {
					t.Errorf("keep-alive connection %d: %v", i, err)
					return
				}
				br := bufio.NewReader(conn)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Errorf("keep-alive connection %d: %v", i, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered := time.Now()
				if resp.StatusCode != 200 || resp.Close {
					t.Errorf("keep-alive connection %d: status %d, close %v, want 200 kept alive", i, resp.StatusCode, resp.Close)
				}
				if rest, _ := io.ReadAll(br); len(rest) != 0 {
					t.Errorf("keep-alive connection %d: server wrote %q while idle", i, rest)
				}
				closedAt[i] = time.Since(answered)
			})
		}

		// Every connection is now held; a new client is served.
		time.Sleep(5 * time.Second)
		if r := ts.do(t, "POST", "/v1/messages", anthropicBody(5, false, "hi")); r.status != 200 {
			t.Errorf("request with %d connections held: status %d, want 200", silent+keepAlive, r.status)
		}
		wg.Wait()
		for i, d := range closedAt {
			want := 10 * time.Second
			if i >= silent {
				want = 2 * time.Minute
			}
			if d != want {
				t.Fatalf("connection %d (of %d silent, %d kept alive) closed after %v, want %v", i, silent, keepAlive, d, want)
			}
		}
	})
}

// TestSlowlorisTrickle sends the headers, or the body, one byte at a time,
// each byte well inside any per-read timeout: the headers are still cut at
// 10s after the connection opened, and the body is answered 400 naming the
// timeout BodyTimeout after the headers ended. (TestReadHeaderTimeout and
// TestSlowBody cover a client that stops instead.)
func TestSlowlorisTrickle(t *testing.T) {
	// trickle writes s to conn a byte every d, until stop is closed.
	trickle := func(conn net.Conn, s string, every time.Duration, stop <-chan struct{}) {
		for i := range len(s) {
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
			if _, err := conn.Write([]byte{s[i]}); err != nil {
				return
			}
		}
	}
	t.Run("headers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ts := startServer(t, DefaultConfig())
			defer ts.stop()
			conn := dialRaw(t, ts)
			defer conn.Close()
			start := time.Now()
			stop := make(chan struct{})
			defer close(stop)
			go trickle(conn, "POST /v1/messages HTTP/1.1\r\nHost: mock\r\nX-Slow: "+strings.Repeat("a", 100), time.Second, stop)
			// net/http closes the connection, over a pipe after a 400.
			if got := readUntilClosed(conn); got != "" && !strings.HasPrefix(got, "HTTP/1.1 400 ") {
				t.Errorf("trickled headers: server wrote %q, want nothing or a 400", got)
			}
			if d := time.Since(start); d != 10*time.Second {
				t.Errorf("trickled headers: connection closed after %v, want 10s", d)
			}
		})
	})
	t.Run("body", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ts := startServer(t, DefaultConfig())
			defer ts.stop()
			conn := dialRaw(t, ts)
			defer conn.Close()
			if _, err := io.WriteString(conn, "POST /v1/messages HTTP/1.1\r\nHost: mock\r\nAnthropic-Version: 2023-06-01\r\nContent-Length: 1000\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			stop := make(chan struct{})
			defer close(stop)
			go trickle(conn, anthropicBody(5, false, strings.Repeat("x", 1000)), 2*time.Second, stop)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if d := time.Since(start); d != BodyTimeout || resp.StatusCode != 400 || !strings.Contains(string(b), "not received within 30s") {
				t.Errorf("trickled body: %d %s after %v, want 400 naming the timeout after %v", resp.StatusCode, b, d, BodyTimeout)
			}
		})
	})
}

// TestHostileWire sends requests no client library would, straight onto
// the connection: the server answers each, or closes the connection, within
// a minute, never with a 5xx other than the two RFC 9112 asks for (505 for
// an HTTP version it does not speak, 501 for a transfer coding it does not
// know, both written by net/http before any handler runs), and it keeps
// serving well-formed requests afterwards.
func TestHostileWire(t *testing.T) {
	okBody := anthropicBody(5, false, "hi")
	post := func(headers, body string) string {
		return "POST /v1/messages HTTP/1.1\r\nHost: mock\r\nAnthropic-Version: 2023-06-01\r\n" + headers + "\r\n" + body
	}
	tests := []struct{ name, raw string }{
		{"garbage", "\x00\x01\x02\xff\xfe\r\n\r\n"},
		{"no method", " / HTTP/1.1\r\nHost: mock\r\n\r\n"},
		{"bad version", "GET / HTTP/x.y\r\nHost: mock\r\n\r\n"},
		{"future version", "GET / HTTP/9.9\r\nHost: mock\r\n\r\n"},
		{"no host", "GET /v1/models HTTP/1.1\r\n\r\n"},
		{"bad header name", "GET /v1/models HTTP/1.1\r\nHost: mock\r\nBad Header: x\r\n\r\n"},
		{"header without colon", "GET /v1/models HTTP/1.1\r\nHost: mock\r\nnocolon\r\n\r\n"},
		{"NUL in header value", "GET /v1/models HTTP/1.1\r\nHost: mock\r\nX-A: a\x00b\r\n\r\n"},
		{"absolute URL to elsewhere", "GET http://elsewhere.example/v1/models HTTP/1.1\r\nHost: mock\r\n\r\n"},
		{"path traversal", "GET /../../etc/passwd HTTP/1.1\r\nHost: mock\r\n\r\n"},
		{"percent garbage", "GET /v1/%zz%00 HTTP/1.1\r\nHost: mock\r\n\r\n"},
		{"unknown method", "BREW /v1/messages HTTP/1.1\r\nHost: mock\r\n\r\n"},
		{"two content lengths", post("Content-Length: 5\r\nContent-Length: 6\r\n", "hello!")},
		{"negative content length", post("Content-Length: -1\r\n", "")},
		{"huge content length", post("Content-Length: 99999999999999999999\r\n", "")},
		{"content length above the body limit", post("Content-Length: 1000000000\r\n", "{")},
		{"bad chunk size", post("Transfer-Encoding: chunked\r\n", "zz\r\nhello\r\n0\r\n\r\n")},
		{"chunk larger than sent", post("Transfer-Encoding: chunked\r\n", "ffffffff\r\n{}\r\n")},
		{"unknown transfer encoding", post("Transfer-Encoding: gzip, zstd\r\n", "{}")},
		{"chunked and length", post("Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", "3\r\n{}}\r\n0\r\n\r\n")},
		{"gzip body that is not gzip", post("Content-Encoding: gzip\r\nContent-Length: 4\r\n", "{}{}")},
		{"wrong content type", post("Content-Type: text/xml\r\nContent-Length: 4\r\n", "<a/>")},
		{"api version garbage", strings.Replace(post(fmt.Sprintf("Content-Length: %d\r\n", len(okBody)), okBody), "2023-06-01", "\xff\xfe", 1)},
		{"expect continue", post(fmt.Sprintf("Expect: 100-continue\r\nContent-Length: %d\r\n", len(okBody)), okBody)},
		{"expect unknown", post(fmt.Sprintf("Expect: teapot\r\nContent-Length: %d\r\n", len(okBody)), okBody)},
		{"upgrade h2c", "GET /v1/models HTTP/1.1\r\nHost: mock\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"},
		{"http2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{"header folding", "GET /v1/models HTTP/1.1\r\nHost: mock\r\nX-A: a\r\n  folded\r\n\r\n"},
	}
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		ts := startServer(t, cfg)
		defer ts.stop()
		for _, tt := range tests {
			conn := dialRaw(t, ts)
			go io.WriteString(conn, tt.raw) // ends when the server reads it all or closes
			got := make(chan *http.Response, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					got <- nil
					return
				}
				io.Copy(io.Discard, resp.Body)
				got <- resp
			}()
			var resp *http.Response
			select {
			case resp = <-got:
			case <-time.After(time.Minute):
				t.Errorf("%s: no answer and the connection still open after a minute", tt.name)
			}
			conn.Close()
			if resp == nil {
				continue
			}
			rfc := map[string]int{"future version": 505, "unknown transfer encoding": 501}
			if resp.StatusCode >= 500 && resp.StatusCode != rfc[tt.name] {
				t.Errorf("%s: status %d, want no 5xx", tt.name, resp.StatusCode)
			}
		}
		if r := ts.do(t, "POST", "/v1/messages", okBody); r.status != 200 {
			t.Errorf("well-formed request after the hostile ones: status %d, want 200", r.status)
		}
	})
}

// FuzzAdminPut: no body PUT to a runtime setting panics the server or gets
// a 5xx; a body that is accepted leaves a setting whose GET form is itself
// accepted unchanged (what the server prints, it takes back); a body that
// is refused changes nothing.
func FuzzAdminPut(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `{"rpm":`, `{"rpm": 2, "retry_after": "3s"}`, "per_token: 1ms\nttft: 10ms\n",
		`{"rpm": -1}`, `{"rmp": 1}`, `{"rpm": 1e300}`, `{"rpm": 99999999999999999999}`, `{"rpm": "2"}`,
		`{"retry_after": "2562047h"}`, `{"retry_after": "-1s"}`, `{"per_token": "9223372036854775807ns"}`,
		`{"ttft": "1e9h"}`, `{"per_token": 5}`, "per_token: !!binary AAAA\n", "rpm: &a 1\ntpm: *a\n",
		"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n",
		strings.Repeat("[", 10000), "\xff\xfe\x00", `{"rate": 2, "status": 529}`, `{"rate": -0.5}`, `{"rate": 1.5}`,
		`{"claude-*": {"rpm": 2}}`, `{"claude-*": null}`, `{"[": {}}`, `{"": {"rpm": 1}}`, `{"a": {"b": 1}}`, `{"a": [1]}`,
	} {
		for setting := range 5 {
			f.Add(uint8(setting), []byte(seed))
		}
	}
	s, err := New(DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	serve := func(method, path string, body []byte) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, bytes.NewReader(body)))
		return rec
	}
	f.Fuzz(func(t *testing.T, setting uint8, body []byte) {
		path := "/_admin/" + []string{"limits", "latency", "faults", "quota", "limits_by_model"}[int(setting)%5]
		before := serve("GET", path, nil).Body.Bytes()
		rec := serve("PUT", path, body)
		if rec.Code >= 500 {
			t.Fatalf("PUT %s %q: status %d, want no 5xx: %s", path, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code != 200 {
			if after := serve("GET", path, nil).Body.Bytes(); !bytes.Equal(after, before) {
				t.Errorf("PUT %s %q refused (%d) but changed the setting from %s to %s", path, body, rec.Code, before, after)
			}
			return
		}
		got := serve("GET", path, nil).Body.Bytes()
		if again := serve("PUT", path, got); again.Code != 200 || !bytes.Equal(serve("GET", path, nil).Body.Bytes(), got) {
			t.Errorf("PUT %s of its own GET form %s: status %d %s, want 200 and no change", path, got, again.Code, again.Body.Bytes())
		}
		// Restore the defaults, so that the next input starts from them.
		def := DefaultConfig()
		s.SetLimits(def.Limits)
		s.SetLatency(def.Latency)
		s.SetFaults(def.Faults)
	})
}
