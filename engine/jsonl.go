package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// JSONL is a Sink writing each Result as one line of JSON (results.jsonl)
// the moment it is put: one Write per line, so that a process killed mid-run
// leaves at most a torn last line, and a Flush when the writer has one
// (bufio.Writer). It is safe for concurrent use.
type JSONL struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewJSONL returns a JSONL sink writing to w.
func NewJSONL(w io.Writer) *JSONL { return &JSONL{w: w} }

// Put writes r as one line.
func (j *JSONL) Put(r Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("engine: encode result %d: %w", r.Index, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf = append(append(j.buf[:0], b...), '\n')
	if _, err := j.w.Write(j.buf); err != nil {
		return fmt.Errorf("engine: write result %d: %w", r.Index, err)
	}
	if f, ok := j.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("engine: flush result %d: %w", r.Index, err)
		}
	}
	return nil
}
