package logformat

import (
	"bytes"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want Format
		err  string
	}{
		{nil, "", ""},
		{[]string{"--log-format", "json"}, JSON, ""},
		{[]string{"--log-format=text"}, Text, ""},
		{[]string{"--log-format", "xml"}, "", `invalid value "xml" for flag -log-format: want text or json, got "xml"`},
		{[]string{"--log-format", "JSON"}, "", `want text or json, got "JSON"`},
	} {
		var f Format
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		fs.Var(&f, "log-format", Usage)
		err := fs.Parse(tt.args)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", tt.args, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Parse(%q) = %v, want an error containing %q", tt.args, err, tt.err)
		case err == nil && f != tt.want:
			t.Errorf("Parse(%q): format = %q, want %q", tt.args, f, tt.want)
		}
	}
	var zero Format
	if got := zero.String(); got != "text" {
		t.Errorf("zero Format = %q, want text (the default)", got)
	}
}

// TestRoundTrip writes records with awkward values in each format and
// parses them back.
func TestRoundTrip(t *testing.T) {
	for _, f := range []Format{Text, JSON, ""} {
		var buf bytes.Buffer
		log := f.Logger(&buf)
		log.Info("shutting down", "timeout", "30s", "note", `a "quoted" value, with = and spaces`)
		log.Warn("second\nline", "n", 3, "wait", 1500*time.Millisecond)
		recs, err := f.Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("%q: Parse: %v\n%s", f, err, buf.Bytes())
		}
		if len(recs) != 2 {
			t.Fatalf("%q: %d records, want 2:\n%s", f, len(recs), buf.Bytes())
		}
		for i, want := range []map[string]string{
			{"level": "INFO", "msg": "shutting down", "timeout": "30s", "note": `a "quoted" value, with = and spaces`},
			{"level": "WARN", "msg": "second\nline", "n": "3", "wait": "1.5s"},
		} {
			for k, v := range want {
				if got := recs[i][k]; got == nil || fmt.Sprint(got) != v {
					t.Errorf("%q: record %d: %s = %v, want %q", f, i+1, k, got, v)
				}
			}
			if _, ok := recs[i]["time"]; !ok {
				t.Errorf("%q: record %d has no time: %v", f, i+1, recs[i])
			}
		}
	}
}
