package loadgen

import (
	"slices"
	"sync"
	"time"

	"github.com/ratelab/ratelab/internal/reports"
)

// The lateness probe's settings.
const (
	// probePeriod is how long the probe asks to sleep each time: short
	// enough that a stall of the process longer than it is seen almost
	// whole, long enough to cost nothing (100 wakes a second).
	probePeriod = 10 * time.Millisecond
	// latenessFloor is the lateness of one wake that is the runtime's own
	// timer resolution rather than the machine's load: on a quiet machine
	// this repository's rows measured p50 0.23 ms and p90 0.9 ms.
	latenessFloor = time.Millisecond
	// maxProbeSamples bounds the probe's memory on a long row: past it,
	// only the sum and the maximum are kept exactly.
	maxProbeSamples = 100_000
	// maxProbePeriod caps the probe's backing off (see run).
	maxProbePeriod = time.Minute
)

// latenessProbe measures how late this process's timers fire while a row
// runs. A wall time in real time is a chain of waits — a retry-after, a
// response's latency, the next request's turn — each of which ends late
// when the machine keeps the process from running; the probe's lost time
// (lateness beyond latenessFloor, summed) is about how long it was kept
// waiting, and so about how much later than the scenario's own behaviour
// explains the row's wall can be.
//
// In a testing/synctest bubble the probe's timers, like every other, fire
// exactly on time: it measures zero, and a wall expectation is checked as
// written. A real timer is always late by some nanoseconds; one that fires
// exactly on time is a simulated clock's, where waking 100 times a second
// of simulated time would only slow the simulation (a 712 s row: 71,200
// wakes), so after each exact wake the probe sleeps twice as long, up to
// maxProbePeriod, and after a late one probePeriod again.
type latenessProbe struct {
	stop  chan struct{}
	done  chan struct{}
	start time.Time

	// Written by run, read by finish after done.
	samples   []time.Duration
	lost, max time.Duration
	wakes     int
	once      sync.Once
	elapsed   time.Duration
}

// startLatenessProbe starts a probe; finish stops it.
func startLatenessProbe() *latenessProbe {
	p := &latenessProbe{stop: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	go p.run()
	return p
}

func (p *latenessProbe) run() {
	defer close(p.done)
	period := probePeriod
	t := time.NewTimer(period)
	defer t.Stop()
	due := p.start.Add(period)
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		woke := time.Now()
		late := max(0, woke.Sub(due))
		p.wakes++
		p.lost += max(0, late-latenessFloor)
		p.max = max(p.max, late)
		if len(p.samples) < maxProbeSamples {
			p.samples = append(p.samples, late)
		}
		if woke.Equal(due) {
			period = min(2*period, maxProbePeriod)
		} else {
			period = probePeriod
		}
		due = woke.Add(period)
		t.Reset(period)
	}
}

// finish stops the probe and returns what it measured while a row of wall
// time wallSeconds ran, or nil when that wall was not measured in real
// time: a row simulated faster than real time has a wall longer than the
// real time the probe saw pass (its start and end enclose the row's), and
// the machine's lateness says nothing about it.
func (p *latenessProbe) finish(wallSeconds float64) *reports.TimerLateness {
	p.once.Do(func() {
		close(p.stop)
		<-p.done
		p.elapsed = time.Since(p.start)
	})
	if wallSeconds > p.elapsed.Seconds()+1e-3 {
		return nil
	}
	s := slices.Clone(p.samples)
	slices.Sort(s)
	q := func(f float64) float64 {
		if len(s) == 0 {
			return 0
		}
		return s[int(f*float64(len(s)-1)+0.5)].Seconds()
	}
	return &reports.TimerLateness{
		PeriodSeconds: probePeriod.Seconds(),
		Wakes:         p.wakes,
		P50:           q(0.50),
		P99:           q(0.99),
		Max:           p.max.Seconds(),
		FloorSeconds:  latenessFloor.Seconds(),
		LostSeconds:   p.lost.Seconds(),
	}
}
