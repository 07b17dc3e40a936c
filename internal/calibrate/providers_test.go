package calibrate_test

import (
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/calibrate"
	"github.com/ratelab/ratelab/internal/record"
)

// TestEveryRecorderProvider: a recording of every provider the recorder
// writes (record.Formats, so a format added to the recorder's table is
// tested here without a change) calibrates, and its fit names it.
func TestEveryRecorderProvider(t *testing.T) {
	formats := record.Formats()
	if len(formats) < 9 {
		t.Fatalf("record.Formats() = %v: fewer than the nine formats the mock serves", formats)
	}
	for _, p := range formats {
		t.Run(p, func(t *testing.T) {
			l := func(status, inFlight int) string {
				return `{"sent_at":"2026-01-01T00:00:01Z","path":"/p","provider":"` + p + `","in_flight":` + itoa(inFlight) +
					`,"status":` + itoa(status) + `,"headers_ms":1,"latency_ms":2,"usage":{"input_tokens":3,"output_tokens":5}}` + "\n"
			}
			f := parse(t, p+".jsonl", header+l(200, 1)+l(200, 2)+l(429, 3))
			fit, err := calibrate.Run([]*record.File{f})
			if err != nil {
				t.Fatalf("calibrate refuses a recording of %s: %v", p, err)
			}
			if fit.Provider != p || fit.Attempts != 3 || !strings.HasPrefix(fit.Lines[0], "recorded: 3 attempts of "+p+" ") {
				t.Errorf("fit of %s: provider %q, %d attempts, %q", p, fit.Provider, fit.Attempts, fit.Lines[0])
			}
		})
	}
}

// TestUnsupportedMessages: a path of no format and a provider the
// recorder does not write are refused naming the line and listing every
// format with its paths, from the recorder's table.
func TestUnsupportedMessages(t *testing.T) {
	other := parse(t, "other.jsonl", header+line("/v1/embeddings", 200, 1))
	_, err := calibrate.Run([]*record.File{other})
	wantList := record.Supported()
	if err == nil || err.Error() != `other.jsonl:2: path "/v1/embeddings" is none of the supported APIs: `+wantList {
		t.Errorf("other path: %v", err)
	}
	bad := parse(t, "bad.jsonl", header+`{"sent_at":"2026-01-01T00:00:01Z","path":"/v1/messages","provider":"claude","in_flight":1,"status":200,"headers_ms":1,"latency_ms":2}`+"\n")
	_, err = calibrate.Run([]*record.File{bad})
	if err == nil || err.Error() != `bad.jsonl:2: provider "claude" is none the recorder writes: `+wantList {
		t.Errorf("unknown provider: %v", err)
	}
	for _, p := range record.Formats() {
		if !strings.Contains(wantList, p+" (") {
			t.Errorf("the list of formats lacks %s: %s", p, wantList)
		}
	}
	for _, path := range []string{"/v1/messages", "/v1/chat/completions", "/v1/responses", "/openai/deployments/D/chat/completions",
		"/openai/v1/chat/completions", "/openai/responses", "/openai/v1/responses", "/v1beta/models/M:generateContent",
		"…/publishers/google/models/M:generateContent", "…/publishers/anthropic/models/M:rawPredict", "/model/ID/converse"} {
		if !strings.Contains(wantList, path) {
			t.Errorf("the list of formats lacks the path %s: %s", path, wantList)
		}
	}
}
