// Package calibrate fits a mock configuration (the `server:` schema of
// docs/mockllm.md) to recordings of real traffic (package internal/record),
// saying for each value the evidence it rests on and what the recordings
// could not determine. See docs/calibrate.md.
package calibrate

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// Fit is what calibration found.
type Fit struct {
	Provider string
	Attempts int

	MaxConcurrent int // 0: no cap found
	RPM, TPM      int // TPM: OpenAI's tokens, or Anthropic's combined
	ITPM, OTPM    int
	Burst         time.Duration // 0: a minute's refill
	RetryAfter    time.Duration // a fixed retry-after; 0: computed
	RetryAfterMS  bool

	TTFT, PerToken time.Duration
	Jitter         float64

	Output OutputFit

	Error500, Overloaded, CutStream float64

	// Headerless is set when no response carried a rate-limit header
	// (Google's and Bedrock's formats): the limits are then fitted from
	// where 429s begin (onset).
	Headerless bool

	// Lines are what Report prints: each value, its evidence and its
	// uncertainty, then what could not be determined.
	Lines []string
}

// OutputFit is the output-length distribution: Kind "max_tokens", "fixed",
// "uniform" or "lognormal".
type OutputFit struct {
	Kind        string
	Min, Max    int
	Mean, Sigma float64
}

type obs struct {
	a    *record.Attempt
	file string
	line int
	lim  strategies.Limits
}

func (o obs) at() string { return fmt.Sprintf("%s:%d", o.file, o.line) }

// Run fits files. Bad recordings (none, empty, mixed providers, no usable
// response) are errors naming the file and line.
func Run(files []*record.File) (*Fit, error) { return RunPublished(files, nil) }

// Model is the model most of files' attempts name ("" when none does), and
// how many distinct models they name: the model whose published limits
// apply.
func Model(files []*record.File) (string, int) {
	n := map[string]int{}
	for _, f := range files {
		for _, a := range f.Attempts {
			if a.Model != "" {
				n[a.Model]++
			}
		}
	}
	best := ""
	for m, c := range n {
		if c > n[best] || c == n[best] && m < best {
			best = m
		}
	}
	return best, len(n)
}

// RunPublished is Run with the limits a provider's admin endpoint
// publishes (ReadPublished; nil: none): a published limit beats the one
// the headers imply, and each line says which a limit came from.
func RunPublished(files []*record.File, pub *Published) (*Fit, error) {
	if len(files) == 0 {
		return nil, errors.New("calibrate: no recording given")
	}
	var all []obs
	first := map[string]string{} // provider → where it first appears
	for _, f := range files {
		if len(f.Attempts) == 0 {
			return nil, fmt.Errorf("%s: no attempts recorded (the header only): nothing to calibrate", f.Path)
		}
		for i := range f.Attempts {
			a := &f.Attempts[i]
			o := obs{a: a, file: f.Path, line: f.Lines[i]}
			if a.Provider == "" {
				return nil, fmt.Errorf("%s: path %q is none of the supported APIs: %s", o.at(), a.Path, record.Supported())
			}
			if !slices.Contains(record.Formats(), a.Provider) {
				return nil, fmt.Errorf("%s: provider %q is none the recorder writes: %s", o.at(), a.Provider, record.Supported())
			}
			if _, ok := first[a.Provider]; !ok {
				first[a.Provider] = o.at()
			}
			all = append(all, o)
		}
	}
	if len(first) > 1 {
		var s []string
		for p, at := range first {
			s = append(s, fmt.Sprintf("%s at %s", p, at))
		}
		sort.Strings(s)
		return nil, fmt.Errorf("calibrate: mixed providers (%s): a profile is one API's; calibrate each provider's recording on its own", strings.Join(s, ", "))
	}
	fit := &Fit{Attempts: len(all)}
	for p := range first {
		fit.Provider = p
	}
	limitsOf, err := headerParser(fit.Provider)
	if err != nil {
		return nil, err
	}
	for i := range all {
		a := all[i].a
		h := http.Header{}
		for k, v := range a.Headers {
			h.Set(k, v)
		}
		all[i].lim = limitsOf(h, a.SentAt.Add(time.Duration(a.HeadersMS*1e6)))
	}
	fit.say("recorded: %d attempts of %s from %d file(s)", len(all), fit.Provider, len(files))
	fit.limits(all, pub)
	if fit.Headerless {
		fit.onset(all)
	} else {
		fit.concurrency(all)
	}
	fit.retryAfter(all)
	fit.latency(all)
	fit.output(all)
	fit.faults(all)
	return fit, nil
}

