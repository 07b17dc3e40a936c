package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/internal/durhist"
	"github.com/ratelab/ratelab/measure"
	"github.com/ratelab/ratelab/strategies"
)

// MaxTimelinePoints bounds a timeline, whatever the run's length and the
// resolution asked for: when a run reaches it, neighbouring points are
// merged in pairs and the resolution doubles, so a timeline holds between
// half of it and all of it, at the finest resolution (a power-of-two
// multiple of the one asked for) that the run's length allows.
const MaxTimelinePoints = 2000

// MinResolution is the finest timeline resolution sampled: a ticker finer
// than this would spend the run's CPU taking samples.
const MinResolution = time.Millisecond

// Recorder is the Sink that does a run's accounting: counters, histograms
// and the timeline. Run makes one per run; it is exported so that its
// methods document what is counted. It is safe for concurrent use.
type Recorder struct {
	strategy  strategies.Strategy
	requested time.Duration // the resolution asked for

	resolution time.Duration // the resolution in use; under mu

	inFlight atomic.Int64 // attempts under way

	mu          sync.Mutex
	startT      time.Time
	sum         measure.Summary
	tickDone    int64 // completions since the last timeline point
	tickThrottl int64 // 429s since the last timeline point
	tickPeak    int64 // most attempts under way since the last timeline point
	lastSample  time.Time
	points      []measure.Point

	endToEnd, attempt, waitSlot, waitTokens, backoff, waitRetryAfter, ttft histogram
}

// NewRecorder returns a Recorder sampling s's Stats on a timeline at
// resolution (none when resolution <= 0), at least MinResolution, and
// coarser as the run grows long, to keep at most MaxTimelinePoints.
func NewRecorder(s strategies.Strategy, resolution time.Duration) *Recorder {
	r := &Recorder{strategy: s, requested: resolution, resolution: resolution}
	if resolution > 0 {
		r.resolution = max(resolution, MinResolution)
	}
	return r
}

func (r *Recorder) start(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.startT, r.lastSample = t, t
}

// attemptStarted counts an attempt under way. The interval's peak is kept
// under mu, so a point sees every start before it, and the next interval
// every start after it: a burst shorter than the resolution still shows.
func (r *Recorder) attemptStarted() {
	n := r.inFlight.Add(1)
	r.mu.Lock()
	r.tickPeak = max(r.tickPeak, n)
	r.mu.Unlock()
}

// Attempt counts one attempt that has ended: by kind, by attempt number,
// its latency, the tokens it used and, when it did not succeed, the tokens
// it had reserved.
func (r *Recorder) Attempt(a Attempt) {
	o := a.Outcome
	r.inFlight.Add(-1)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.sum
	s.Attempts++
	switch o.Kind {
	case strategies.Success:
	case strategies.Throttled:
		s.Throttled++
		r.tickThrottl++
		for len(s.ThrottledByAttempt) <= a.N {
			s.ThrottledByAttempt = append(s.ThrottledByAttempt, 0)
		}
		s.ThrottledByAttempt[a.N]++
	case strategies.Overloaded:
		s.Overloaded++
	case strategies.Quota:
		s.Quota++
	case strategies.Failed:
		if o.Status >= 500 {
			s.ServerErrors++
		} else {
			s.Errors++
		}
	}
	if o.Kind != strategies.Success {
		s.FailedTokens += int64(a.Cost.Tokens())
	}
	s.InputTokens += int64(o.Usage.InputTokens)
	s.OutputTokens += int64(o.Usage.OutputTokens)
	r.attempt.record(o.Latency)
}

// Put counts one finished item. It never fails.
func (r *Recorder) Put(res Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.sum
	if res.Err == nil {
		s.Completed++
		r.tickDone++
	} else {
		s.Failed++
	}
	s.MaxAttempts = max(s.MaxAttempts, res.Attempts)
	t := res.Timings
	r.endToEnd.record(t.End.Sub(t.Start))
	r.waitSlot.record(t.WaitSlot)
	r.waitTokens.record(t.WaitTokens)
	r.backoff.record(t.Backoff + t.WaitRetryAfter)
	r.waitRetryAfter.record(t.WaitRetryAfter)
	if t.TTFT > 0 {
		r.ttft.record(t.TTFT)
	}
	return nil
}

func (r *Recorder) invalidResponse() {
	r.mu.Lock()
	r.sum.Invalid++
	r.mu.Unlock()
}

func (r *Recorder) canceledItem() {
	r.mu.Lock()
	r.sum.Canceled++
	r.mu.Unlock()
}

// point appends a timeline point at now.
func (r *Recorder) point(now time.Time) {
	st := r.strategy.Stats()
	r.mu.Lock()
	defer r.mu.Unlock()
	inFlight := max(r.inFlight.Load(), 0)
	p := measure.Point{
		T:            now.Sub(r.startT).Seconds(),
		InFlight:     int(inFlight),
		MaxInFlight:  int(max(r.tickPeak, inFlight)),
		Limit:        st.Limit,
		DelaySeconds: st.Delay,
		Tokens:       st.Tokens,
		Queued:       st.Queued,
	}
	if dt := now.Sub(r.lastSample).Seconds(); dt > 0 {
		p.CompletionsRate = float64(r.tickDone) / dt
		p.ThrottlesRate = float64(r.tickThrottl) / dt
	}
	r.tickDone, r.tickThrottl, r.tickPeak, r.lastSample = 0, 0, inFlight, now
	r.points = append(r.points, p)
	if len(r.points) >= MaxTimelinePoints {
		r.coarsen()
	}
}

