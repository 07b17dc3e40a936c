package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// File is a recording read back.
type File struct {
	Path     string
	Header   Header
	Attempts []Attempt
	// Lines are the line numbers of Attempts, for messages.
	Lines []int
	// Warnings say what was read around: a cut-off last line.
	Warnings []string
}

// Read reads the recording at path. A last line with no newline that is not
// valid JSON (a crash while writing) is left out with a warning; every other
// bad line is an error naming the file and line.
func Read(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a recording from r; name is its file name in messages.
func Parse(r io.Reader, name string) (*File, error) {
	out := &File{Path: name}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		last := errors.Is(err, io.EOF)
		if last && len(line) == 0 {
			if n == 1 {
				return nil, fmt.Errorf("%s: empty file: not a recording (write one with loadgen run --record)", name)
			}
			return out, nil
		}
		cut := last // no newline at the end: the writer stopped mid-line
		line = bytes.TrimSpace(line)
		if n == 1 {
			if err := json.Unmarshal(line, &out.Header); err != nil || out.Header.Recording == 0 {
				return nil, fmt.Errorf("%s:1: not a ratelab recording: the first line must be the header {\"ratelab_recording\": %d, …}", name, Version)
			}
			if out.Header.Recording > Version {
				return nil, fmt.Errorf("%s:1: recording format version %d; this build reads version %d and older", name, out.Header.Recording, Version)
			}
		} else if len(line) > 0 {
			var a Attempt
			d := json.NewDecoder(bytes.NewReader(line))
			d.DisallowUnknownFields()
			if err := d.Decode(&a); err != nil {
				if cut {
					out.Warnings = append(out.Warnings, fmt.Sprintf("%s:%d: the last line is cut off (the recording was interrupted while writing it); it is left out", name, n))
					return out, nil
				}
				return nil, fmt.Errorf("%s:%d: not an attempt line: %v", name, n, err)
			}
			if a.SentAt.IsZero() {
				return nil, fmt.Errorf("%s:%d: not an attempt line: sent_at is missing", name, n)
			}
			out.Attempts = append(out.Attempts, a)
			out.Lines = append(out.Lines, n)
		}
		if last {
			return out, nil
		}
	}
}
