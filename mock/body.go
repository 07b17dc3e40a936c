package mock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// BodyTimeout is how long a client has to send its request body once the
// headers are read; a slower body gets 400. (ReadHeaderTimeout bounds the
// headers; there is no timeout on the response, which may stream for
// minutes.)
const BodyTimeout = 30 * time.Second

// readBody reads at most MaxBodyBytes within BodyTimeout, holding its
// share of the decode budget (Config.DecodeBudget) until the caller calls
// release, once it has decoded the body. A body with a Content-Length
// takes that many bytes of the budget before it is read, waiting for them
// if other bodies hold the budget; a body without one takes the budget as
// it grows. Waiting longer than BodyTimeout is a 429 with retry-after. The
// buffer grows as bytes arrive: a Content-Length is trusted only up to
// 1 MiB for the first allocation, so a client announcing 32 MB and sending
// nothing holds budget but no memory. The caller gives held back with
// s.budget.release once it has decoded the body; on error, held is 0.
//
// buf, when it has room, holds the body: a buffer of an earlier request
// (bodyBufs), which nothing may read once the body is decoded. body is then
// buf with its capacity cut to the first read's size, as a new buffer's is.
func (s *Server) readBody(w http.ResponseWriter, req *http.Request, buf []byte) (body []byte, held int64, status int, err error) {
	cl := req.ContentLength
	if cl > MaxBodyBytes {
		return nil, 0, http.StatusRequestEntityTooLarge, fmt.Errorf("request body of %d bytes is above the limit of %d bytes", cl, MaxBodyBytes)
	}
	rc := readDeadliner(w)
	deadline := rc != nil && rc.SetReadDeadline(time.Now().Add(BodyTimeout)) == nil
	take := func(n int64) error {
		if err := s.budget.acquire(req.Context(), n); err != nil {
			return err
		}
		held += n
		return nil
	}
	fail := func(st int, e error) ([]byte, int64, int, error) {
		s.budget.release(held)
		// The deadline stays: net/http then gives up draining the rest of
		// the body at once and closes the connection.
		w.Header().Set("Connection", "close")
		return nil, 0, st, e
	}
	busy := func() ([]byte, int64, int, error) {
		w.Header().Set("Retry-After", "1")
		return fail(http.StatusTooManyRequests, fmt.Errorf("server busy: request bodies being decoded hold the decode budget of %d bytes (decode_budget); retry", s.budget.size))
	}

	size := int64(64 << 10)
	if cl >= 0 {
		if err := take(cl); err != nil {
			return busy()
		}
		size = min(cl, 1<<20)
	} else if err := take(size); err != nil {
		return busy()
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, 0, size)
	}
	buf = buf[:0:size] // a read never passes the Content-Length
	for cl < 0 || int64(len(buf)) < cl {
		if len(buf) == cap(buf) {
			next := int64(2 * cap(buf))
			if cl >= 0 {
				next = min(next, cl)
			} else {
				next = min(next, MaxBodyBytes+1) // one more byte tells a body that is too large
				if int64(len(buf)) > MaxBodyBytes {
					return fail(http.StatusRequestEntityTooLarge, fmt.Errorf("request body is above the limit of %d bytes", MaxBodyBytes))
				}
				if err := take(min(next, MaxBodyBytes) - held); err != nil { // the extra byte is not charged
					return busy()
				}
			}
			buf = append(make([]byte, 0, next), buf...)
		}
		n, rerr := req.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			if cl >= 0 && int64(len(buf)) < cl {
				return fail(http.StatusBadRequest, fmt.Errorf("reading request body: %w", io.ErrUnexpectedEOF))
			}
			break
		}
		if rerr != nil {
			if errors.Is(rerr, os.ErrDeadlineExceeded) {
				return fail(http.StatusBadRequest, fmt.Errorf("request body not received within %v", BodyTimeout))
			}
			return fail(http.StatusBadRequest, fmt.Errorf("reading request body: %w", rerr))
		}
	}
	if deadline {
		rc.SetReadDeadline(time.Time{})
	}
	return buf, held, 0, nil
}

// decodeBudget bounds the request body bytes held by the requests being
// read and decoded at once (Config.DecodeBudget). When a burst of large
// bodies ends, it gives the memory they used back to the operating system:
// the runtime would otherwise keep the heap it grew to for minutes.
type decodeBudget struct {
	size     int64
	sem      *semaphore.Weighted
	inUse    atomic.Int64
	large    atomic.Int64 // bytes of bodies of at least 1 MiB since the memory was last given back
	freeing  atomic.Bool
	lastFree atomic.Int64 // unix nanoseconds
}

func newDecodeBudget(size int64) *decodeBudget {
	return &decodeBudget{size: size, sem: semaphore.NewWeighted(size)}
}

// acquire takes n bytes of the budget, waiting for them up to BodyTimeout
// or until ctx ends.
func (b *decodeBudget) acquire(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	if !b.sem.TryAcquire(n) {
		ctx, cancel := context.WithTimeout(ctx, BodyTimeout)
		defer cancel()
		if err := b.sem.Acquire(ctx, n); err != nil {
			return err
		}
	}
	b.inUse.Add(n)
	return nil
}

// freeAfter is how many bytes of large bodies must have passed, and
// freeEvery how long since the last time, before a burst's end gives
// memory back.
const (
	freeAfter = 64 << 20
	freeEvery = time.Second
)

func (b *decodeBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.sem.Release(n)
	if n >= 1<<20 {
		b.large.Add(n)
	}
	if b.inUse.Add(-n) != 0 || b.large.Load() < freeAfter || time.Now().UnixNano()-b.lastFree.Load() < int64(freeEvery) {
		return
	}
	if b.freeing.CompareAndSwap(false, true) {
		b.large.Store(0)
		b.lastFree.Store(time.Now().UnixNano())
		go func() {
			defer b.freeing.Store(false)
			debug.FreeOSMemory()
		}()
	}
}

// readDeadliner finds the SetReadDeadline of w or of the writers it wraps,
// as http.ResponseController does, without allocating a controller.
func readDeadliner(w http.ResponseWriter) interface{ SetReadDeadline(time.Time) error } {
	for {
		switch t := w.(type) {
		case interface{ SetReadDeadline(time.Time) error }:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}
