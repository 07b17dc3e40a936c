package calibrate_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/calibrate"
	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/mock"
)

// probe is the probing run: an open-loop ramp of long streamed calls, 25 a
// second for 8 s, no retries, so that in-flight grows one call at a time
// until the concurrency cap refuses one.
const probe = `
name: probe
items: {count: 200}
arrival: {rate: 25/s, process: constant}
request: {max_tokens: 2000, stream: true%s}
strategies:
  - name: probe
    kind: unbounded
    max_retries: 0
    expect: {}
`

// workload is what the predictions are for.
const workload = `
name: workload
items: {count: 300}
request: {max_tokens: 600, stream: true%s}
strategies:
  - name: semaphore
    kind: semaphore
    n: %d
    max_retries: -1
    expect: {completed: 300}
  - name: unbounded
    kind: unbounded
    max_retries: -1
    expect: {completed: 300}
  - name: adaptive
    kind: adaptive
    max_retries: -1
    expect: {completed: 300}
`

// TestLoop is the proof: a mock whose configuration the fitter never sees
// stands in for the provider; a probe against it is recorded and
// calibrated, and the profile's predictions are compared with runs against
// the hidden server.
func TestLoop(t *testing.T) {
	hidden := []struct {
		name     string
		server   string
		cap      int
		provider string // "": anthropic
		// onset: the provider sends no rate-limit headers (Gemini,
		// Bedrock): the cap or rpm is fitted from where 429s begin, and
		// the other is not determined (the profile has none). rpmOnset
		// says the probe reaches the rpm, which is then fitted; else the
		// report must say it could not be.
		onset, rpmOnset bool
		semaphore       int // the semaphore row's n; 0: cap
	}{
		{"cap8", `
  latency: {ttft: 300ms, per_token: 12ms, jitter: 0.1}
  output: {tokens: {uniform: [200, 400]}}
  limits: {max_concurrent: 8, rpm: 4000}`, 8, "", false, false, 0},
		{"cap23-fixed", `
  latency: {ttft: 150ms, per_token: 20ms, jitter: 0.2}
  output: {tokens: {fixed: 250}}
  limits: {max_concurrent: 23, rpm: 6000, itpm: 2000000, otpm: 900000}`, 23, "", false, false, 0},
		{"cap40-lognormal", `
  latency: {ttft: 500ms, per_token: 8ms, jitter: 0.05}
  output: {tokens: {lognormal: {mean: 300, sigma: 0.3}}}
  limits: {max_concurrent: 40, rpm: 3000, retry_after_ms: true}`, 40, "", false, false, 0},
		{"openai-cap12-tpm", `
  latency: {ttft: 250ms, per_token: 10ms, jitter: 0.1}
  output: {tokens: {uniform: [150, 450]}}
  limits: {max_concurrent: 12, rpm: 5000, tpm: 60000}`, 12, "openai", false, false, 0},
		// The Gemini API: no headers; its concurrency 429s name the
		// requests-per-minute quota, as its rpm 429s do, so the cap is
		// told by where they begin as in-flight grows. The rpm (never
		// reached by the probe, nor by the workload) is not determined.
		{"gemini-cap8", `
  latency: {ttft: 300ms, per_token: 12ms, jitter: 0.1}
  output: {tokens: {uniform: [200, 400]}}
  limits: {max_concurrent: 8, rpm: 4000, retry_after_ms: true}`, 8, "gemini", true, false, 0},
		// Bedrock: no headers and no retry delay; a per-minute limit
		// the probe's 25 calls a second exceed after 5 s: rpm from the
		// rate of admissions after the first 429, no cap.
		{"bedrock-rpm120", `
  latency: {ttft: 200ms, per_token: 10ms, jitter: 0.1}
  output: {tokens: {uniform: [100, 300]}}
  limits: {rpm: 120}`, 0, "bedrock", true, true, 16},
	}
	for _, h := range hidden {
		t.Run(h.name, func(t *testing.T) {
			hiddenCfg := "server:" + h.server + "\n"
			req := ""
			if h.provider != "" {
				req = ", provider: " + h.provider
			}
			s, err := loadgen.Parse("probe.yaml", []byte(fmt.Sprintf(probe, req)+hiddenCfg))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			w, _ := record.NewWriter(&buf, record.Header{Source: "test", Simulated: true})
			rep, err := loadgen.Run(context.Background(), s, loadgen.Options{Virtual: true, Record: w})
			if err != nil {
				t.Fatal(err)
			}
			if wall := rep.Results[0].WallSeconds; wall > 120 {
				t.Fatalf("the probe took %.1f s of the provider's time; at most 120", wall)
			}
			f, err := record.Parse(&buf, "probe.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			fit, err := calibrate.Run([]*record.File{f})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("probe: %.1f s, %d attempts\n%s", rep.Results[0].WallSeconds, len(f.Attempts), strings.Join(fit.Lines, "\n"))
			profile, err := mock.ParseConfig([]byte(fit.YAML()), "profile.yaml")
			if err != nil {
				t.Fatalf("the profile does not load in the mock: %v\n%s", err, fit.YAML())
			}
			truth, err := mock.ParseConfig([]byte(strings.TrimSpace(strings.ReplaceAll(h.server, "\n  ", "\n"))), "hidden.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if profile.Limits.MaxConcurrent != h.cap {
				t.Errorf("max_concurrent %d, want %d", profile.Limits.MaxConcurrent, h.cap)
			}
			within := func(what string, got, want, tol float64) float64 {
				e := math.Abs(got-want) / want
				if e > tol {
					t.Errorf("%s: fitted %v, hidden %v: error %.1f %% > %.0f %%", what, got, want, 100*e, 100*tol)
				}
				return e
			}
			report := strings.Join(fit.Lines, "\n")
			switch {
			case !h.onset:
				within("rpm", float64(profile.Limits.RPM), float64(truth.Limits.RPM), 0.05)
			case h.rpmOnset:
				// The rate of admissions after the first 429 is known to
				// the probe's sending gap (40 ms in 500): within 5 %.
				within("rpm (from the onset of 429s)", float64(profile.Limits.RPM), float64(truth.Limits.RPM), 0.05)
				if !strings.Contains(report, "limits.rpm: ") || !strings.Contains(report, "from the onset of 429s") {
					t.Errorf("the rpm line does not say it came from the onset of 429s:\n%s", report)
				}
			default:
				// A cap's 429s hide the rpm: it is not fitted, and said so.
				if profile.Limits.RPM != 0 || !strings.Contains(report, "not determined: rpm: no rate-limit headers, and the 429s are the concurrency cap's: rpm is at least") {
					t.Errorf("rpm %d fitted behind a cap, or not said to be undetermined:\n%s", profile.Limits.RPM, report)
				}
			}
			if h.onset && h.cap > 0 && !strings.Contains(report, fmt.Sprintf("limits.max_concurrent: %d   from the onset of 429s: exact", h.cap)) {
				t.Errorf("the cap's line does not say it is exact from the onset of 429s:\n%s", report)
			}
			if h.onset && h.cap == 0 && !strings.Contains(report, "not determined: max_concurrent: ") {
				t.Errorf("no cap, and the report does not say it was not determined:\n%s", report)
			}
			if truth.Limits.ITPM > 0 {
				within("itpm", float64(profile.Limits.ITPM), float64(truth.Limits.ITPM), 0.05)
				within("otpm", float64(profile.Limits.OTPM), float64(truth.Limits.OTPM), 0.05)
			}
			if truth.Limits.TPM > 0 {
				within("tpm", float64(profile.Limits.TPM), float64(truth.Limits.TPM), 0.05)
			}
			if h.provider != "" && fit.Provider != h.provider {
				t.Errorf("fitted provider %s, want %s", fit.Provider, h.provider)
			}
			eT := within("ttft", float64(profile.Latency.TTFT), float64(truth.Latency.TTFT), 0.10)
			eP := within("per_token", float64(profile.Latency.PerToken), float64(truth.Latency.PerToken), 0.10)
			msg := fmt.Sprintf("%s: fitted cap %d, rpm %d; ttft error %.1f %%, per-token error %.1f %%", h.name, profile.Limits.MaxConcurrent, profile.Limits.RPM, 100*eT, 100*eP)

			n := h.semaphore
			if n == 0 {
				n = h.cap
			}
			wl := fmt.Sprintf(workload, req, n)
			real, err := loadgen.Parse("workload.yaml", []byte(wl+hiddenCfg))
			if err != nil {
				t.Fatal(err)
			}
			pred, err := loadgen.Parse("workload.yaml", []byte(wl))
			if err != nil {
				t.Fatal(err)
			}
			pred.Server = profile
			rr, err := loadgen.Run(context.Background(), real, loadgen.Options{Virtual: true})
			if err != nil {
				t.Fatal(err)
			}
			pr, err := loadgen.Run(context.Background(), pred, loadgen.Options{Virtual: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rr.Results {
				p := pr.Results[i]
				e := within(r.Name+" wall", p.WallSeconds, r.WallSeconds, 0.10)
				msg += fmt.Sprintf("; %s wall %.2f s predicted %.2f s (%.1f %%), attempts %d/%d", r.Name, r.WallSeconds, p.WallSeconds, 100*e, r.Attempts, p.Attempts)
			}
			t.Log(msg)
		})
	}
}
