package mock

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// envelope wraps ln as Serve serves it. In real time (a kernel's time is
// the real one) its connections read the kernel's receive times
// (arrival.go).
func (s *Server) envelope(ln net.Listener) envelopeListener {
	stamp := s.clock == clock.Real
	if stamp {
		stampListener(ln)
	}
	return envelopeListener{Listener: ln, s: s, stamp: stamp}
}

// maxHeaderBytes is the configured header limit; hardHeaderBytes is what
// net/http is told, larger, so that requests between the two reach
// limitHeaders and get 431 in their API's envelope. Above the hard limit
// net/http answers a plain 431 itself, which envelopeConn rewrites.
func (s *Server) maxHeaderBytes() int {
	if s.cfg.MaxHeaderBytes > 0 {
		return s.cfg.MaxHeaderBytes
	}
	return DefaultMaxHeaderBytes
}

func (s *Server) hardHeaderBytes() int { return max(1<<20, 2*s.maxHeaderBytes()) }

// headerBytes counts the request line and header lines of req as they were
// sent (give or take the case of names), as net/http counts them.
func headerBytes(req *http.Request) int {
	n := len(req.Method) + 1 + len(req.RequestURI) + 1 + len(req.Proto) + 2
	if req.Host != "" {
		n += len("Host: ") + len(req.Host) + 2
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n + 2
}

// limitHeaders answers 431 request_header_fields_too_large, in the
// envelope of the request's API, to a request whose headers exceed
// MaxHeaderBytes.
func (s *Server) limitHeaders(next http.Handler) http.Handler {
	limit := s.maxHeaderBytes()
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if n := headerBytes(req); n > limit {
			w.Header().Set("Connection", "close")
			s.metrics.request(wireOf(req).Name(), http.StatusRequestHeaderFieldsTooLarge, "unauthenticated")
			s.writeError(w, wireOf(req), http.StatusRequestHeaderFieldsTooLarge, wire.APIError{
				Msg:  fmt.Sprintf("request headers of %d bytes are above the limit of %d bytes", n, limit),
				Code: "request_header_fields_too_large",
			})
			return
		}
		next.ServeHTTP(w, req)
	})
}

// goPlain431 and goPlain400 are what net/http writes, before any handler
// runs, for headers above http.Server.MaxHeaderBytes and for requests it
// cannot parse (net/http/server.go, conn.serve).
const (
	goPlainHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	goPlain431     = "HTTP/1.1 431 Request Header Fields Too Large" + goPlainHeaders + "431 Request Header Fields Too Large"
	goPlain400     = "HTTP/1.1 400 Bad Request" + goPlainHeaders + "400 Bad Request"
)

// envelopeListener wraps the connections Serve accepts in envelopeConn.
type envelopeListener struct {
	net.Listener
	s     *Server
	stamp bool // connections read receive times (Server.envelope)
}

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	ec := &envelopeConn{Conn: c, s: l.s}
	if l.stamp {
		ec.stampArrivals()
	}
	return ec, nil
}

// envelopeConn replaces net/http's plain-text 431 and 400, written before
// the request reaches a handler (so the API it was for is unknown), by a
// JSON error that both SDK families parse in full: Anthropic's envelope
// with OpenAI's message, type, param and code inside "error". It also
// reads the kernel's receive times of the request bytes, where it can
// (arrival.go).
type envelopeConn struct {
	net.Conn
	s  *Server
	rx *rxStamps // nil: receive times are not read
}

func (c *envelopeConn) Read(p []byte) (int, error) {
	if c.rx != nil {
		return c.rx.read(c.Conn, p)
	}
	return c.Conn.Read(p)
}

func (c *envelopeConn) Write(b []byte) (int, error) {
	if len(b) >= len(goPlain400) && b[0] == 'H' && b[9] == '4' {
		var status int
		var msg, code string
		switch string(b) {
		case goPlain431:
			status, code = http.StatusRequestHeaderFieldsTooLarge, "request_header_fields_too_large"
			msg = fmt.Sprintf("request headers are above the limit of %d bytes", c.s.maxHeaderBytes())
		case goPlain400:
			status, code, msg = http.StatusBadRequest, "invalid_request", "malformed HTTP request"
		}
		if status != 0 {
			if _, err := c.Conn.Write(c.s.plainError(status, msg, code)); err != nil {
				return 0, err
			}
			return len(b), nil
		}
	}
	return c.Conn.Write(b)
}

// CloseWrite passes net/http's half-close through, as it does on a TCP
// connection after an error.
func (c *envelopeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// plainError is a whole HTTP/1.1 error response with the merged envelope.
func (s *Server) plainError(status int, msg, code string) []byte {
	id := s.newID("req_")
	body, _ := json.Marshal(map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": "invalid_request_error", "message": msg, "param": nil, "code": code},
		"request_id": id,
	})
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRequest-Id: %s\r\nX-Request-Id: %s\r\nConnection: close\r\n\r\n",
		status, http.StatusText(status), len(body), id, id)
	return append([]byte(head), body...)
}
