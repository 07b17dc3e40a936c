package memnet_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/internal/memnet"
)

// TestHTTPInVirtualTime serves HTTP over the listener inside a synctest bubble:
// a handler that sleeps 2 s takes exactly 2 s of virtual time.
func TestHTTPInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := memnet.New()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(2 * time.Second)
			io.WriteString(w, "ok")
		})}
		go srv.Serve(ln)
		tr := &http.Transport{DialContext: ln.Dial}
		c := &http.Client{Transport: tr}

		start := time.Now()
		resp, err := c.Get("http://memnet/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("elapsed = %v, want 2s", got)
		}
		if string(body) != "ok" {
			t.Errorf("body = %q, want ok", body)
		}
		tr.CloseIdleConnections()
		srv.Close()
		ln.Close()
	})
}

func TestDialAfterClose(t *testing.T) {
	ln := memnet.New()
	ln.Close()
	if _, err := ln.Dial(context.Background(), "tcp", "x"); !errors.Is(err, memnet.ErrClosed) {
		t.Errorf("Dial after Close: err = %v, want ErrClosed", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, memnet.ErrClosed) {
		t.Errorf("Accept after Close: err = %v, want ErrClosed", err)
	}
}
