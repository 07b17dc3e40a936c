package loadgen

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"10/s", 10, true}, {"600/m", 10, true}, {"600/min", 10, true}, {"36000/h", 10, true},
		{"2.5", 2.5, true}, {" 5 / s ", 5, true}, {"0/s", 0, true},
		{"10/d", 0, false}, {"fast", 0, false}, {"", 0, false}, {"Inf/s", 0, false},
	} {
		got, ok := parseRate(tt.in)
		if ok != tt.ok || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("parseRate(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestScheduleConstant: arrivals exactly 1/rate apart, counted from the
// first at 0.
func TestScheduleConstant(t *testing.T) {
	s := newSchedule(&Arrival{Rate: 3, Process: Constant}, 1)
	for k := range 1000 {
		got := s.next()
		want := time.Duration(float64(k) / 3 * 1e9)
		if d := got - want; d < -time.Nanosecond || d > time.Nanosecond {
			t.Fatalf("arrival %d at %v, want %v", k, got, want)
		}
	}
}

// TestSchedulePoisson holds 100,000 seeded gaps to the exponential
// distribution: mean 1/rate, coefficient of variation 1, and a gap longer
// than the mean a fraction e^-1 of the time (bounds of five standard
// errors or more).
func TestSchedulePoisson(t *testing.T) {
	const n, rate = 100000, 20.0
	s := newSchedule(&Arrival{Rate: rate}, 7)
	prev := s.next()
	if prev != 0 {
		t.Fatalf("first arrival at %v, want 0", prev)
	}
	var sum, sumSq float64
	longer := 0
	for range n {
		at := s.next()
		g := (at - prev).Seconds()
		prev = at
		sum += g
		sumSq += g * g
		if g > 1/rate {
			longer++
		}
	}
	mean := sum / n
	cv := math.Sqrt(sumSq/n-mean*mean) / mean
	if math.Abs(mean*rate-1) > 0.02 {
		t.Errorf("mean gap %v s, want %v within 2 %%", mean, 1/rate)
	}
	if math.Abs(cv-1) > 0.02 {
		t.Errorf("coefficient of variation %v, want 1 within 0.02", cv)
	}
	if f := float64(longer) / n; math.Abs(f-math.Exp(-1)) > 0.008 {
		t.Errorf("gaps above the mean: %v of them, want %v", f, math.Exp(-1))
	}
	a, b := newSchedule(&Arrival{Rate: rate}, 7), newSchedule(&Arrival{Rate: rate}, 7)
	for range 100 {
		if x, y := a.next(), b.next(); x != y {
			t.Fatalf("the same seed gave arrivals %v and %v", x, y)
		}
	}
}

func TestArrivalItemsFromDuration(t *testing.T) {
	src := strings.Replace(sweepScenario("  - {name: s, kind: semaphore, n: 5}\n"), "items: 10\n", "arrival: {rate: 600/m, duration: 2m}\n", 1)
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Items.Count() != 1200 || s.Arrival.Rate != 10 || s.Arrival.Duration != 2*time.Minute {
		t.Errorf("items %d, arrival %+v; want 1200 items at 10/s for 2m", s.Items.Count(), s.Arrival)
	}
}

func TestArrivalErrors(t *testing.T) {
	base := sweepScenario("  - {name: s, kind: semaphore, n: 5}\n")
	tests := []struct {
		name, arrival, want string
	}{
		{"rate 0", "arrival: {rate: 0/s}", "t.yaml:5: arrival.rate: must be positive, got 0/s"},
		{"negative rate", "arrival: {rate: -3}", "t.yaml:5: arrival.rate: must be positive, got -3/s"},
		{"no rate", "arrival: {process: constant}", "t.yaml:5: arrival.rate: required: the mean arrival rate"},
		{"bad rate", "arrival: {rate: 10/day}", `t.yaml:5: arrival.rate: want a rate like 10/s, 600/m or 36000/h, got "10/day"`},
		{"bad process", "arrival: {rate: 1, process: bursty}", `t.yaml:5: arrival.process: want poisson or constant, got "bursty"`},
		{"items and duration", "arrival: {rate: 1, duration: 1m}", "t.yaml:5: arrival.duration: set items or arrival.duration, not both"},
		{"too few for a duration", "arrival: {rate: 0.001, duration: 1s}", "arrival.duration: rate x duration must make from 1 to"},
		{"unknown key", "arrival: {rate: 1, burst: 3}", `t.yaml:5: arrival.burst: unknown key "burst"`},
		{"expect without arrival", "", "strategies[0].expect.goodput: only a scenario with arrival: (items arriving over time) measures goodput"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(base, "strategies:\n", tt.arrival+"\nstrategies:\n", 1)
			if tt.name == "too few for a duration" {
				src = strings.Replace(src, "items: 10\n", "", 1)
			}
			if tt.arrival == "" {
				src = strings.Replace(base, "n: 5}", "n: 5, expect: {goodput: 1}}", 1)
			}
			_, err := Parse("t.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant %q", err, tt.want)
			}
		})
	}
}