// headerAlias names, for a format the recorder tells apart but provider/
// does not, the provider whose rate-limit headers it sends: Azure's
// Responses API sends Azure's (x-ratelimit-limit/-remaining-requests and
// -tokens), which azure-openai reads.
var headerAlias = map[string]string{"azure-openai-responses": "azure-openai"}

// headerParser is the rate-limit header parser of a provider the recorder
// writes (record.Formats): its client's in provider/ (the formats that send
// none, Google's and Bedrock's, parse none).
func headerParser(name string) (func(http.Header, time.Time) strategies.Limits, error) {
	client := name
	if a, ok := headerAlias[name]; ok {
		client = a
	}
	p, err := provider.ByName(client)
	if err != nil {
		return nil, fmt.Errorf("calibrate: provider %s: no client in provider/ reads its rate-limit headers (%v)", name, err)
	}
	return p.(wire.Format).Spec().Limits, nil
}

func (f *Fit) say(format string, args ...any) {
	f.Lines = append(f.Lines, fmt.Sprintf(format, args...))
}

// limits reads the per-minute limits from the rate-limit headers, and
// takes those pub publishes over them.
func (f *Fit) limits(all []obs, pub *Published) {
	var p Published
	if pub != nil {
		p = *pub
	}
	dims := []struct {
		name      string
		get       func(strategies.Limits) strategies.Limit
		dst       *int
		published int
	}{
		{"rpm (requests)", func(l strategies.Limits) strategies.Limit { return l.Requests }, &f.RPM, p.RPM},
		{"itpm (input tokens)", func(l strategies.Limits) strategies.Limit { return l.InputTokens }, &f.ITPM, p.ITPM},
		{"otpm (output tokens)", func(l strategies.Limits) strategies.Limit { return l.OutputTokens }, &f.OTPM, 0},
		{"tpm (tokens)", func(l strategies.Limits) strategies.Limit { return l.Tokens }, &f.TPM, p.TPM},
	}
	any := false
	var fromPub, fromRec []string
	for i, d := range dims {
		key := strings.Fields(d.name)[0]
		counts := map[int64]int{}
		var maxRemaining int64 = -1
		n := 0
		for _, o := range all {
			l := d.get(o.lim)
			if !l.Known() {
				continue
			}
			n++
			counts[l.Limit]++
			maxRemaining = max(maxRemaining, l.Remaining)
		}
		if d.published > 0 {
			*d.dst = d.published
			any = true
			fromPub = append(fromPub, key)
			agree := "no header of it in the recording"
			var mode int64
			if n > 0 {
				for v, c := range counts {
					if c > counts[mode] || c == counts[mode] && v > mode {
						mode = v
					}
				}
				agree = fmt.Sprintf("the limit header of %d responses agrees", n)
				if mode != int64(d.published) {
					agree = fmt.Sprintf("the limit header of %d responses said %d mostly: the published value wins", n, mode)
				}
			}
			f.say("limits.%s: %d   source: published (%s, model %s); %s", key, d.published, p.Source, p.Model, agree)
			if i == 0 && n > 0 {
				// The bucket's burst is a share of the limit the headers
				// describe, which the published limit keeps.
				f.burst(maxRemaining, mode)
			}
			continue
		}
		if n == 0 {
			continue
		}
		any = true
		var mode int64
		for v, c := range counts {
			if c > counts[mode] || c == counts[mode] && v > mode {
				mode = v
			}
		}
		if f.Provider == "anthropic" && d.dst == &f.TPM && (f.ITPM > 0 || f.OTPM > 0) {
			continue // the combined tokens header of separate input and output limits
		}
		*d.dst = int(mode)
		note := "exact: every response agrees"
		if len(counts) > 1 {
			note = fmt.Sprintf("the most common of %d values: the limit changed during the recording (a schedule is not fitted)", len(counts))
		}
		fromRec = append(fromRec, key)
		f.say("limits.%s: %d   evidence: the limit header of %d responses; %s", key, mode, n, note)
		if i == 0 {
			f.burst(maxRemaining, mode)
		}
	}
	if !any {
		// onset fits what it can from where 429s begin, and says what it
		// cannot.
		f.Headerless = true
		f.say("no rate-limit headers: none of the %d responses of %s carries one (the Gemini API, Vertex AI and Bedrock send none): the limits below come from where 429s begin, or are not determined", len(all), f.Provider)
	}
	if pub != nil {
		rec := "none"
		if len(fromRec) > 0 {
			rec = strings.Join(fromRec, ", ")
		}
		pubs := "none of those calibrate uses"
		if len(fromPub) > 0 {
			pubs = strings.Join(fromPub, ", ")
		}
		f.say("sources: published (%s): %s; the recording's headers: %s; every other value: the recording", p.Source, pubs, rec)
		if len(p.Unused) > 0 {
			f.say("published but not used: %s (no mock limit of that documented meaning)", strings.Join(p.Unused, ", "))
		}
	}
}

