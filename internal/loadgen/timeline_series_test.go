package loadgen

import (
	"testing"

	"github.com/ratelab/ratelab/measure"
)

// TestTimelineSeriesEveryStrategy runs every built-in kind in one run that
// exercises each series (a concurrency cap that binds, a published
// output-token budget the calls draw down, more callers than the cap admits)
// and checks that each reports
// the timeline's common series (measure.Point) meaningfully: the limit or
// window, the pacing delay, the tokens available and the callers waiting,
// each moving where the strategy adapts or budgets it, constant at what it
// was told where it is configured, and zero only where the strategy has no
// such thing.
func TestTimelineSeriesEveryStrategy(t *testing.T) {
	const src = `name: series
seed: 1
items: 150
request: {max_tokens: 40}
server:
  output: {length: max_tokens}
  latency: {per_token: 5ms}
  limits: {max_concurrent: 10, otpm: 240000, burst: 1s, retry_after: 1s}
strategies:
  - {name: semaphore, kind: semaphore, n: 10, requeue: true, max_retries: -1, expect: {completed: 150}}
  - {name: aimd, kind: aimd, requeue: true, max_retries: -1, expect: {completed: 150}}
  - {name: aimd-delay, kind: aimd-delay, initial_delay: 100ms, min_delay: 10ms, requeue: true, max_retries: -1, expect: {completed: 150}}
  - {name: token-bucket, kind: token-bucket, rpm: 6000, tpm: 24000, requeue: true, max_retries: -1, expect: {completed: 150}}
  - {name: token-first, kind: token-first, n: 10, tpm: 24000, requeue: true, max_retries: -1, expect: {completed: 150}}
  - {name: adaptive, kind: adaptive, requeue: true, max_retries: -1, expect: {completed: 150}}
  - {name: unbounded, kind: unbounded, requeue: true, max_retries: -1, expect: {completed: 150}}
`
	// What each series must do: moves (takes at least two values, one of
	// them not 0), a constant (the value told), or 0 throughout (the
	// strategy has no such thing: a semaphore budgets no tokens).
	type series struct {
		moves bool
		value float64
	}
	moves := series{moves: true}
	is := func(v float64) series { return series{value: v} }
	want := map[string]struct{ limit, delay, tokens, queued series }{
		"semaphore":    {limit: is(10), delay: is(0), tokens: is(0), queued: moves},
		"aimd":         {limit: moves, delay: is(0), tokens: is(0), queued: moves},
		"aimd-delay":   {limit: is(0), delay: moves, tokens: is(0), queued: moves},
		"token-bucket": {limit: is(0), delay: is(0.01), tokens: moves, queued: moves},
		"token-first":  {limit: is(10), delay: is(0), tokens: moves, queued: moves},
		"adaptive":     {limit: moves, delay: is(0), tokens: moves, queued: moves},
		"unbounded":    {limit: is(0), delay: is(0), tokens: is(0), queued: is(0)},
	}
	s, err := Parse("series.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), s, Options{Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d rows, want %d", len(rep.Results), len(want))
	}
	check := func(row, name string, pts []measure.Point, get func(measure.Point) float64, w series) {
		values := map[float64]bool{}
		nonzero := false
		for _, p := range pts {
			v := get(p)
			values[v] = true
			nonzero = nonzero || v != 0
		}
		switch {
		case w.moves && (len(values) < 2 || !nonzero):
			t.Errorf("%s: %s takes %d value(s) over %d points, want it to move", row, name, len(values), len(pts))
		case !w.moves && (len(values) != 1 || !values[w.value]):
			t.Errorf("%s: %s takes the values %v, want %g throughout", row, name, keys(values), w.value)
		}
	}
	for _, res := range rep.Results {
		w, ok := want[res.Name]
		if !ok {
			t.Fatalf("unexpected row %q", res.Name)
		}
		if res.Completed != res.Items {
			t.Errorf("%s: completed %d of %d", res.Name, res.Completed, res.Items)
		}
		if res.Timeline == nil || len(res.Timeline.Points) < 10 {
			t.Fatalf("%s: timeline %+v, want points", res.Name, res.Timeline)
		}
		pts := res.Timeline.Points
		check(res.Name, "limit", pts, func(p measure.Point) float64 { return p.Limit }, w.limit)
		check(res.Name, "delay_seconds", pts, func(p measure.Point) float64 { return p.DelaySeconds }, w.delay)
		check(res.Name, "tokens_available", pts, func(p measure.Point) float64 { return p.Tokens }, w.tokens)
		check(res.Name, "queued", pts, func(p measure.Point) float64 { return float64(p.Queued) }, w.queued)
	}
}

func keys(m map[float64]bool) []float64 {
	out := make([]float64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
