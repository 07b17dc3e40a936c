package loadgen

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/ratelab/ratelab/internal/record"
)

// TestRecordVirtual records a simulated run and checks its lines against
// the server's configuration: one line per attempt, the 429s with their
// headers, a stream's exact token timings and usage.
func TestRecordVirtual(t *testing.T) {
	s, err := Parse("rec.yaml", []byte(`
name: rec
items: {count: 30}
request: {max_tokens: 20, stream: true}
server:
  latency: {ttft: 100ms, per_token: 10ms}
  limits: {max_concurrent: 5, rpm: 1000}
strategies:
  - name: sem10
    kind: semaphore
    n: 10
    max_retries: -1
    expect: {completed: 30}
`))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf, record.Header{Source: "test", Simulated: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), s, Options{Virtual: true, Record: w})
	if err != nil {
		t.Fatal(err)
	}
	f, err := record.Parse(&buf, "rec.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	if int64(len(f.Attempts)) != res.Attempts {
		t.Fatalf("%d lines for %d attempts", len(f.Attempts), res.Attempts)
	}
	var ok, throttled int
	for i, a := range f.Attempts {
		if a.Run != "sem10" || a.Provider != "anthropic" || a.Model == "" || !a.Stream || a.MaxTokens != 20 || a.Key == "" {
			t.Fatalf("line %d: request fields %+v", f.Lines[i], a)
		}
		if a.InFlight < 1 || a.InFlight > 10 {
			t.Errorf("line %d: in_flight %d outside the semaphore's 1..10", f.Lines[i], a.InFlight)
		}
		switch a.Status {
		case 200:
			ok++
			// The mock sends token i (from 1) at ttft + i×per_token.
			if a.TTFTMS != 110 || a.Frames != 20 || math.Abs(a.GapMeanMS-10) > 1e-6 || a.GapStdMS > 1e-3 || a.LastTokenMS != 300 {
				t.Errorf("line %d: token timings ttft %v frames %d gap %v±%v last %v; want 110, 20, 10±0, 300", f.Lines[i], a.TTFTMS, a.Frames, a.GapMeanMS, a.GapStdMS, a.LastTokenMS)
			}
			if a.Usage == nil || a.Usage.OutputTokens != 20 || a.Usage.InputTokens == 0 {
				t.Errorf("line %d: usage %+v", f.Lines[i], a.Usage)
			}
			if a.Headers["anthropic-ratelimit-requests-limit"] != "1000" {
				t.Errorf("line %d: headers %v", f.Lines[i], a.Headers)
			}
		case 429:
			throttled++
			if a.ErrorType != "rate_limit_error" || a.RetryAfterMS == nil || a.Headers["retry-after"] == "" {
				t.Errorf("line %d: 429 recorded as %+v", f.Lines[i], a)
			}
		default:
			t.Errorf("line %d: status %d", f.Lines[i], a.Status)
		}
	}
	if ok != 30 || int64(throttled) != res.Throttled || throttled == 0 {
		t.Errorf("%d successes, %d 429s; want 30 and the run's %d (> 0)", ok, throttled, res.Throttled)
	}
}

// TestRecordCutOff: a file cut mid-line reads up to its last whole line,
// with a warning naming the line; bad files get errors naming file and line.
func TestRecordCutOff(t *testing.T) {
	var buf bytes.Buffer
	w, _ := record.NewWriter(&buf, record.Header{Source: "test"})
	for range 3 {
		if err := w.Write(&record.Attempt{SentAt: SimEpoch, Path: "/v1/messages", Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	whole := buf.Bytes()
	f, err := record.Parse(bytes.NewReader(whole[:len(whole)-7]), "cut.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Attempts) != 2 || len(f.Warnings) != 1 || f.Warnings[0] != "cut.jsonl:4: the last line is cut off (the recording was interrupted while writing it); it is left out" {
		t.Fatalf("read %d attempts, warnings %q", len(f.Attempts), f.Warnings)
	}
	for _, c := range []struct{ in, want string }{
		{"", "x.jsonl: empty file: not a recording (write one with loadgen run --record)"},
		{"{\"a\":1}\n", `x.jsonl:1: not a ratelab recording: the first line must be the header {"ratelab_recording": 1, …}`},
		{"{\"ratelab_recording\":9}\n", "x.jsonl:1: recording format version 9; this build reads version 1 and older"},
		{"{\"ratelab_recording\":1}\n{\"sent_at\":\"2026-01-01T00:00:00Z\",\"path\":\"/v1/messages\",\"status\":\"x\"}\n{}\n", "x.jsonl:2: not an attempt line: json: cannot unmarshal string into Go struct field Attempt.status of type int"},
	} {
		_, err := record.Parse(bytes.NewReader([]byte(c.in)), "x.jsonl")
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q) = %v, want %s", c.in, err, c.want)
		}
	}
}