// burst fits limits.burst from the most requests-remaining seen of a
// bucket of rpm: the bucket holds Burst's worth of refill, and the first
// request into a full bucket sees remaining = capacity - 1.
func (f *Fit) burst(maxRemaining, rpm int64) {
	capacity := maxRemaining + 1
	if capacity < rpm {
		f.Burst = time.Duration(float64(capacity) / float64(rpm) * float64(time.Minute)).Round(time.Millisecond)
		f.say("limits.burst: %s   evidence: requests-remaining is never above %d of %d: the bucket holds %d requests (± 1)", f.Burst, maxRemaining, rpm, capacity)
	} else {
		f.say("limits.burst: one minute (the default)   evidence: requests-remaining reached %d of %d", maxRemaining, rpm)
	}
}

// kind429 says which limit a 429 was about: the dimension its headers
// report exhausted, else "concurrency".
func kind429(o obs) string {
	switch {
	case o.lim.Requests.Known() && o.lim.Requests.Remaining == 0:
		return "rpm"
	case o.lim.InputTokens.Known() && o.lim.InputTokens.Remaining == 0,
		o.lim.OutputTokens.Known() && o.lim.OutputTokens.Remaining == 0,
		o.lim.Tokens.Known() && o.lim.Tokens.Remaining == 0:
		return "tokens"
	}
	return "concurrency"
}

