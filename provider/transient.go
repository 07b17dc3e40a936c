package provider

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/ratelab/ratelab/strategies"
)

// Transient reports whether an attempt that got no response (Status 0)
// failed in a way that a server being down or restarting, or the network
// between, explains, so that the same request may succeed later: the
// connection could not be made (refused, unreachable, a dial timeout, a
// temporary DNS failure), or it was reset, aborted or closed before any
// response byte arrived.
//
// Errors of the request itself are not transient: a header value net/http
// refuses to send, an unsupported URL scheme, a TLS handshake with an
// untrusted certificate or with a server that does not speak TLS, a reply
// that is not HTTP, an unknown host. Repeating such a request fails the same
// way, so a batch records it instead of waiting for it. A canceled attempt,
// and any attempt that got a status, is not transient either.
func Transient(o strategies.Outcome) bool {
	if o.Status != 0 || o.Kind != strategies.Failed || o.Err == nil {
		return false
	}
	err := o.Err
	// errors.Is sees through Redact, which keeps what the error wrapped.
	for _, target := range []error{
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN, syscall.EHOSTDOWN,
		syscall.ETIMEDOUT,
		// The server closed the connection before its response: io.EOF
		// from a socket, io.ErrClosedPipe from an in-memory pipe.
		io.EOF, io.ErrUnexpectedEOF, io.ErrClosedPipe, net.ErrClosed,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	// net/http's errServerClosedIdle is unexported: the server closed the
	// connection before answering, as one being killed does.
	if strings.HasSuffix(err.Error(), "http: server closed idle connection") {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTemporary || dns.IsTimeout
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true // no connection was made, so nothing of the request was sent
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
