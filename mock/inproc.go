package mock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/ratelab/ratelab/clock"
)

// InProcess is an http.RoundTripper that serves each request with a
// handler in the same process, with no socket and no goroutine outside the
// clock: the handler runs in a goroutine of the clock (Clock.Go), writing
// into a pipe whose reader, the response's Body, waits for each chunk with
// Clock.Wait. Under a simulated clock (clock.Sim) a response's headers and
// each flushed chunk of a stream reach the client at the simulated instant
// the handler wrote them, so latency and time to first token are exact.
//
// It serves the handler as net/http's server would, for what the mock
// needs: the request's context ends when the client closes the body or its
// own context ends, or when the handler returns; headers are sent at the
// first Write or Flush (http.Flusher and http.ResponseController work), or
// when the handler returns, with a Content-Length then if it set none; a
// handler that panics with http.ErrAbortHandler cuts the response (the
// client reads io.ErrUnexpectedEOF, or RoundTrip fails before headers).
// Requests are never sent anywhere: their URL's host is ignored.
type InProcess struct {
	handler http.Handler
	clock   clock.Clock
}

// NewInProcess returns a transport serving h on c (nil: clock.Real).
func NewInProcess(h http.Handler, c clock.Clock) *InProcess {
	return &InProcess{handler: h, clock: clock.Or(c)}
}

// InProcess returns a transport to the server's Handler on its clock
// (WithClock): the way to reach a server running in simulated time.
func (s *Server) InProcess() *InProcess { return NewInProcess(s.handler, s.clock) }

// errClosedBody is what the handler's writes return once the client has
// closed the response body, and what a read after Close returns.
var errClosedBody = errors.New("mock: in-process response body closed")

// RoundTrip serves req with the handler and returns when the response's
// headers are sent, or req's context ends first.
func (t *InProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	hctx, cancel := context.WithCancel(ctx)
	// A shallow copy: the handler shares the request's Header, which the
	// client does not touch once it has sent the request, and reads its
	// Body, which serve closes when the handler returns.
	sreq := req.WithContext(hctx)
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	sreq.GetBody = nil
	sreq.RequestURI = req.URL.RequestURI()
	sreq.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	sreq.RemoteAddr = "in-process"
	sreq.Proto, sreq.ProtoMajor, sreq.ProtoMinor = "HTTP/1.1", 1, 1
	sreq.Close = false

	p := &pipe{clk: t.clock, ctx: ctx, cancel: cancel}
	w := &inprocWriter{p: p, header: make(http.Header)}
	t.clock.Go(func() { w.serve(t.handler, sreq) })

	for {
		p.mu.Lock()
		resp, err := p.resp, p.err
		var ev *clock.Event
		if resp == nil && err == nil {
			ev = p.waitLocked()
		}
		p.mu.Unlock()
		if resp != nil {
			resp.Request = req
			return resp, nil
		}
		if err != nil {
			cancel()
			return nil, err
		}
		if _, werr := t.clock.Wait(ctx, ev, 0); werr != nil {
			cancel()
			return nil, werr
		}
	}
}

// pipe carries a response from the handler's goroutine to the client's.
// A reader with nothing to read waits on ev with Clock.Wait; the next change
// (headers sent, bytes written, the end) fires it.
type pipe struct {
	clk    clock.Clock
	ctx    context.Context // the client's request context
	cancel context.CancelFunc

	mu     sync.Mutex
	ev     *clock.Event
	resp   *http.Response // set when the headers are sent
	buf    []byte         // written, not read yet: buf[off:]
	off    int
	done   bool  // the handler returned
	err    error // set with done: io.EOF, or how the response was cut
	closed bool  // the client closed the body
}

// waitLocked returns the event of the next change, for a reader about to
// wait for it.
func (p *pipe) waitLocked() *clock.Event {
	if p.ev == nil {
		p.ev = p.clk.NewEvent()
	}
	return p.ev
}

// changedLocked returns the event a reader waits on, if one does, for the
// caller to fire once it has unlocked p.mu; a change no one waits for
// makes no event.
func (p *pipe) changedLocked() *clock.Event {
	ev := p.ev
	p.ev = nil
	return ev
}

// pipeBufs holds the buffers of responses read to their end or closed: a
// simulated run of a million calls would otherwise allocate a million.
var pipeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// recycleLocked gives p's buffer back once nothing more is written to it
// (the handler returned, or the client closed the body) or read from it.
func (p *pipe) recycleLocked() {
	if p.buf != nil && cap(p.buf) <= 64<<10 {
		b := p.buf[:0]
		pipeBufs.Put(&b)
	}
	p.buf, p.off = nil, 0
}