// concurrency finds the cap from where 429s begin as in-flight grows. A
// cap c admits every call with at most c in flight, so the most in flight
// at a success bounds it from below; a concurrency 429 with no more in
// flight than that was not the cap's (a slot the client thought free and
// the server did not yet, another limit the headers do not show) and is
// left out, said so. The fewest in flight at the 429s left, less one,
// bounds it from above.
func (f *Fit) concurrency(all []obs) {
	maxOK := 0
	for _, o := range all {
		if o.a.Status == 200 {
			maxOK = max(maxOK, o.a.InFlight)
		}
	}
	upper := math.MaxInt
	var at, lowAt string
	n429, nc, low, fewest := 0, 0, 0, math.MaxInt
	for _, o := range all {
		if o.a.Status != 429 {
			continue
		}
		n429++
		if kind429(o) != "concurrency" {
			continue
		}
		if o.a.InFlight <= maxOK {
			low++
			if o.a.InFlight < fewest {
				fewest, lowAt = o.a.InFlight, o.at()
			}
			continue
		}
		nc++
		if o.a.InFlight-1 < upper {
			upper, at = o.a.InFlight-1, o.at()
		}
	}
	left := ""
	if low > 0 {
		left = fmt.Sprintf("; %d concurrency 429s with no more in flight than a success had (the fewest %d, %s) were not the cap's, left out", low, fewest, lowAt)
	}
	switch {
	case n429 == 0:
		f.say("not determined: max_concurrent: no 429 seen: the concurrency cap is at least %d (the most in flight at once)", maxOK)
	case nc == 0 && low == 0:
		f.say("not determined: max_concurrent: every one of %d 429s was a per-minute limit's; the concurrency cap is at least %d (the most in flight at once)", n429, maxOK)
	case nc == 0:
		f.say("not determined: max_concurrent: none of %d concurrency 429s had more in flight than a success (up to %d): none was the cap's (the fewest %d, %s); the concurrency cap is at least %d", low, maxOK, fewest, lowAt, maxOK)
	case maxOK == upper:
		f.MaxConcurrent = upper
		f.say("limits.max_concurrent: %d   evidence: exact: a success with %d in flight, and the first concurrency 429 (%s) with %d in flight; %d concurrency 429s in all%s", upper, maxOK, at, upper+1, nc, left)
	default:
		f.MaxConcurrent = upper
		f.say("limits.max_concurrent: %d   uncertain: between %d (the most in flight at a success) and %d (%s: a 429 with %d in flight); a probe that holds its calls open ramps in-flight one at a time%s", upper, maxOK, upper, at, upper+1, left)
	}
}

