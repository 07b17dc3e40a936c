package calibrate

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/record"
)

// The fit from where 429s begin, for recordings whose responses carry no
// rate-limit headers (the Gemini API, Vertex AI, Bedrock: docs/calibrate.md,
// "Providers that publish no rate-limit headers"). Without headers a 429
// says which limit refused it only through its body: Google's QuotaFailure
// quotaId (error_code) names a requests, tokens or per-day quota, Bedrock's
// message says "Too many requests" or "Too many tokens". A concurrency cap
// and a per-minute request limit are told apart by the shape of the
// refusals as the probe ramps up: a cap refuses every call above it in
// flight and admits every call at or below it, a per-minute limit refuses
// by the count of recent requests, whatever is in flight.

// class429 says what a 429 was about, from its body: "quota" (a per-day
// quota: spent, which no wait within the minute lifts), "overload"
// (Bedrock's ModelNotReadyException, the overload it answers with 429),
// "tokens" (a token quota or "Too many tokens"), else "requests" (a
// request quota, "Too many requests", Vertex AI's "Resource exhausted" of
// no quota, or a body that names none).
func class429(a *record.Attempt) string {
	code, msg := strings.ToLower(a.ErrorCode), strings.ToLower(a.ErrorMessage)
	switch {
	case a.ErrorType == "ModelNotReadyException":
		return "overload"
	case strings.Contains(code, "perday"), strings.Contains(code, "per_day"), strings.HasPrefix(msg, "too many tokens per day"):
		return "quota"
	case strings.Contains(code, "token"), strings.HasPrefix(msg, "too many tokens"):
		return "tokens"
	}
	return "requests"
}

// codes lists the distinct error codes (or types, where a 429 has no code)
// of os, for the evidence.
func codes(os []obs) string {
	var c []string
	for _, o := range os {
		v := o.a.ErrorCode
		if v == "" {
			v = o.a.ErrorType
		}
		if v != "" && !slices.Contains(c, v) {
			c = append(c, v)
		}
	}
	if len(c) == 0 {
		return "no error code"
	}
	sort.Strings(c)
	return strings.Join(c, ", ")
}

// mostInAMinute is the most attempts not refused with 429 sent in any 60 s
// of one file: the requests a minute the recording shows a key may make.
func mostInAMinute(all []obs) int {
	byFile := map[string][]time.Time{}
	for _, o := range all {
		if o.a.Status != 429 {
			byFile[o.file] = append(byFile[o.file], o.a.SentAt)
		}
	}
	most := 0
	for _, ts := range byFile {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		j := 0
		for i := range ts {
			for ts[i].Sub(ts[j]) >= time.Minute {
				j++
			}
			most = max(most, i-j+1)
		}
	}
	return most
}

// onset fits limits.max_concurrent, or limits.rpm and burst, from the
// 429s of a request limit, and says which values came from their onset
// and which could not be determined.
func (f *Fit) onset(all []obs) {
	var req, tok, quota, over []obs
	maxOK := 0
	for _, o := range all {
		if o.a.Status == 200 {
			maxOK = max(maxOK, o.a.InFlight)
		}
		if o.a.Status != 429 {
			continue
		}
		switch class429(o.a) {
		case "quota":
			quota = append(quota, o)
		case "overload":
			over = append(over, o)
		case "tokens":
			tok = append(tok, o)
		default:
			req = append(req, o)
		}
	}
	perMinute := mostInAMinute(all)
	if len(quota) > 0 {
		f.say("429s of a spent quota: %d (%s, first at %s) name a per-day quota: no wait within the minute lifts it; left out of the fit (the mock's quota: is not fitted)", len(quota), codes(quota), first(quota).at())
	}
	if len(over) > 0 {
		f.say("429s of an overload: %d (%s, first at %s): counted as faults.overloaded, not as a limit", len(over), codes(over), first(over).at())
	}
	if len(tok) > 0 {
		f.say("not determined: tpm, itpm, otpm: %d 429s name a token limit (%s, first at %s), but with no headers the tokens a minute it allows are not fitted from their onset: the profile has none", len(tok), codes(tok), first(tok).at())
	} else {
		f.say("not determined: tpm, itpm, otpm: no rate-limit headers, and no 429 names a token limit: the profile has none")
	}
	if len(req) == 0 {
		f.say("not determined: max_concurrent: no 429 seen: the concurrency cap is at least %d (the most in flight at once)", maxOK)
		f.say("not determined: rpm: no rate-limit headers, and no 429 of a request limit: rpm is at least %d (the most requests admitted in a minute)", perMinute)
		return
	}
	// The cap's test: every 429 with more in flight than every success.
	upper, at := math.MaxInt, ""
	for _, o := range req {
		if o.a.InFlight-1 < upper {
			upper, at = o.a.InFlight-1, o.at()
		}
	}
	above, maxAbove := 0, 0
	for _, o := range all {
		if o.a.Status == 200 && o.a.InFlight > upper {
			above++
			maxAbove = max(maxAbove, o.a.InFlight)
		}
	}
	if above == 0 {
		f.MaxConcurrent = upper
		if maxOK == upper {
			f.say("limits.max_concurrent: %d   from the onset of 429s: exact: successes with up to %d in flight, and every one of %d 429s of a request limit (%s) with %d or more, the first at %s: a cap, where 429s begin as in-flight grows",
				upper, upper, len(req), codes(req), upper+1, at)
		} else {
			f.say("limits.max_concurrent: %d   from the onset of 429s: uncertain: between %d (the most in flight at a success) and %d (%s: a 429 with %d in flight); a probe that holds its calls open ramps in-flight one at a time",
				upper, maxOK, upper, at, upper+1)
		}
		f.say("not determined: rpm: no rate-limit headers, and the 429s are the concurrency cap's: rpm is at least %d (the most requests admitted in a minute)", perMinute)
		return
	}
	f.say("not determined: max_concurrent: the %d 429s of a request limit are not a cap's: %d successes had as many in flight or more (up to %d) as the 429 with the fewest (%d, %s): the cap is at least %d (the most in flight at once)",
		len(req), above, maxAbove, upper+1, at, maxOK)
	f.rpmOnset(all, req)
}

