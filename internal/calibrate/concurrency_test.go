package calibrate_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/record"
)

// capped is an Anthropic recording whose responses carry rate-limit
// headers with room (so every 429 is a concurrency 429): each entry is an
// attempt's status and in-flight, one every 100 ms.
func capped(t *testing.T, name string, as [][2]int) *record.File {
	t.Helper()
	var b strings.Builder
	b.WriteString(header)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, x := range as {
		a := record.Attempt{SentAt: t0.Add(time.Duration(i) * 100 * time.Millisecond), Provider: "anthropic", Path: "/v1/messages",
			Status: x[0], InFlight: x[1], HeadersMS: 1, LatencyMS: 2, Headers: map[string]string{
				"anthropic-ratelimit-requests-limit":     "4000",
				"anthropic-ratelimit-requests-remaining": "3900",
				"anthropic-ratelimit-requests-reset":     "2026-01-01T00:01:00Z",
			}}
		if x[0] == 200 {
			a.Usage = &record.Usage{InputTokens: 10, OutputTokens: 20}
		} else {
			a.ErrorType = "rate_limit_error"
		}
		j, _ := json.Marshal(a)
		b.Write(append(j, '\n'))
	}
	return parse(t, name, b.String())
}

// TestConcurrencyAboveA429: a success with more in flight than a
// concurrency 429 means that 429 was not the cap's (the cap admits every
// call up to it): it is left out, and said so, and the cap comes from the
// 429s above every success. When every concurrency 429 is below a
// success, the cap is not determined.
func TestConcurrencyAboveA429(t *testing.T) {
	as := [][2]int{{200, 1}, {200, 2}, {200, 3}, {429, 4}, {200, 4}, {200, 5}, {200, 6}, {429, 7}, {429, 7}, {429, 8}, {200, 6}}
	fit, rep := report(t, capped(t, "early.jsonl", as))
	if fit.Headerless || fit.MaxConcurrent != 6 {
		t.Errorf("cap %d (headerless %v), want 6: the 429 with 4 in flight is below a success with 6", fit.MaxConcurrent, fit.Headerless)
	}
	has(t, rep, "limits.max_concurrent: 6   evidence: exact: a success with 6 in flight, and the first concurrency 429 (early.jsonl:9) with 7 in flight; 3 concurrency 429s in all; "+
		"1 concurrency 429s with no more in flight than a success had (the fewest 4, early.jsonl:5) were not the cap's, left out")

	// No success at the line below the first 429 that counts: a range.
	fit, rep = report(t, capped(t, "range.jsonl", [][2]int{{200, 1}, {429, 2}, {200, 3}, {429, 6}}))
	if fit.MaxConcurrent != 5 {
		t.Errorf("cap %d, want 5 (the upper end)", fit.MaxConcurrent)
	}
	has(t, rep, "limits.max_concurrent: 5   uncertain: between 3 (the most in flight at a success) and 5 (range.jsonl:5: a 429 with 6 in flight)")

	fit, rep = report(t, capped(t, "below.jsonl", [][2]int{{200, 1}, {429, 2}, {429, 3}, {200, 5}}))
	if fit.MaxConcurrent != 0 {
		t.Errorf("cap %d, want none: every 429 had fewer in flight than a success", fit.MaxConcurrent)
	}
	has(t, rep, "not determined: max_concurrent: none of 2 concurrency 429s had more in flight than a success (up to 5): none was the cap's (the fewest 2, below.jsonl:3); the concurrency cap is at least 5")
}
