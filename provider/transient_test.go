package provider

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ratelab/ratelab/strategies"
)

// TestTransient classifies real failed attempts over loopback sockets: a
// server that is down or drops the connection is transient, a request that
// can never be sent or a server that does not speak HTTP(S) is not.
func TestTransient(t *testing.T) {
	// A port nothing listens on: listen, note the address, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String()
	ln.Close()

	// A server that accepts and closes each connection before answering,
	// as a process being killed does.
	hangUp := listen(t, func(c net.Conn) { c.Close() })
	// One that reads the request and resets the connection.
	reset := listen(t, func(c net.Conn) {
		c.Read(make([]byte, 4096))
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	// One that answers with something that is not HTTP.
	garbage := listen(t, func(c net.Conn) {
		c.Read(make([]byte, 4096))
		io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\r\n")
		c.Close()
	})
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()

	tests := []struct {
		name  string
		base  string
		req   Request
		hc    *http.Client
		want  bool
		kinds strategies.Kind
	}{
		{"connection refused", closedURL, testRequest(false), nil, true, strategies.Failed},
		{"closed before the response", hangUp, testRequest(false), nil, true, strategies.Failed},
		{"reset before the response", reset, testRequest(false), nil, true, strategies.Failed},
		{"not HTTP", garbage, testRequest(false), nil, false, strategies.Failed},
		{"untrusted certificate", tlsSrv.URL, testRequest(false), &http.Client{}, false, strategies.Failed},
		{"TLS to a plain server", "https://" + plain.Listener.Addr().String(), testRequest(false), &http.Client{}, false, strategies.Failed},
		{"unsupported scheme", "ftp://127.0.0.1:1", testRequest(false), nil, false, strategies.Failed},
		{"header value", plain.URL, func() Request { r := testRequest(false); r.IdempotencyKey = "a\nb"; return r }(), nil, false, strategies.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc := tt.hc
			if hc == nil {
				hc = &http.Client{Transport: &http.Transport{}}
			}
			c := &Client{Provider: Anthropic{}, BaseURL: tt.base, APIKey: testKey, HTTP: hc}
			_, o := c.Do(context.Background(), tt.req, 0)
			if o.Kind != tt.kinds || o.Status != 0 {
				t.Fatalf("Outcome = %v %d (%v), want %v 0", o.Kind, o.Status, o.Err, tt.kinds)
			}
			if got := Transient(o); got != tt.want {
				t.Errorf("Transient(%v) = %v, want %v", o.Err, got, tt.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, o := (&Client{Provider: Anthropic{}, BaseURL: closedURL}).Do(ctx, testRequest(false), 0)
	if Transient(o) {
		t.Errorf("Transient(canceled: %v) = true, want false", o.Err)
	}
	if Transient(strategies.Outcome{Kind: strategies.Failed, Status: 500}) {
		t.Error("Transient(500) = true, want false: a status is a response")
	}
}

// listen serves handle on every connection of a loopback listener and
// returns its URL.
func listen(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return "http://" + ln.Addr().String()
}
