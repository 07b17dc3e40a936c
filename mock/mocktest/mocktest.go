// Package mocktest starts ratelab's mock for a test, as net/http/httptest
// starts a handler: on a loopback port, or on an in-memory listener whose
// connections a testing/synctest bubble can wait on, and closes everything
// when the test ends. It uses only package mock's public API.
//
//	srv := mocktest.Start(t, cfg)                    // loopback
//	srv := mocktest.Start(t, cfg, mocktest.InMemory()) // no socket, for synctest
//	client := &provider.Client{Provider: p, BaseURL: srv.URL, HTTP: srv.Client}
//	srv.Mock.SetLimits(...)                            // admin access
package mocktest

import (
	"net"
	"net/http"
	"testing"

	"github.com/ratelab/ratelab/internal/memnet"
	"github.com/ratelab/ratelab/mock"
)

// Server is a mock serving for one test.
type Server struct {
	// Mock is the server itself, for its runtime settings and counters
	// (SetLimits, SetFaults, Stats, Calls, …). The same settings are
	// served over HTTP under URL + "/_admin/".
	Mock *mock.Server
	// URL is the server's base URL, without a trailing slash and without
	// /v1: "http://127.0.0.1:PORT" on loopback, "http://mock" in memory
	// (only Transport can reach that one). See V1.
	URL string
	// Transport reaches the server: the one given with WithTransport, or
	// a clone of http.DefaultTransport without proxies. In memory its
	// DialContext dials the in-memory listener. Its idle connections are
	// closed when the test ends.
	Transport *http.Transport
	// Client is an http.Client on Transport.
	Client *http.Client
}

// V1 is URL + "/v1", the base URL of the OpenAI formats (whose paths the
// base includes /v1 for; Anthropic's base has none).
func (s *Server) V1() string { return s.URL + "/v1" }

// Option configures Start.
type Option func(*options)

type options struct {
	inMemory bool
	mockOpts []mock.Option
	wrap     func(http.Handler) http.Handler
	tr       *http.Transport
}

// InMemory serves the mock on an in-memory listener (net.Pipe connections)
// instead of a loopback port: no socket is opened, so a whole run can take
// place inside a testing/synctest bubble. Start it inside the bubble.
func InMemory() Option { return func(o *options) { o.inMemory = true } }

// WithMock passes opts to mock.New (mock.WithClock, …).
func WithMock(opts ...mock.Option) Option {
	return func(o *options) { o.mockOpts = append(o.mockOpts, opts...) }
}

// Wrap serves wrap(the mock's Handler) with a plain http.Server in place of
// mock.Server.Serve, for a test that counts, delays or alters what reaches
// the mock, as a handler in front of it.
func Wrap(wrap func(http.Handler) http.Handler) Option {
	return func(o *options) { o.wrap = wrap }
}

// WithTransport makes tr the Server's Transport (provider.NewTransport(n),
// sized for a run): Start sets its DialContext in memory and its Proxy to
// none.
func WithTransport(tr *http.Transport) Option { return func(o *options) { o.tr = tr } }

// Start starts a mock configured by cfg and registers its closing with
// t.Cleanup: the transport's idle connections, the server and its
// listener, after which Start's serving goroutine has returned. An invalid
// cfg fails the test with mock.New's error.
func Start(t testing.TB, cfg mock.Config, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	srv, err := mock.New(cfg, o.mockOpts...)
	if err != nil {
		t.Fatalf("mocktest: %v", err)
	}
	tr := o.tr
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	tr.Proxy = nil
	s := &Server{Mock: srv, Transport: tr, Client: &http.Client{Transport: tr}}

	var ln net.Listener
	if o.inMemory {
		mem := memnet.New()
		tr.DialContext = mem.Dial
		ln, s.URL = mem, "http://mock"
	} else {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			srv.Close()
			t.Fatalf("mocktest: %v", err)
		}
		s.URL = "http://" + ln.Addr().String()
	}

	serve, closeServer := srv.Serve, srv.Close
	if o.wrap != nil {
		hs := &http.Server{Handler: o.wrap(srv.Handler())}
		serve, closeServer = hs.Serve, func() error { hs.Close(); return srv.Close() }
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		serve(ln) //nolint:errcheck // ErrServerClosed at cleanup
	}()
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		closeServer() //nolint:errcheck // closing
		ln.Close()
		<-served
	})
	return s
}
