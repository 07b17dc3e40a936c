package calibrate_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/calibrate"
	"github.com/ratelab/ratelab/internal/record"
)

// at is one attempt of a synthetic headerless recording.
type at struct {
	t        float64 // seconds after the start
	status   int
	inFlight int
	code     string // error_code
	typ      string // error_type
	msg      string // error_message
	retryMS  float64
	provider string // "": gemini
}

func synth(t *testing.T, name string, as []at) *record.File {
	t.Helper()
	var b strings.Builder
	b.WriteString(header)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, x := range as {
		p := x.provider
		if p == "" {
			p = "gemini"
		}
		a := record.Attempt{SentAt: t0.Add(time.Duration(x.t * float64(time.Second))), Provider: p, Path: "/p",
			Status: x.status, InFlight: x.inFlight, ErrorCode: x.code, ErrorType: x.typ, ErrorMessage: x.msg}
		if x.status == 200 {
			a.Usage = &record.Usage{InputTokens: 10, OutputTokens: 20}
		}
		if x.retryMS > 0 {
			v := x.retryMS
			a.RetryAfterMS, a.RetryAfterFrom = &v, "body"
		}
		j, _ := json.Marshal(a)
		b.Write(append(j, '\n'))
	}
	return parse(t, name, b.String())
}

func report(t *testing.T, f *record.File) (*calibrate.Fit, string) {
	t.Helper()
	fit, err := calibrate.Run([]*record.File{f})
	if err != nil {
		t.Fatal(err)
	}
	return fit, strings.Join(fit.Lines, "\n")
}

func has(t *testing.T, rep string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(rep, w) {
			t.Errorf("report lacks %q:\n%s", w, rep)
		}
	}
}

const rpmCode = "GenerateRequestsPerMinutePerProjectPerModel"

// TestOnsetCap: with no headers, 429s above a line of in-flight that no
// success crosses are a concurrency cap's: exact when a success sits on
// the line, a range when none does; rpm is then bounded, not fitted.
func TestOnsetCap(t *testing.T) {
	var as []at
	for i := 1; i <= 5; i++ {
		as = append(as, at{t: float64(i) * 0.1, status: 200, inFlight: i})
	}
	for i := 0; i < 4; i++ {
		as = append(as, at{t: 0.6 + float64(i)*0.1, status: 429, inFlight: 6, code: rpmCode, retryMS: 1500.5})
	}
	as = append(as, at{t: 2, status: 200, inFlight: 5})
	fit, rep := report(t, synth(t, "cap.jsonl", as))
	if fit.MaxConcurrent != 5 || fit.RPM != 0 || !fit.Headerless {
		t.Errorf("cap %d, rpm %d, headerless %v; want 5, 0, true", fit.MaxConcurrent, fit.RPM, fit.Headerless)
	}
	has(t, rep,
		"limits.max_concurrent: 5   from the onset of 429s: exact: successes with up to 5 in flight, and every one of 4 429s of a request limit ("+rpmCode+") with 6 or more, the first at cap.jsonl:7",
		"not determined: rpm: no rate-limit headers, and the 429s are the concurrency cap's: rpm is at least 6 (the most requests admitted in a minute)",
		"not determined: tpm, itpm, otpm: no rate-limit headers, and no 429 names a token limit",
		"limits.retry_after_ms: true   evidence: 4 of 4 retry delays in the error body have a fraction of a second",
	)
	// No success at the line: a range.
	fit, rep = report(t, synth(t, "range.jsonl", append(as[:3:3], as[5:9]...)))
	if fit.MaxConcurrent != 5 {
		t.Errorf("cap %d, want 5 (the upper end)", fit.MaxConcurrent)
	}
	has(t, rep, "limits.max_concurrent: 5   from the onset of 429s: uncertain: between 3 (the most in flight at a success) and 5")
}

