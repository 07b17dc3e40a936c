package calibrate_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/calibrate"
	"github.com/ratelab/ratelab/internal/record"
)

func parse(t *testing.T, name, text string) *record.File {
	t.Helper()
	f, err := record.Parse(strings.NewReader(text), name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const header = `{"ratelab_recording":1,"source":"test","started":"2026-01-01T00:00:00Z"}` + "\n"

func line(path string, status, inFlight int) string {
	return `{"sent_at":"2026-01-01T00:00:01Z","path":"` + path + `","provider":"` + record.ProviderOf(path) + `","in_flight":` +
		itoa(inFlight) + `,"status":` + itoa(status) + `,"headers_ms":1,"latency_ms":2}` + "\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestBadRecordings: each bad recording gets a message naming the file and
// line, and a recording that lacks evidence says what it could not fit.
func TestBadRecordings(t *testing.T) {
	_, err := calibrate.Run([]*record.File{parse(t, "empty.jsonl", header)})
	if err == nil || err.Error() != "empty.jsonl: no attempts recorded (the header only): nothing to calibrate" {
		t.Errorf("header only: %v", err)
	}
	mixed := parse(t, "mixed.jsonl", header+line("/v1/messages", 200, 1)+line("/v1/chat/completions", 200, 1))
	_, err = calibrate.Run([]*record.File{mixed})
	if err == nil || err.Error() != "calibrate: mixed providers (anthropic at mixed.jsonl:2, openai at mixed.jsonl:3): a profile is one API's; calibrate each provider's recording on its own" {
		t.Errorf("mixed: %v", err)
	}
	other := parse(t, "other.jsonl", header+line("/v1/embeddings", 200, 1))
	if _, err = calibrate.Run([]*record.File{other}); err == nil || !strings.HasPrefix(err.Error(), `other.jsonl:2: path "/v1/embeddings" is none of the supported APIs`) {
		t.Errorf("other path: %v", err)
	}
	quiet := parse(t, "quiet.jsonl", header+line("/v1/messages", 200, 1)+line("/v1/messages", 200, 23)+line("/v1/messages", 200, 7))
	fit, err := calibrate.Run([]*record.File{quiet})
	if err != nil {
		t.Fatal(err)
	}
	report := strings.Join(fit.Lines, "\n")
	for _, want := range []string{
		"not determined: max_concurrent: no 429 seen: the concurrency cap is at least 23 (the most in flight at once)",
		"no rate-limit headers: none of the 3 responses of anthropic carries one (the Gemini API, Vertex AI and Bedrock send none): the limits below come from where 429s begin, or are not determined",
		"not determined: rpm: no rate-limit headers, and no 429 of a request limit: rpm is at least 3 (the most requests admitted in a minute)",
		"not determined: latency: no streamed success with two tokens or more",
		"not determined: retry_after: no 429 carried retry-after",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if fit.MaxConcurrent != 0 {
		t.Errorf("max_concurrent %d with no 429: want 0 (none fitted)", fit.MaxConcurrent)
	}
}
