package mock

import (
	"context"
	"net"
	"net/http"
	"time"
)

// A response's schedule starts when its request arrived: on Linux, when
// the kernel received the request's last bytes (SO_TIMESTAMPNS, read
// with the bytes by rxStamps in arrival_linux.go); elsewhere, and for
// connections that are not TCP (InProcess, a custom listener), when the
// handler had read the body. Anchored at the kernel's time, the mock's own
// queue under a burst of requests (waiting for a processor, decoding,
// admission) is part of the time to first token, as a provider's is,
// instead of delaying every token of every queued request: a request the
// mock reaches 30 ms late still ends on time, its first tokens merged
// (docs/mockllm.md: Latency and content).

// connKey is the context key under which ConnContext stores a connection
// whose receive times are read.
type connKey struct{}

// withConn is http.Server.ConnContext: it makes c findable from its
// requests (arrived) when it reads receive times.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if ec, ok := c.(*envelopeConn); ok && ec.rx != nil {
		return context.WithValue(ctx, connKey{}, ec)
	}
	return ctx
}

// maxArrivalAge bounds how long before its read, or before now, a receive
// time may be: an older one is a stepped wall clock, not a queue, and now
// is used.
const maxArrivalAge = time.Minute

// monoBase is the origin of the monotonic arrival times rxStamps keeps.
var monoBase = time.Now()

// arrivalMono converts kernel, a receive time in Unix nanoseconds (the
// wall clock), taken at read, into the monotonic time since monoBase, plus
// one so that 0 stays "unknown". The wall clock is compared with the
// kernel's only at the read, moments after the bytes came: a later step
// of it (NTP, a resumed machine) does not move the arrival.
func arrivalMono(kernel int64, read time.Time) int64 {
	if kernel == 0 {
		return 0
	}
	queued := read.UnixNano() - kernel
	if queued < 0 || queued > int64(maxArrivalAge) {
		return 0
	}
	return int64(read.Sub(monoBase)) - queued + 1
}

// arrived is when req's last bytes reached the machine, as of now (read
// on s.clock after the body): the kernel's receive time of the last bytes
// read from req's connection, or now when there is none.
func arrived(req *http.Request, now time.Time) time.Time {
	c, _ := req.Context().Value(connKey{}).(*envelopeConn)
	if c == nil {
		return now
	}
	at := c.rx.at.Load()
	if at == 0 {
		return now
	}
	age := now.Sub(monoBase) - time.Duration(at-1)
	if age < 0 || age > maxArrivalAge {
		return now
	}
	return now.Add(-age)
}
