package loadgen

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/mock"
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

// sample is a strategy's progress at one instant.
type sample struct {
	done      int64 // items finished, with a result or an error
	inFlight  int   // calls under way
	throttled int64 // 429s so far
}

// progress reports one strategy's progress: done/total, in flight, 429s,
// elapsed and an estimate of the time left, from what its sample function
// says at each tick.
type progress struct {
	cfg    Progress
	label  string
	total  int
	start  time.Time
	sample func() sample
	quit   chan struct{}
	wg     sync.WaitGroup

	// Counters of a client-side run, fed by the engine's OnAttempt and
	// OnResult hooks.
	done, throttle atomic.Int64
}

// startProgress reports the progress of a strategy the engine runs, from
// the attempts and results it is given (attempt, result) and the
// strategy's own count of calls in flight. cfg must not be nil; stop ends
// it.
func startProgress(cfg *Progress, label string, total int, s strategies.Strategy) *progress {
	p := &progress{cfg: *cfg, label: label, total: total}
	p.sample = func() sample { return sample{p.done.Load(), s.Stats().InFlight, p.throttle.Load()} }
	p.run()
	return p
}

// startServerProgress reports the progress of a command row from the
// embedded mock's account of its calls: the program is not ours to watch.
func startServerProgress(cfg *Progress, label string, total int, srv *mock.Server) *progress {
	p := &progress{cfg: *cfg, label: label, total: total}
	p.sample = func() sample {
		c := srv.Stats().Calls
		return sample{min(c.Completed, int64(total)), c.InFlight, c.Throttled}
	}
	p.run()
	return p
}

func (p *progress) run() {
	p.start = time.Now()
	p.quit = make(chan struct{})
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
}

func (p *progress) attempt(a engine.Attempt) {
	if a.Outcome.Kind == strategies.Throttled {
		p.throttle.Add(1)
	}
}

func (p *progress) result(engine.Result) { p.done.Add(1) }

func (p *progress) draw(now time.Time) {
	line := p.line(now.Sub(p.start), p.sample())
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
func (p *progress) line(elapsed time.Duration, s sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d/%d done, %d in flight, %d 429s, %s elapsed",
		p.label, s.done, p.total, s.inFlight, s.throttled, elapsed.Round(time.Second))
	if s.done > 0 && s.done < int64(p.total) {
		left := time.Duration(float64(elapsed) * float64(int64(p.total)-s.done) / float64(s.done))
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
