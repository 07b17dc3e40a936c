package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/logformat"
)

// TestLogFormat: --log-format and MOCKLLM_LOG_FORMAT pick the format of
// stderr's records, and each format parses back; here the record is the
// one every graceful shutdown writes.
func TestLogFormat(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		env  string
		want logformat.Format
	}{
		{"default", nil, "", logformat.Text},
		{"flag json", []string{"--log-format", "json"}, "", logformat.JSON},
		{"flag text", []string{"--log-format=text"}, "json", logformat.Text}, // the flag wins
		{"env json", nil, "json", logformat.JSON},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("MOCKLLM_LOG_FORMAT", tt.env)
			var stderr syncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				err := run(ctx, append([]string{"--addr", "127.0.0.1:0", "--shutdown-timeout", "7s"}, tt.args...), pw, &stderr)
				pw.Close()
				done <- err
			}()
			line := make([]byte, 64)
			if n, err := pr.Read(line); err != nil || !strings.HasPrefix(string(line[:n]), "listening on ") {
				t.Fatalf("first line %q, %v; want listening on ...", line[:n], err)
			}
			go io.Copy(io.Discard, pr)
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("run: %v", err)
			}
			recs, err := tt.want.Parse([]byte(stderr.String()))
			if err != nil {
				t.Fatalf("stderr is not %s records: %v\n%s", tt.want, err, stderr.String())
			}
			if len(recs) != 1 || recs[0]["msg"] != "shutting down" || recs[0]["level"] != "INFO" || recs[0]["timeout"] != "7s" {
				t.Errorf("records = %v, want one INFO \"shutting down\" with timeout=7s\n%s", recs, stderr.String())
			}
		})
	}
	t.Setenv("MOCKLLM_LOG_FORMAT", "yaml")
	err := run(context.Background(), nil, io.Discard, io.Discard)
	if want := `environment variable MOCKLLM_LOG_FORMAT: invalid value "yaml" for --log-format: want text or json, got "yaml"`; err == nil || err.Error() != want {
		t.Errorf("MOCKLLM_LOG_FORMAT=yaml: run = %v, want %s", err, want)
	}
}
