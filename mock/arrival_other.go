//go:build !linux

package mock

import (
	"net"
	"sync/atomic"
)

// rxStamps reads receive times on Linux only (arrival_linux.go); here a
// connection reads as it is, and a schedule starts when the handler had
// read the body.
type rxStamps struct{ at atomic.Int64 }

func stampListener(net.Listener) {}

func (c *envelopeConn) stampArrivals() {}

func (r *rxStamps) read(c net.Conn, p []byte) (int, error) { return c.Read(p) }