// retryAfter fits the retry-after policy from the delays the 429s asked
// for: the retry-after-ms or retry-after header, else the error body's
// (Google's RetryInfo retryDelay: retry_after_from "body"). A 429 of a
// spent per-day quota or of an overload (class429) is not a rate limit's
// and is left out.
func (f *Fit) retryAfter(all []obs) {
	var vals []float64
	ms, n429, body, frac := false, 0, 0, 0
	for _, o := range all {
		if o.a.Status != 429 || (f.Headerless && class429(o.a) != "requests" && class429(o.a) != "tokens") {
			continue
		}
		n429++
		if o.a.RetryAfterMS == nil {
			continue
		}
		v := *o.a.RetryAfterMS
		vals = append(vals, v)
		if _, ok := o.a.Headers["retry-after-ms"]; ok {
			ms = true
		}
		if o.a.RetryAfterFrom == "body" {
			body++
			if math.Mod(v, 1000) != 0 {
				frac++
			}
		}
	}
	// A delay in the body is as exact as the server made it: a fraction of
	// a second is what retry_after_ms gives the mock's.
	ms = ms || frac > 0
	f.RetryAfterMS = ms
	switch {
	case n429 == 0:
		f.say("not determined: retry_after: no 429 carried retry-after (no 429 of a rate limit seen)")
		return
	case len(vals) == 0:
		f.say("not determined: retry_after: none of %d 429s carried a retry delay, in a header or in the error body (%s sends none): the profile's is computed, which such a client never sees", n429, f.Provider)
		return
	}
	src := "the retry-after header"
	if body == len(vals) {
		src = "the error body's retry delay (Google's RetryInfo retryDelay, retry_after_from: body)"
	} else if body > 0 {
		src = fmt.Sprintf("the retry-after header, or the error body's retry delay in %d", body)
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	if len(vals) >= 3 && hi-lo < 1 && !ms {
		f.RetryAfter = time.Duration(lo * 1e6).Round(time.Millisecond)
		f.say("limits.retry_after: %s   evidence: all %d 429s asked for it, in %s", f.RetryAfter, len(vals), src)
	} else {
		f.say("limits.retry_after: computed (0)   evidence: %d 429s asked for %.0f–%.0f ms, in %s: the time until the limit frees", len(vals), lo, hi, src)
	}
	switch {
	case body == 0:
		f.say("limits.retry_after_ms: %v   evidence: retry-after-ms %s", ms, map[bool]string{true: "present", false: "absent"}[ms])
	case frac > 0:
		f.say("limits.retry_after_ms: true   evidence: %d of %d retry delays in the error body have a fraction of a second: exact delays", frac, body)
	case ms:
		f.say("limits.retry_after_ms: true   evidence: retry-after-ms present")
	default:
		f.say("limits.retry_after_ms: false   evidence: every one of %d retry delays in the error body is a whole number of seconds", body)
	}
}

// latency fits TTFT, per-token latency and jitter from the streamed
// successes: the mock sends token i (from 1) at ttft + i×per_token, scaled
// per request by a factor in [1-jitter, 1+jitter].
func (f *Fit) latency(all []obs) {
	var ttft, per []float64
	for _, o := range all {
		a := o.a
		if a.Status != 200 || a.Frames < 2 || a.Usage == nil || a.Usage.OutputTokens < 2 || a.ErrorType != "" {
			continue
		}
		p := (a.LastTokenMS - a.TTFTMS) / float64(a.Usage.OutputTokens-1)
		per = append(per, p)
		ttft = append(ttft, a.TTFTMS-p)
	}
	if len(per) == 0 {
		f.say("not determined: latency: no streamed success with two tokens or more (record with request.stream: true)")
		return
	}
	mt, st := meanStd(ttft)
	mp, sp := meanStd(per)
	f.TTFT = time.Duration(mt * 1e6).Round(10 * time.Microsecond)
	f.PerToken = time.Duration(mp * 1e6).Round(10 * time.Microsecond)
	// The factor k = per/mean is uniform in [1-j, 1+j]: its standard
	// deviation is j/√3.
	cv := sp / mp
	f.Jitter = math.Round(min(math.Sqrt(3)*cv, 0.95)*1000) / 1000
	n := float64(len(per))
	f.say("latency.ttft: %s ± %.2f ms (95 %%)   evidence: %d streamed successes, first delta less one token's time, sd %.2f ms", f.TTFT, 1.96*st/math.Sqrt(n), len(per), st)
	f.say("latency.per_token: %s ± %.3f ms (95 %%)   evidence: (last − first delta) / (tokens − 1) of the same responses, sd %.3f ms", f.PerToken, 1.96*sp/math.Sqrt(n), sp)
	f.say("latency.jitter: %v   evidence: the per-token latency's coefficient of variation %.3f × √3 (a uniform factor)", f.Jitter, cv)
}

func (f *Fit) output(all []obs) {
	var v []float64
	atMax := 0
	for _, o := range all {
		a := o.a
		if a.Status != 200 || a.Usage == nil || a.ErrorType != "" {
			continue
		}
		v = append(v, float64(a.Usage.OutputTokens))
		if a.MaxTokens > 0 && a.Usage.OutputTokens == a.MaxTokens {
			atMax++
		}
	}
	if len(v) == 0 {
		f.say("not determined: output.tokens: no success reported its usage")
		f.Output.Kind = "max_tokens"
		return
	}
	lo, hi := slices.Min(v), slices.Max(v)
	m, s := meanStd(v)
	switch {
	case atMax == len(v):
		f.Output = OutputFit{Kind: "max_tokens"}
		f.say("output.tokens: max_tokens   evidence: all %d successes produced exactly their max_tokens", len(v))
	case lo == hi:
		f.Output = OutputFit{Kind: "fixed", Min: int(lo)}
		f.say("output.tokens: {fixed: %d}   evidence: all %d successes", int(lo), len(v))
	case math.Abs(s-(hi-lo)/math.Sqrt(12)) < 0.15*(hi-lo)/math.Sqrt(12):
		f.Output = OutputFit{Kind: "uniform", Min: int(lo), Max: int(hi)}
		f.say("output.tokens: {uniform: [%d, %d]}   evidence: %d successes, mean %.1f, sd %.1f (a uniform's would be %.1f)", int(lo), int(hi), len(v), m, s, (hi-lo)/math.Sqrt(12))
	default:
		var logs []float64
		for _, x := range v {
			logs = append(logs, math.Log(max(x, 1)))
		}
		_, sl := meanStd(logs)
		f.Output = OutputFit{Kind: "lognormal", Mean: math.Round(m*10) / 10, Sigma: math.Round(sl*1000) / 1000}
		f.say("output.tokens: {lognormal: {mean: %v, sigma: %v}}   evidence: %d successes, %d–%d tokens", f.Output.Mean, f.Output.Sigma, len(v), int(lo), int(hi))
	}
}

func (f *Fit) faults(all []obs) {
	n, e500, over, cut := 0, 0, 0, 0
	for _, o := range all {
		a := o.a
		if a.Status == 429 && class429(a) != "overload" {
			continue
		}
		n++
		switch {
		case a.Status == 429: // Bedrock's ModelNotReadyException
			over++
		case a.Status == 500:
			e500++
		case a.Status == 529 || a.Status == 503:
			over++
		case a.ErrorType == "stream_cut":
			cut++
		}
	}
	rate := func(name string, k int, dst *float64) {
		if n == 0 {
			return
		}
		*dst = math.Round(float64(k)/float64(n)*1e4) / 1e4
		if k == 0 {
			f.say("faults.%s: 0   evidence: none in %d attempts not refused with 429 (the rate is below %.2g at 95 %%)", name, n, 3/float64(n))
			return
		}
		p := float64(k) / float64(n)
		f.say("faults.%s: %v   evidence: %d of %d, ± %.2g (95 %%)", name, *dst, k, n, 1.96*math.Sqrt(p*(1-p)/float64(n)))
	}
	rate("error_500", e500, &f.Error500)
	rate("overloaded", over, &f.Overloaded)
	rate("cut_stream", cut, &f.CutStream)
}

func meanStd(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	if len(v) > 1 {
		sd = math.Sqrt(sd / float64(len(v)-1))
	}
	return mean, sd
}

// YAML returns the fitted profile as a mock configuration file, the
// evidence as comments.
func (f *Fit) YAML() string {
	var b strings.Builder
	b.WriteString("# Fitted by loadgen calibrate (docs/calibrate.md).\n")
	for _, l := range f.Lines {
		b.WriteString("# " + l + "\n")
	}
	d := func(x time.Duration) string {
		if x == 0 {
			return "0s"
		}
		return x.String()
	}
	fmt.Fprintf(&b, "seed: 1\nmodels: any\nlatency:\n  ttft: %s\n  per_token: %s\n  jitter: %v\n", d(f.TTFT), d(f.PerToken), f.Jitter)
	b.WriteString("output:\n  tokens: ")
	switch f.Output.Kind {
	case "fixed":
		fmt.Fprintf(&b, "{fixed: %d}\n", f.Output.Min)
	case "uniform":
		fmt.Fprintf(&b, "{uniform: [%d, %d]}\n", f.Output.Min, f.Output.Max)
	case "lognormal":
		fmt.Fprintf(&b, "{lognormal: {mean: %v, sigma: %v}}\n", f.Output.Mean, f.Output.Sigma)
	default:
		b.WriteString("max_tokens\n")
	}
	fmt.Fprintf(&b, "limits:\n  max_concurrent: %d\n  rpm: %d\n  itpm: %d\n  otpm: %d\n  tpm: %d\n  retry_after: %s\n  retry_after_ms: %v\n",
		f.MaxConcurrent, f.RPM, f.ITPM, f.OTPM, f.TPM, d(f.RetryAfter), f.RetryAfterMS)
	if f.Burst > 0 {
		fmt.Fprintf(&b, "  burst: %s\n", d(f.Burst))
	}
	fmt.Fprintf(&b, "faults:\n  error_500: %v\n  overloaded: %v\n  cut_stream: %v\n", f.Error500, f.Overloaded, f.CutStream)
	return b.String()
}
