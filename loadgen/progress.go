package loadgen

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/strategies"
)

// DefaultProgressEvery is how often a plain progress line is written when
// Progress.Every is zero.
const DefaultProgressEvery = 10 * time.Second

// liveEvery is how often the live line is redrawn.
const liveEvery = 200 * time.Millisecond

// Progress says where a run reports its progress while it runs, and how:
// a live line redrawn in place for a terminal, or plain lines at an
// interval for a log that is not one (CI). A nil *Progress reports nothing.
type Progress struct {
	// W receives the progress.
	W io.Writer
	// Live redraws one line in place (with \r and an erase) five times a
	// second, and clears it at the end of each strategy. Otherwise a plain
	// line ending in \n is written every Every, and nothing at the end.
	Live bool
	// Every is the interval of plain lines; zero means DefaultProgressEvery.
	Every time.Duration
}

// position is a strategy's place among the strategies a run runs: the i-th
// (from 1) of n. The zero value means a run of one strategy alone (a batch).
type position struct{ i, n int }

// label names the strategy in a progress line: "strategy 3 of 8,
// semaphore(20)", or the name alone outside a run of several.
func (p position) label(name string) string {
	if p.n == 0 {
		return name
	}
	return fmt.Sprintf("strategy %d of %d, %s", p.i, p.n, name)
}

// progress reports one strategy's progress: done/total, in flight, 429s,
// elapsed and an estimate of the time left. Its counters are fed by the
// engine's OnAttempt and OnResult hooks.
type progress struct {
	cfg      Progress
	label    string
	total    int
	strategy strategies.Strategy
	start    time.Time
	done     atomic.Int64
	throttle atomic.Int64
	quit     chan struct{}
	wg       sync.WaitGroup
}

// startProgress starts reporting a strategy's progress to cfg, which must
// not be nil; stop ends it.
func startProgress(cfg *Progress, label string, total int, s strategies.Strategy) *progress {
	p := &progress{cfg: *cfg, label: label, total: total, strategy: s, start: time.Now(), quit: make(chan struct{})}
	every := liveEvery
	if !p.cfg.Live {
		every = DefaultProgressEvery
		if p.cfg.Every > 0 {
			every = p.cfg.Every
		}
	}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				p.draw(now)
			case <-p.quit:
				return
			}
		}
	})
	return p
}

func (p *progress) attempt(a engine.Attempt) {
	if a.Outcome.Kind == strategies.Throttled {
		p.throttle.Add(1)
	}
}

func (p *progress) result(engine.Result) { p.done.Add(1) }

func (p *progress) draw(now time.Time) {
	line := p.line(now.Sub(p.start), p.done.Load(), p.strategy.Stats().InFlight, p.throttle.Load())
	if p.cfg.Live {
		fmt.Fprint(p.cfg.W, "\r\x1b[K"+line)
	} else {
		fmt.Fprintln(p.cfg.W, line)
	}
}

// line formats the progress after elapsed: "strategy 2 of 3, semaphore(20):
// 120/200 done, 20 in flight, 0 429s, 6s elapsed, ETA 4s". The estimate
// assumes the rest goes at the pace so far; there is none before the first
// item is done.
func (p *progress) line(elapsed time.Duration, done int64, inFlight int, throttled int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d/%d done, %d in flight, %d 429s, %s elapsed",
		p.label, done, p.total, inFlight, throttled, elapsed.Round(time.Second))
	if done > 0 && done < int64(p.total) {
		left := time.Duration(float64(elapsed) * float64(int64(p.total)-done) / float64(done))
		fmt.Fprintf(&b, ", ETA %s", left.Round(time.Second))
	}
	return b.String()
}

// stop ends the progress reports, clearing a live line.
func (p *progress) stop() {
	close(p.quit)
	p.wg.Wait()
	if p.cfg.Live {
		fmt.Fprint(p.cfg.W, "\r\x1b[K")
	}
}
