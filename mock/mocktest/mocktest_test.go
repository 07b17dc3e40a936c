package mocktest_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

const body = `{"model": "claude-haiku-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}`

func config() mock.Config {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = 0
	cfg.APIKeys = []string{"k"}
	return cfg
}

// call posts one Messages request through srv's Client and returns its
// status and body.
func call(t *testing.T, srv *mocktest.Server) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", "k")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := srv.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestLoopback(t *testing.T) {
	srv := mocktest.Start(t, config())
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || srv.V1() != srv.URL+"/v1" {
		t.Fatalf("URL %q, V1 %q", srv.URL, srv.V1())
	}
	if status, b := call(t, srv); status != http.StatusOK || !strings.Contains(b, `"type":"message"`) {
		t.Fatalf("status %d: %s", status, b)
	}
	if n := srv.Mock.Stats().Attempts; n != 1 {
		t.Errorf("the mock counted %d requests, want 1", n)
	}
	// Admin access, in process and over HTTP, reaches the same server.
	srv.Mock.SetLimits(mock.Limits{RPM: 7})
	resp, err := srv.Client.Get(srv.URL + "/_admin/limits")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"rpm":7`) {
		t.Errorf("GET /_admin/limits = %s, want rpm 7", b)
	}
}

// TestInMemory serves in a synctest bubble, which ends only when every
// goroutine Start made has returned: the cleanup closes them all.
func TestInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mocktest.Start(t, config(), mocktest.InMemory())
		if srv.URL != "http://mock" {
			t.Errorf("URL %q", srv.URL)
		}
		if status, b := call(t, srv); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, b)
		}
	})
}

func TestWrap(t *testing.T) {
	var n atomic.Int64
	srv := mocktest.Start(t, config(), mocktest.Wrap(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			h.ServeHTTP(w, r)
		})
	}))
	call(t, srv)
	call(t, srv)
	if n.Load() != 2 || srv.Mock.Stats().Attempts != 2 {
		t.Errorf("wrapper saw %d, mock %d requests, want 2 and 2", n.Load(), srv.Mock.Stats().Attempts)
	}
}

func TestTransportGiven(t *testing.T) {
	tr := &http.Transport{MaxIdleConnsPerHost: 3}
	srv := mocktest.Start(t, config(), mocktest.InMemory(), mocktest.WithTransport(tr))
	if srv.Transport != tr || srv.Client.Transport != tr || tr.DialContext == nil {
		t.Fatal("the given transport is not the one used, or does not dial in memory")
	}
	if status, _ := call(t, srv); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
}
