//go:build linux

package mock

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// rxStamps reads a TCP connection with recvmsg(2) instead of read(2), so
// that each read also returns the kernel's receive time of its bytes
// (SO_TIMESTAMPNS; for TCP, of the last segment read), and keeps the last
// one. It waits through the connection's poller (syscall.RawConn.Read),
// so deadlines and Close behave as for a net.TCPConn's Read. One read runs
// at a time (net/http's background read and a request's reads take turns,
// and nothing else reads a served connection); the handler reads at
// concurrently, hence the atomic.
type rxStamps struct {
	raw  syscall.RawConn
	recv func(fd uintptr) bool // r.recvmsg, bound once
	p    []byte                // the buffer of the read in progress
	n    int
	err  error
	oob  [8]uint64    // control messages; uint64s for the headers' alignment
	at   atomic.Int64 // arrivalMono of the last bytes read; 0 unknown
}

// stampListener turns SO_TIMESTAMPNS on for ln's socket, when it is a
// TCP one: the kernel then stamps segments from the moment Serve starts,
// and the connections that complete their handshake from then on inherit
// the option, so that the bytes a client sends before its connection is
// accepted have a receive time too.
func stampListener(ln net.Listener) { stampSocket(ln) }

// stampArrivals makes c read receive times, when its connection is a TCP
// socket; otherwise c reads as before. It sets the option on the
// connection too: one whose handshake completed before the listener had
// it (a client connecting between Listen and Serve) did not inherit it.
func (c *envelopeConn) stampArrivals() {
	raw := stampSocket(c.Conn)
	if raw == nil {
		return
	}
	r := &rxStamps{raw: raw}
	r.recv = r.recvmsg
	c.rx = r
}

// read is c.Read: like net.TCPConn's, io.EOF at the end and a
// *net.OpError "read" otherwise.
func (r *rxStamps) read(c net.Conn, p []byte) (int, error) {
	if len(p) == 0 {
		return c.Read(p) // what net.TCPConn says of an empty read
	}
	r.p, r.n, r.err = p, 0, nil
	err := r.raw.Read(r.recv)
	n, rerr := r.n, r.err
	r.p, r.err = nil, nil
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) {
			err = oe.Err // raw-read's wrapping of the poller's error
		}
	} else if rerr != nil {
		err = os.NewSyscallError("recvmsg", rerr)
	} else if n == 0 {
		return 0, io.EOF
	}
	if err != nil {
		return n, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return n, nil
}

// recvmsg is one attempt of read: false to wait until the socket is
// readable.
func (r *rxStamps) recvmsg(fd uintptr) bool {
	oob := unsafe.Slice((*byte)(unsafe.Pointer(&r.oob)), unsafe.Sizeof(r.oob))
	n, oobn, _, _, err := syscall.Recvmsg(int(fd), r.p, oob, 0)
	for err == syscall.EINTR { // retry at once, as net's Read does: the poller has no new edge to wait for
		n, oobn, _, _, err = syscall.Recvmsg(int(fd), r.p, oob, 0)
	}
	if err == syscall.EAGAIN {
		return false
	}
	r.n, r.err = max(n, 0), err
	if n > 0 {
		// A read without a receive time clears the last one: arrived
		// then uses now rather than an earlier request's time.
		r.at.Store(arrivalMono(rxTime(oob[:oobn]), time.Now()))
	}
	return true
}

// rxTime is the SCM_TIMESTAMPNS receive time among the control messages
// b, in Unix nanoseconds; 0 when there is none.
func rxTime(b []byte) int64 {
	for len(b) >= syscall.CmsgLen(0) {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
		size := int(h.Len)
		if size < syscall.CmsgLen(0) || size > len(b) {
			return 0
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && size >= syscall.CmsgLen(int(unsafe.Sizeof(syscall.Timespec{}))) {
			return (*syscall.Timespec)(unsafe.Pointer(&b[syscall.CmsgLen(0)])).Nano()
		}
		b = b[min(len(b), syscall.CmsgSpace(size-syscall.CmsgLen(0))):]
	}
	return 0
}

// stampSocket turns SO_TIMESTAMPNS on for v's socket and returns its
// syscall.RawConn; nil when v is not a TCP socket or refuses the option.
//
// Only TCP: recvmsg with a control buffer on a unix socket would accept
// the file descriptors a client passes with SCM_RIGHTS (read(2) discards
// them), leaking them into the server.
func stampSocket(v any) syscall.RawConn {
	var sc syscall.Conn
	switch v := v.(type) {
	case *net.TCPConn:
		sc = v
	case *net.TCPListener:
		sc = v
	default:
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nil
	}
	return raw
}