// coarsen halves the timeline: the first point (the run's start) stays, the
// others are merged in pairs into the later one, with rates averaged over
// the two intervals, so that every completion and 429 is still counted; and
// the resolution doubles. Called with mu held.
func (r *Recorder) coarsen() {
	pts := r.points
	out := pts[:1]
	prev := pts[0].T
	for i := 1; i < len(pts); i += 2 {
		if i+1 == len(pts) {
			out = append(out, pts[i])
			break
		}
		a, b := pts[i], pts[i+1]
		da, db := a.T-prev, b.T-a.T
		if dt := da + db; dt > 0 {
			b.CompletionsRate = (a.CompletionsRate*da + b.CompletionsRate*db) / dt
			b.ThrottlesRate = (a.ThrottlesRate*da + b.ThrottlesRate*db) / dt
		}
		b.MaxInFlight = max(a.MaxInFlight, b.MaxInFlight)
		out = append(out, b)
		prev = b.T
	}
	clear(pts[len(out):])
	r.points = out
	r.resolution *= 2
}

// sampler takes the timeline's points, one per resolution, in a goroutine
// of the run until stopped.
type sampler struct {
	r    *Recorder
	c    clock.Clock
	quit *clock.Event
	done *clock.Event
}

// sample starts the timeline on c: a point at start, then one per
// resolution, as a ticker would: a tick missed is dropped, and after the
// resolution coarsens the next tick is a new resolution away.
func (r *Recorder) sample(c clock.Clock, start time.Time) *sampler {
	s := &sampler{r: r, c: c}
	if r.resolution <= 0 {
		return s
	}
	r.point(start)
	s.quit, s.done = c.NewEvent(), c.NewEvent()
	// A helper: a run whose workers are stuck is a deadlock under a
	// simulated clock, not a timeline ticking on forever.
	clock.GoHelper(c, func() {
		defer s.done.Fire()
		res := r.resolution
		next := start.Add(res)
		for {
			d := next.Sub(c.Now())
			if d <= 0 {
				if s.quit.Fired() {
					return
				}
			} else if quit, _ := c.Wait(context.Background(), s.quit, d); quit {
				return
			}
			now := c.Now()
			r.point(now)
			r.mu.Lock()
			coarser := r.resolution
			r.mu.Unlock()
			if next = next.Add(res); !next.After(now) {
				next = now.Add(res)
			}
			if coarser != res {
				res = coarser
				next = now.Add(res)
			}
		}
	})
	return s
}

// stop ends sampling with a last point at end. When the ticker took one at
// that very instant, before the run's last events were counted, those events
// are folded into it instead.
func (s *sampler) stop(end time.Time) {
	if s.quit == nil {
		return
	}
	s.quit.Fire()
	s.c.Wait(context.Background(), s.done, 0) //nolint:errcheck // Background never ends
	r := s.r
	r.mu.Lock()
	last := r.lastSample
	r.mu.Unlock()
	if end.After(last) {
		r.point(end)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.points)
	if n < 2 {
		return
	}
	p := &r.points[n-1]
	if dt := p.T - r.points[n-2].T; dt > 0 {
		p.CompletionsRate += float64(r.tickDone) / dt
		p.ThrottlesRate += float64(r.tickThrottl) / dt
	}
	p.InFlight = int(max(r.inFlight.Load(), 0))
	p.MaxInFlight = max(p.MaxInFlight, int(r.tickPeak))
	r.tickDone, r.tickThrottl = 0, 0
}

// summary derives the Summary at the run's end.
func (r *Recorder) summary(end time.Time) measure.Summary {
	st := r.strategy.Stats()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sum
	s.ThrottledByAttempt = append([]int64{}, s.ThrottledByAttempt...)
	s.WallSeconds = end.Sub(r.startT).Seconds()
	if s.Completed > 0 {
		s.AttemptsPerCall = float64(s.Attempts) / float64(s.Completed)
	}
	s.EndToEnd = r.endToEnd.percentiles()
	s.Attempt = r.attempt.percentiles()
	s.WaitSlot = r.waitSlot.percentiles()
	s.WaitTokens = r.waitTokens.percentiles()
	s.Backoff = r.backoff.percentiles()
	s.WaitRetryAfter = r.waitRetryAfter.percentiles()
	if r.ttft.Count() > 0 {
		p := r.ttft.percentiles()
		s.TTFT = &p
	}
	s.Stats = st
	s.FinalLimit = st.Limit
	if r.resolution > 0 {
		s.Timeline = &measure.Timeline{ResolutionSeconds: r.resolution.Seconds(), Points: append([]measure.Point(nil), r.points...)}
		if r.resolution != r.requested {
			s.Timeline.RequestedResolutionSeconds = r.requested.Seconds()
		}
	}
	return s
}

// histogram is a durhist.Histogram (1 µs to a day, 3 significant digits;
// zeros only counted) read as measure.Percentiles.
type histogram struct{ durhist.Histogram }

func (h *histogram) record(d time.Duration) { h.Record(d) }

func (h *histogram) percentiles() measure.Percentiles { return measure.Percentiles(h.Summary()) }