// Read reads what the handler wrote, waiting for it on the clock.
func (p *pipe) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		if p.off < len(p.buf) {
			n := copy(b, p.buf[p.off:])
			p.off += n
			if p.off == len(p.buf) {
				p.buf, p.off = p.buf[:0], 0
			}
			p.mu.Unlock()
			return n, nil
		}
		if p.closed {
			p.mu.Unlock()
			return 0, errClosedBody
		}
		if p.done {
			err := p.err
			p.recycleLocked()
			p.mu.Unlock()
			return 0, err
		}
		ev := p.waitLocked()
		p.mu.Unlock()
		if _, err := p.clk.Wait(p.ctx, ev, 0); err != nil {
			p.cancel()
			return 0, err
		}
	}
}

// Close ends the response for the client: the handler's context ends and
// its writes fail, as when a client closes its connection.
func (p *pipe) Close() error {
	p.mu.Lock()
	p.closed = true
	p.recycleLocked()
	p.mu.Unlock()
	p.cancel()
	return nil
}

// inprocWriter is the handler's http.ResponseWriter.
type inprocWriter struct {
	p      *pipe
	header http.Header
	status int // 0 until WriteHeader
	sent   http.Header
}

func (w *inprocWriter) Header() http.Header { return w.header }

// WriteHeader records the status; the headers, as they are then, are sent
// at the first Write or Flush, or when the handler returns. They are not
// copied: a handler must not change them after WriteHeader (net/http ignores
// such changes; here the client would see them).
func (w *inprocWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("mock: in-process: invalid WriteHeader code %v", code))
	}
	w.status = code
	w.sent = w.header
}

// sendLocked makes the response visible to RoundTrip, once. contentLength
// is -1 when unknown.
func (w *inprocWriter) sendLocked(contentLength int64) {
	p := w.p
	if p.resp != nil {
		return
	}
	if v := w.sent.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			contentLength = n
		}
	} else if contentLength >= 0 {
		w.sent.Set("Content-Length", strconv.FormatInt(contentLength, 10))
	}
	p.resp = &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          p,
		ContentLength: contentLength,
	}
}

func (w *inprocWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	p := w.p
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, errClosedBody
	}
	w.sendLocked(-1)
	if p.buf == nil {
		p.buf = (*pipeBufs.Get().(*[]byte))[:0]
	}
	p.buf = append(p.buf, b...)
	ev := p.changedLocked()
	p.mu.Unlock()
	if ev != nil {
		ev.Fire()
	}
	return len(b), nil
}

// FlushError sends the headers if they are not sent yet; written bytes are
// already the client's. It is what http.ResponseController.Flush calls.
func (w *inprocWriter) FlushError() error {
	w.WriteHeader(http.StatusOK)
	p := w.p
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errClosedBody
	}
	if p.resp != nil {
		p.mu.Unlock()
		return nil
	}
	w.sendLocked(-1)
	ev := p.changedLocked()
	p.mu.Unlock()
	if ev != nil {
		ev.Fire()
	}
	return nil
}

// Flush is http.Flusher's.
func (w *inprocWriter) Flush() { _ = w.FlushError() }

// serve runs the handler and ends the response: whole (io.EOF), or cut when
// the handler panicked (http.ErrAbortHandler, as the mock's faults do, or
// any other panic, which net/http's server would log and cut too).
func (w *inprocWriter) serve(h http.Handler, req *http.Request) {
	p := w.p
	end := io.EOF
	defer func() {
		if v := recover(); v != nil {
			end = io.ErrUnexpectedEOF
			if v != http.ErrAbortHandler {
				end = fmt.Errorf("mock: in-process handler panicked: %v: %w", v, io.ErrUnexpectedEOF)
			}
		}
		req.Body.Close()
		p.cancel() // as net/http ends a request's context when its handler returns
		p.mu.Lock()
		if p.resp == nil && end == io.EOF {
			if w.status == 0 {
				w.WriteHeader(http.StatusOK)
			}
			w.sendLocked(int64(len(p.buf)))
		}
		if p.resp == nil {
			p.err = fmt.Errorf("mock: in-process: the response was cut before its headers: %w", end)
		} else {
			p.err = end
		}
		p.done = true
		ev := p.changedLocked()
		p.mu.Unlock()
		if ev != nil {
			ev.Fire()
		}
	}()
	h.ServeHTTP(w, req)
}
