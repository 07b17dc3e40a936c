// Package memnet provides an in-memory net.Listener whose connections are
// net.Pipe pairs. Servers that serve on it and clients that dial it never touch
// a socket, so whole-system tests can run inside a testing/synctest bubble,
// where time advances only when every goroutine is durably blocked (loopback
// sockets are not, pipes are).
package memnet

import (
	"context"
	"errors"
	"net"
	"sync"
)

// ErrClosed is returned by Accept and Dial once the listener is closed.
var ErrClosed = errors.New("memnet: listener closed")

// Listener is an in-memory net.Listener. The zero value is not usable; call New.
// It is safe for concurrent use.
type Listener struct {
	conns  chan net.Conn
	done   chan struct{}
	closer sync.Once
}

// New returns an open Listener.
func New() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept waits for the next Dial and returns the server end of its pipe.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, ErrClosed
	}
}

// Close stops Accept and Dial. Connections already made stay open.
func (l *Listener) Close() error {
	l.closer.Do(func() { close(l.done) })
	return nil
}

// Addr returns a placeholder address.
func (l *Listener) Addr() net.Addr { return addr{} }

// Dial creates a pipe, hands the server end to Accept and returns the client
// end. Its signature matches http.Transport.DialContext; network and address
// are ignored.
func (l *Listener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, ErrClosed
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

type addr struct{}

func (addr) Network() string { return "memnet" }
func (addr) String() string  { return "memnet" }
