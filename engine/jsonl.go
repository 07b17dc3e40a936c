package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/ratelab/ratelab/strategies"
)

// JSONL is a Sink writing each Result as one line of JSON (results.jsonl)
// the moment it is put: one Write per line, so that a process killed mid-run
// leaves at most a torn last line, and a Flush when the writer has one
// (bufio.Writer). It is safe for concurrent use.
type JSONL struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

// NewJSONL returns a JSONL sink writing to w.
func NewJSONL(w io.Writer) *JSONL {
	j := &JSONL{w: w}
	j.enc = json.NewEncoder(&j.buf)
	j.enc.SetEscapeHTML(false) // text stays readable: <, > and & as they are
	return j
}

// Put writes r as one line.
func (j *JSONL) Put(r Result) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf.Reset()
	if err := j.enc.Encode(r); err != nil { // Encode ends the line
		return fmt.Errorf("encode result %d: %w", r.Index, err)
	}
	if _, err := j.w.Write(j.buf.Bytes()); err != nil {
		return fmt.Errorf("write result %d: %w", r.Index, err)
	}
	if f, ok := j.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("flush result %d: %w", r.Index, err)
		}
	}
	return nil
}

// ErrTornLine reports a last line without its newline: the writer was killed
// mid-write. Truncating the file to the offset ReadJSONL returns repairs it.
var ErrTornLine = errors.New("engine: torn last line")

// TornLineError is the ErrTornLine ReadJSONL returns, with the line's
// number: errors.Is(err, ErrTornLine) holds, and errors.As gives the line.
type TornLineError struct {
	Line int
}

// Error names the line: "engine: torn last line: line 5".
func (e *TornLineError) Error() string { return fmt.Sprintf("%v: line %d", ErrTornLine, e.Line) }

// Is makes errors.Is(err, ErrTornLine) hold.
func (e *TornLineError) Is(target error) bool { return target == ErrTornLine }

// ReadJSONL reads the Results a JSONL sink wrote, calling fn with each one in
// file order, to resume a batch: the caller skips the ids it sees (or, to
// retry failures, the ids of successes only). It returns the byte offset
// just past the last complete line it accepted. A last line without a
// newline is torn: ReadJSONL returns a *TornLineError (an ErrTornLine with
// the line's number) and the offset to truncate the file to. A complete line that is
// not a Result is an error naming the line; an error from fn stops the read
// and is returned as is. A line does not carry its Result's Kind: a result
// with an error is read as Failed (what a batch records is terminal).
func ReadJSONL(r io.Reader, fn func(Result) error) (offset int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(b)) == 0 {
				return offset, nil
			}
			return offset, &TornLineError{Line: line}
		}
		if err != nil {
			return offset, fmt.Errorf("engine: read results: %w", err)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			var res Result
			if err := json.Unmarshal(b, &res); err != nil {
				return offset, fmt.Errorf("engine: results line %d: %w", line, err)
			}
			if res.Err != nil {
				res.Kind = strategies.Failed
			}
			if err := fn(res); err != nil {
				return offset, err
			}
		}
		offset += int64(len(b))
	}
}