// TestOnsetRPM: 429s whose in-flight successes cross are a per-minute
// limit's: rpm from the rate of admissions between the first and last
// 429, the burst from those before the first less their refill; a retry
// delay of whole seconds in every body is a fixed retry_after.
func TestOnsetRPM(t *testing.T) {
	// 10 requests a second; a bucket of 30 refilled at 2 a second (rpm
	// 120, burst 15 s): admitted until 30 + 2t = 10t, t = 3.75 s, then one
	// every 0.5 s.
	var as []at
	tokens, last := 30.0, 0.0
	for i := 0; i < 80; i++ {
		now := float64(i) * 0.1
		tokens = min(30, tokens+2*(now-last))
		last = now
		if tokens >= 1 {
			tokens--
			as = append(as, at{t: now, status: 200, inFlight: 20})
		} else {
			as = append(as, at{t: now, status: 429, inFlight: 20, code: rpmCode, retryMS: 2000})
		}
	}
	fit, rep := report(t, synth(t, "rpm.jsonl", as))
	if fit.RPM < 114 || fit.RPM > 126 || fit.MaxConcurrent != 0 {
		t.Errorf("rpm %d (want 120 ± 5 %%), cap %d (want none)", fit.RPM, fit.MaxConcurrent)
	}
	if fit.Burst < 13*time.Second || fit.Burst > 17*time.Second {
		t.Errorf("burst %v, want about 15 s", fit.Burst)
	}
	if fit.RetryAfter != 2*time.Second || fit.RetryAfterMS {
		t.Errorf("retry_after %v, retry_after_ms %v; want 2s fixed, false", fit.RetryAfter, fit.RetryAfterMS)
	}
	has(t, rep,
		"not determined: max_concurrent: the 35 429s of a request limit are not a cap's: 45 successes had as many in flight or more (up to 20) as the 429 with the fewest (20, rpm.jsonl:39)",
		"limits.rpm: ", "from the onset of 429s: ", "requests admitted between the first 429 of a request limit (rpm.jsonl:",
		"limits.burst: ", "(assuming it was full when the recording began)",
		"limits.retry_after: 2s   evidence: all ", "in the error body's retry delay (Google's RetryInfo retryDelay, retry_after_from: body)",
		"limits.retry_after_ms: false   evidence: every one of ",
	)
	// Cut after the first 429: no refill rate.
	_, rep = report(t, synth(t, "short.jsonl", as[:40]))
	has(t, rep, "not determined: rpm: the 429s of a request limit begin at short.jsonl:", "fewer than two requests were admitted between the first and the last 429", "record longer past the first 429")
}

// TestOnsetClasses: a per-day quota's 429s, a token limit's and Bedrock's
// overload are told by their bodies and kept out of the request limits;
// Bedrock's 429s carry no retry delay anywhere.
func TestOnsetClasses(t *testing.T) {
	fit, rep := report(t, synth(t, "classes.jsonl", []at{
		{t: 0, status: 200, inFlight: 1, provider: "vertex"},
		{t: 1, status: 429, inFlight: 1, code: "GenerateContentRequestsPerDayPerProjectPerBaseModel", provider: "vertex"},
		{t: 2, status: 429, inFlight: 1, code: "GenerateContentInputTokensPerMinutePerBaseModel", retryMS: 3000, provider: "vertex"},
	}))
	has(t, rep,
		"429s of a spent quota: 1 (GenerateContentRequestsPerDayPerProjectPerBaseModel, first at classes.jsonl:3) name a per-day quota",
		"not determined: tpm, itpm, otpm: 1 429s name a token limit (GenerateContentInputTokensPerMinutePerBaseModel, first at classes.jsonl:4)",
		"not determined: max_concurrent: no 429 seen: the concurrency cap is at least 1",
		"limits.retry_after: computed (0)   evidence: 1 429s asked for 3000–3000 ms",
	)
	if fit.MaxConcurrent != 0 || fit.RPM != 0 {
		t.Errorf("cap %d, rpm %d from no request limit's 429", fit.MaxConcurrent, fit.RPM)
	}
	fit, rep = report(t, synth(t, "bedrock.jsonl", []at{
		{t: 0, status: 200, inFlight: 1, provider: "bedrock"},
		{t: 1, status: 429, inFlight: 1, typ: "ModelNotReadyException", provider: "bedrock"},
		{t: 2, status: 429, inFlight: 2, typ: "ThrottlingException", msg: "Too many requests, please wait before trying again.", provider: "bedrock"},
		{t: 3, status: 200, inFlight: 1, provider: "bedrock"},
	}))
	has(t, rep,
		"429s of an overload: 1 (ModelNotReadyException, first at bedrock.jsonl:3): counted as faults.overloaded",
		"faults.overloaded: 0.3333   evidence: 1 of 3",
		"limits.max_concurrent: 1   from the onset of 429s: exact",
		"not determined: retry_after: none of 1 429s carried a retry delay, in a header or in the error body (bedrock sends none)",
	)
	if fit.Overloaded == 0 {
		t.Errorf("Bedrock's ModelNotReadyException is not counted as an overload")
	}
}