// first is the earliest sent of os.
func first(os []obs) obs {
	return slices.MinFunc(os, func(a, b obs) int { return a.a.SentAt.Compare(b.a.SentAt) })
}

// rpmOnset fits limits.rpm from the rate at which requests are admitted
// between a file's first and last 429 of a request limit (the bucket is
// empty then: each admission is a refill), and limits.burst from the
// requests admitted before the first, less the refill in that time.
func (f *Fit) rpmOnset(all []obs, req []obs) {
	type window struct {
		file        string
		t0, on, end time.Time
		before      int
		admitted    []time.Time
		sendGap     time.Duration
		firstAt     string
	}
	var best *window
	files := map[string]bool{}
	for _, r := range req {
		files[r.file] = true
	}
	for file := range files {
		var mine []obs
		for _, o := range all {
			if o.file == file {
				mine = append(mine, o)
			}
		}
		slices.SortStableFunc(mine, func(a, b obs) int { return a.a.SentAt.Compare(b.a.SentAt) })
		w := &window{file: file, t0: mine[0].a.SentAt}
		isReq := func(o obs) bool { return o.a.Status == 429 && class429(o.a) == "requests" }
		for _, o := range mine {
			if isReq(o) {
				if w.on.IsZero() {
					w.on, w.firstAt = o.a.SentAt, o.at()
				}
				w.end = o.a.SentAt
			}
		}
		var gaps []time.Duration
		for i, o := range mine {
			if i > 0 {
				gaps = append(gaps, o.a.SentAt.Sub(mine[i-1].a.SentAt))
			}
			switch {
			case o.a.Status == 429:
				// not admitted
			case o.a.SentAt.Before(w.on):
				w.before++
			case !o.a.SentAt.After(w.end):
				w.admitted = append(w.admitted, o.a.SentAt)
			}
		}
		if len(gaps) > 0 {
			slices.Sort(gaps)
			w.sendGap = gaps[len(gaps)/2]
		}
		if best == nil || len(w.admitted) > len(best.admitted) || len(w.admitted) == len(best.admitted) && w.file < best.file {
			best = w
		}
	}
	w := best
	lead := w.on.Sub(w.t0).Seconds()
	if len(w.admitted) < 2 {
		f.say("not determined: rpm: the 429s of a request limit begin at %s, %.2f s in, after %d requests admitted, but fewer than two requests were admitted between the first and the last 429 (%d): the refill rate is unknown; rpm is at least %d (the most requests admitted in a minute); record longer past the first 429",
			w.firstAt, lead, w.before, len(w.admitted), mostInAMinute(all))
		return
	}
	span := w.admitted[len(w.admitted)-1].Sub(w.admitted[0]).Seconds()
	n := float64(len(w.admitted) - 1)
	rate := n / span // requests a second
	f.RPM = int(math.Round(60 * rate))
	// Each admission waits for a refill and then for the next request
	// sent: its time is known to the sending gap.
	g := w.sendGap.Seconds()
	lo, hi := 60*n/(span+g), 60*n/math.Max(span-g, g)
	f.say("limits.rpm: %d (%.0f–%.0f)   from the onset of 429s: %d requests admitted between the first 429 of a request limit (%s, %.2f s in) and the last (%.2f s in), one every %.0f ms: the refill of a per-minute limit; the range is the sending gap's (%.0f ms)",
		f.RPM, lo, hi, len(w.admitted), w.firstAt, lead, w.end.Sub(w.t0).Seconds(), 1000/rate, 1000*g)
	capacity := float64(w.before) - rate*lead
	switch {
	case capacity >= 0.9*60*rate:
		f.say("limits.burst: one minute (the default)   from the onset of 429s: %d requests admitted in the %.2f s before the first 429, less %.1f of refill: a bucket of %.0f, about a minute's (assuming it was full when the recording began)",
			w.before, lead, rate*lead, capacity)
	case capacity >= 1:
		f.Burst = time.Duration(capacity / rate * float64(time.Second)).Round(time.Millisecond)
		f.say("limits.burst: %s   from the onset of 429s: %d requests admitted in the %.2f s before the first 429, less %.1f of refill: a bucket of %.0f requests (assuming it was full when the recording began)",
			f.Burst, w.before, lead, rate*lead, capacity)
	default:
		f.Burst = time.Duration(float64(time.Second) / rate).Round(time.Millisecond)
		f.say("limits.burst: %s   from the onset of 429s: uncertain: %d requests admitted in the %.2f s before the first 429, no more than its refill: the bucket was not full when the recording began, or holds one request",
			f.Burst, w.before, lead)
	}
}
