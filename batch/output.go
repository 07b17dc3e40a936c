package batch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ratelab/ratelab/engine"
)

// openOutput reads what the output already holds into ids, repairs a torn
// last line, drops error lines for RetryFailed, and returns the file open
// for appending, with its lock held until it is closed.
func (b *Batch) openOutput(ids map[idKey]idState, sum *Summary) (*os.File, error) {
	f, err := openLocked(b.Output, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		return nil, err
	}
	failed := 0
	offset, err := engine.ReadJSONL(f, func(r engine.Result) error {
		if r.OK() {
			ids[keyOf(r.ID)] = markDone(ids[keyOf(r.ID)], doneOK)
		} else {
			failed++
			if st := ids[keyOf(r.ID)]; st.done != doneOK {
				ids[keyOf(r.ID)] = markDone(st, doneFailed)
			}
		}
		return nil
	})
	var torn *engine.TornLineError
	switch {
	case errors.As(err, &torn):
		if err := f.Truncate(offset); err != nil {
			return fail(fmt.Errorf("%s: repairing torn last line: %w", b.Output, err))
		}
		sum.Repaired = torn.Line
	case err != nil:
		msg := strings.TrimPrefix(err.Error(), "engine: results ")
		return fail(fmt.Errorf("%s: %s (not a results file of loadgen batch? move it away or name another --output)", b.Output, msg))
	}
	if b.RetryFailed && failed > 0 {
		if err := b.dropFailed(f); err != nil {
			return fail(err)
		}
		for k, st := range ids {
			if st.done == doneFailed {
				st.done = notDone
				ids[k] = st
			}
		}
		sum.Retried = failed
		f.Close()
		if f, err = openLocked(b.Output, os.O_RDWR); err != nil {
			return nil, err
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return fail(fmt.Errorf("output: %w", err))
	}
	for _, st := range ids {
		if st.line == 0 {
			continue
		}
		switch st.done {
		case doneOK:
			sum.DoneOK++
		case doneFailed:
			sum.DoneFailed++
		}
	}
	return f, nil
}

// openLocked opens path and locks it; closing the file releases the lock.
func openLocked(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("output %s: %w", path, err)
	}
	return f, nil
}

func markDone(st idState, done uint8) idState {
	st.done = done
	return st
}

// dropFailed rewrites the output without its error lines: to a temporary
// file beside it, synced, then renamed over it, so that a kill at any moment
// leaves one whole file or the other.
func (b *Batch) dropFailed(f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(b.Output), filepath.Base(b.Output)+".*.tmp")
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	bw := bufio.NewWriterSize(tmp, 256<<10)
	keep := engine.NewJSONL(bw)
	if _, err := engine.ReadJSONL(f, func(r engine.Result) error {
		if !r.OK() {
			return nil
		}
		return keep.Put(r)
	}); err != nil && !errors.Is(err, engine.ErrTornLine) {
		tmp.Close()
		return fmt.Errorf("%s: %w", b.Output, err)
	}
	err = bw.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), b.Output)
	}
	if err != nil {
		return fmt.Errorf("output: rewriting without failed results: %w", err)
	}
	if d, err := os.Open(filepath.Dir(b.Output)); err == nil {
		_ = d.Sync() // make the rename durable where the platform allows
		d.Close()
	}
	return nil
}
