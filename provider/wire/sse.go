package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxSSELine bounds one line of an event stream, so that a server that never
// sends a newline cannot make a client buffer without limit.
const MaxSSELine = 4 << 20

// ErrLineTooLong reports a line over MaxSSELine.
var ErrLineTooLong = fmt.Errorf("provider: event stream line longer than %d bytes", MaxSSELine)

// SSEEvent is one server-sent event: the value of its event: field (empty when
// the stream is data-only) and its data: lines joined by "\n".
type SSEEvent struct {
	Event string
	Data  []byte
}

// SSEReader reads server-sent events (text/event-stream) as the WHATWG spec
// frames them: fields up to a blank line, comments (":") ignored, one
// optional space after the colon stripped, CRLF, LF or CR line ends. id: and
// retry: fields are ignored; nothing here reconnects.
type SSEReader struct {
	r     *bufio.Reader
	line  []byte
	event []byte
	data  []byte
	has   bool // a data: field was seen in the current event
}

// NewSSEReader returns a reader of the events in r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 16<<10)}
}

// Next returns the next event with a data field. It returns io.EOF when the
// stream ends cleanly between events, and io.ErrUnexpectedEOF when it ends
// inside one (an incomplete event is discarded, as the spec says). The
// returned Data is valid until the next call.
func (s *SSEReader) Next() (SSEEvent, error) {
	s.event, s.data, s.has = s.event[:0], s.data[:0], false
	pending := false // any field seen since the last dispatch
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && pending {
				return SSEEvent{}, io.ErrUnexpectedEOF
			}
			return SSEEvent{}, err
		}
		if len(line) == 0 {
			if s.has {
				return SSEEvent{Event: string(s.event), Data: s.data}, nil
			}
			s.event, pending = s.event[:0], false
			continue
		}
		if line[0] == ':' {
			continue
		}
		pending = true
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			s.event = append(s.event[:0], value...)
		case "data":
			if s.has {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.has = true
		}
	}
}

// readLine returns the next line without its terminator. A lone CR ends a
// line too; a CR followed by LF counts once. The line is valid until the next
// call.
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(s.line) > 0 {
					// A last line without a terminator never completes an event.
					return nil, io.ErrUnexpectedEOF
				}
				return nil, err
			}
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if len(s.line)+len(buf) > MaxSSELine {
				return nil, ErrLineTooLong
			}
			s.line = append(s.line, buf...)
			s.r.Discard(len(buf)) //nolint:errcheck // buffered
			continue
		}
		if len(s.line)+i > MaxSSELine {
			return nil, ErrLineTooLong
		}
		s.line = append(s.line, buf[:i]...)
		cr := buf[i] == '\r'
		s.r.Discard(i + 1) //nolint:errcheck // buffered
		if cr {
			if next, err := s.r.Peek(1); err == nil && next[0] == '\n' {
				s.r.Discard(1) //nolint:errcheck // peeked
			}
		}
		return s.line, nil
	}
}
