package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/logformat"
)

func TestCutLogFormat(t *testing.T) {
	for _, tt := range []struct {
		args, rest []string
		want       logformat.Format
		err        string
	}{
		{[]string{"run", "a.yaml"}, []string{"run", "a.yaml"}, "", ""},
		{[]string{"--log-format", "json", "run", "a.yaml"}, []string{"run", "a.yaml"}, logformat.JSON, ""},
		{[]string{"run", "a.yaml", "-log-format=text", "--format", "json"}, []string{"run", "a.yaml", "--format", "json"}, logformat.Text, ""},
		{[]string{"exec", "--log-format=json", "--", "tool", "--log-format", "xml"}, []string{"exec", "--", "tool", "--log-format", "xml"}, logformat.JSON, ""},
		{[]string{"run", "a.yaml", "--log-format"}, nil, "", "--log-format: want text or json, got nothing"},
		{[]string{"--log-format=yaml", "run"}, nil, "", `--log-format: want text or json, got "yaml"`},
	} {
		rest, f, err := cutLogFormat(tt.args)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err || report(err, new(bytes.Buffer)) != exitUsage {
				t.Errorf("cutLogFormat(%q) = %v, want the usage error %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || f != tt.want || !reflect.DeepEqual(rest, tt.rest) {
			t.Errorf("cutLogFormat(%q) = %q, %q, %v; want %q, %q", tt.args, rest, f, err, tt.rest, tt.want)
		}
	}
}

// TestLogFormat: the records loadgen writes on stderr (here go-redis's,
// when a batch's shared Redis does not answer) parse in the format asked,
// text by default.
func TestLogFormat(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"id":"a","prompt":"hi"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "redis://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, tt := range []struct {
		flags []string
		want  logformat.Format
	}{
		{nil, logformat.Text},
		{[]string{"--log-format", "json"}, logformat.JSON},
		{[]string{"--log-format=text"}, logformat.Text},
	} {
		// stderr is a file, as a process's is: records go to any writer
		// that is safe for concurrent use.
		var stdout bytes.Buffer
		stderr := tempFile(t)
		args := append([]string{"batch", "--input", in, "--output", filepath.Join(dir, "out.jsonl"), "--target", "mock",
			"--shared-redis", closed, "--shared-key", "k", "--state-file="}, tt.flags...)
		err := run(context.Background(), args, &stdout, stderr)
		if err == nil || !strings.Contains(err.Error(), "redis unreachable") {
			t.Fatalf("%q: run = %v, want redis unreachable", tt.flags, err)
		}
		out := readFile(t, stderr)
		recs, perr := tt.want.Parse(out)
		if perr != nil {
			t.Fatalf("%q: stderr is not %s records: %v\n%s", tt.flags, tt.want, perr, out)
		}
		if len(recs) != 1 || recs[0]["level"] != "WARN" || recs[0]["source"] != "go-redis" ||
			!strings.Contains(recs[0]["msg"].(string), "connection refused") {
			t.Errorf("%q: records = %v, want one WARN from go-redis saying connection refused\n%s", tt.flags, recs, out)
		}
	}
	// Once run has returned, its stderr receives nothing more.
	stderr := tempFile(t)
	run(context.Background(), []string{"--log-format", "json", "--version"}, new(bytes.Buffer), stderr)
	slog.Warn("TestLogFormat: a record after run returned goes to the process's stderr")
	if out := readFile(t, stderr); len(out) > 0 {
		t.Errorf("a record after run returned reached its stderr: %s", out)
	}
}

func tempFile(t *testing.T) *os.File {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readFile(t *testing.T, f *os.File) []byte {
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return data
}
