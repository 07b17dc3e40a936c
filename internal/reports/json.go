package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSON writes r as indented JSON, the model exactly as its struct tags
// define it: the contract of `loadgen run --format json` and report.json.
func JSON(w io.Writer, r Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("reports: json: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("reports: json: %w", err)
	}
	return nil
}

// ErrNotReport is returned by ReadJSON for valid JSON that is not a report.
var ErrNotReport = errors.New("reports: not a report (no \"results\" list)")

// ReadJSON decodes a report that JSON wrote, such as report.json or the
// output of `loadgen run --format json`. Unknown fields are ignored, so a
// newer report still reads.
func ReadJSON(rd io.Reader) (Report, error) {
	var r Report
	dec := json.NewDecoder(rd)
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("reports: read json: %w", err)
	}
	if r.Results == nil {
		return Report{}, ErrNotReport
	}
	return r, nil
}