// openLoopScenario is 0.5 s calls against a limit of 20.
func openLoopScenario(t *testing.T, items int, arrival, rows string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "open.yaml")
	src := "name: open\nitems: " + strconv.Itoa(items) + "\narrival: " + arrival + `
request: {max_tokens: 100}
server:
  output: {length: max_tokens}
  latency: {per_token: 5ms}
  limits: {max_concurrent: 20, retry_after: 1s}
strategies:
` + rows
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenLoopVirtual runs open-loop arrivals in virtual time, where their
// figures are exact: under capacity nothing queues; over capacity the
// queue grows, and the mean queueing delay is fixed whatever order the
// waiting items are admitted in.
func TestOpenLoopVirtual(t *testing.T) {
	// 10/s of 0.5 s calls keeps 5 in flight: a semaphore of 20 never
	// makes an item wait. The last of 50 arrives at 4.9 s and ends at 5.4 s.
	rep := runVirtual(t, openLoopScenario(t, 50, "{rate: 10/s, process: constant}", "  - {name: sem, kind: semaphore, n: 20}\n"))
	r := rep.Results[0]
	a := r.Arrivals
	if a == nil {
		t.Fatal("no arrivals in the row")
	}
	if r.Completed != 50 || r.Throttled != 0 || math.Round(r.WallSeconds*1000) != 5400 {
		t.Errorf("under capacity: %d completed, %d 429s, wall %v s; want 50, 0, 5.4", r.Completed, r.Throttled, r.WallSeconds)
	}
	if a.QueueingDelay.Max != 0 || a.QueueingDelay.Count != 50 || math.Abs(a.ArrivalSeconds-4.9) > 1e-9 {
		t.Errorf("under capacity: queueing delay %+v, last arrival %v s; want none of 50, 4.9 s", a.QueueingDelay, a.ArrivalSeconds)
	}
	if want := 50 / 5.4; math.Abs(a.GoodputPerSecond-want) > 1e-9 {
		t.Errorf("goodput %v/s, want %v/s", a.GoodputPerSecond, want)
	}
	if math.Abs(r.OracleSeconds-5.4) > 1e-9 {
		t.Errorf("oracle %v s, want the last arrival plus one call, 5.4 s", r.OracleSeconds)
	}

	// 50/s against a semaphore of 5 (10 calls a second): the first five
	// items take the five slots as they arrive, at 0, 0.02, … 0.08 s, and
	// each slot then runs 20 calls back to back, so the run ends at
	// 10.08 s. Which waiting item takes a freed slot does not change when
	// the slots start calls: the mean start is 0.04 + 4.75 s, the mean
	// arrival 0.99 s, so the mean queueing delay is 3.80 s.
	rep = runVirtual(t, openLoopScenario(t, 100, "{rate: 50/s, process: constant}", "  - {name: sem, kind: semaphore, n: 5, expect: {goodput: \"9.9..10\", queueing_delay_max: \">= 7\"}}\n"))
	r = rep.Results[0]
	if r.Completed != 100 || math.Round(r.WallSeconds*1000) != 10080 {
		t.Errorf("over capacity: %d completed, wall %v s; want 100, 10.08 s", r.Completed, r.WallSeconds)
	}
	if got := r.Arrivals.QueueingDelay.Mean; math.Abs(got-3.80) > 1e-6 {
		t.Errorf("over capacity: mean queueing delay %v s, want 3.80 s", got)
	}
	for _, f := range Failures(rep) {
		t.Errorf("%s", f)
	}

	// Poisson arrivals at 20/s: 500 items arrive over about 25 s (the
	// standard deviation is 1.1 s; 15 % is three of them).
	rep = runVirtual(t, openLoopScenario(t, 500, "{rate: 20/s}", "  - {name: sem, kind: semaphore, n: 20}\n"))
	r = rep.Results[0]
	if r.Completed != 500 || r.Arrivals.Process != Poisson || math.Abs(r.Arrivals.ArrivalSeconds-25)/25 > 0.15 {
		t.Errorf("poisson: %d completed, arrivals %+v; want 500 over about 25 s", r.Completed, r.Arrivals)
	}
	if r.Arrivals.QueueingDelay.P50 != 0 {
		t.Errorf("poisson at half capacity: median queueing delay %v s, want 0", r.Arrivals.QueueingDelay.P50)
	}
}

// FuzzParseRate checks that a rate parses to a finite number or is refused.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10/s", "600/m", "1e308/h", "NaN/s", "-1", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := parseRate(s); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("parseRate(%q) = %v", s, v)
		}
	})
}

// TestOpenLoopInterrupted ends the context while items are still to
// arrive: the run stops at once, marked incomplete, with what finished.
func TestOpenLoopInterrupted(t *testing.T) {
	s, err := Load(openLoopScenario(t, 100, "{rate: 1/m, process: constant}", "  - {name: sem, kind: semaphore, n: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(90*time.Second, cancel) // two items arrived, at 0 and 60 s
		rep, err := Run(ctx, s, Options{Listen: ListenMemory})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: err = %v, want context.Canceled", err)
		}
		r := rep.Results[0]
		if !rep.Incomplete || !r.Incomplete || r.Completed != 2 {
			t.Errorf("report incomplete %v, row incomplete %v, completed %d; want true, true, 2", rep.Incomplete, r.Incomplete, r.Completed)
		}
	})
}
