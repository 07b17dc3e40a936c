// Package logformat is the --log-format flag of ratelab's commands: log
// records as logfmt-style text (slog's TextHandler, the default) or as one
// JSON object a line (slog's JSONHandler), for log collectors.
package logformat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/go-logfmt/logfmt"
)

// Format is a log format: Text or JSON. Its zero value is Text. A *Format
// is a flag.Value: pass it to flag.Var.
type Format string

// The formats.
const (
	Text Format = "text"
	JSON Format = "json"
)

// Usage is the usage text of the --log-format flag.
const Usage = "log `format` on stderr: text (key=value; the default) or json (one object a line)"

// String returns the format's name.
func (f *Format) String() string {
	if f == nil || *f == "" {
		return string(Text)
	}
	return string(*f)
}

// Set sets the format from its name, text or json.
func (f *Format) Set(s string) error {
	switch Format(s) {
	case Text, JSON:
		*f = Format(s)
		return nil
	}
	return fmt.Errorf("want text or json, got %q", s)
}

// Handler returns a slog.Handler writing f's records to w. Both formats
// write a duration as Go writes it ("1.5s"): slog's JSON handler alone would
// write nanoseconds, so the same record would read differently in each.
func (f Format) Handler(w io.Writer) slog.Handler {
	opts := &slog.HandlerOptions{ReplaceAttr: durationString}
	if f == JSON {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// Logger returns a slog.Logger writing f's records to w.
func (f Format) Logger(w io.Writer) *slog.Logger { return slog.New(f.Handler(w)) }

// Parse reads back the records that f's handler wrote to data, one map of
// key to value per record (a JSON value keeps its JSON type; a text value
// is a string). It is an error if a line is not a record of format f, so
// tests use it to check that output is parseable.
func (f Format) Parse(data []byte) ([]map[string]any, error) {
	var records []map[string]any
	if f == JSON {
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			var r map[string]any
			if err := dec.Decode(&r); err == io.EOF {
				return records, nil
			} else if err != nil {
				return records, fmt.Errorf("record %d: %w", len(records)+1, err)
			}
			records = append(records, r)
		}
	}
	dec := logfmt.NewDecoder(bytes.NewReader(data))
	for dec.ScanRecord() {
		r := map[string]any{}
		for dec.ScanKeyval() {
			r[string(dec.Key())] = string(dec.Value())
		}
		if dec.Err() != nil {
			break
		}
		records = append(records, r)
	}
	if err := dec.Err(); err != nil {
		return records, fmt.Errorf("record %d: %w", len(records)+1, err)
	}
	return records, nil
}
