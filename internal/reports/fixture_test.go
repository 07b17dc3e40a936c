package reports

import (
	"github.com/ratelab/ratelab/measure"
	"math"
)

// sampled builds a timeline of n samples at res seconds, the i-th sample
// taken at (i+1)·res by at.
func sampled(res float64, n int, at func(t float64) measure.Point) *measure.Timeline {
	tl := &measure.Timeline{ResolutionSeconds: res, Points: make([]measure.Point, n)}
	for i := range n {
		t := math.Round(float64(i+1)*res*1000) / 1000
		p := at(t)
		p.T = t
		tl.Points[i] = p
	}
	return tl
}

// guideReport is the bounded-fanout guide's table as ratelab reproduces it,
// with synthetic timelines of the right shape, plus an adaptive strategy
// that has a delay and a brownout row whose provider slows down.
func guideReport() Report {
	lat := func(p50, p99 float64) measure.Percentiles {
		return measure.Percentiles{Count: 200, P50: p50, P90: (p50 + p99) / 2, P99: p99, Max: p99 * 1.02, Mean: p50 * 1.05}
	}
	check := func(metric, expected, actual string, ok bool) Check {
		return Check{Metric: metric, Expected: expected, Actual: actual, OK: ok}
	}
	return Report{
		Scenario:    "20-concurrent",
		Description: "200 calls against a 20-concurrent limit, as in the bounded fan-out guide.",
		Target:      "embedded mock",
		Results: []Result{
			{
				Name: "unbounded, retries=2", Kind: "unbounded", Params: map[string]any{"max_retries": 2},
				Summary: measure.Summary{Items: 200, Completed: 60, Failed: 140,
					Attempts: 540, Throttled: 480, AttemptsPerCall: 9, ThrottledByAttempt: []int64{180, 160, 140},
					MaxAttempts: 3, FailedTokens: 48000, InputTokens: 1200, OutputTokens: 6000,
					WallSeconds: 2.5,
					EndToEnd:    lat(2.0, 2.5), Attempt: lat(0.4, 0.5),
					Backoff:        measure.Percentiles{Count: 340, P50: 1, P90: 1, P99: 1, Max: 1, Mean: 1},
					WaitRetryAfter: measure.Percentiles{Count: 340, P50: 1, P90: 1, P99: 1, Max: 1, Mean: 1},
					Timeline: sampled(0.25, 10, func(t float64) measure.Point {
						wave := math.Mod(t, 1) <= 0.5
						p := measure.Point{Limit: 0}
						if wave {
							p.InFlight = 20
							p.CompletionsRate = 20 / 0.5 * 0.5
						}
						if math.Mod(t, 1) == 0.25 {
							p.ThrottlesRate = 160 / 0.25
						}
						if t == 0.25 {
							p.MaxInFlight = 200 // the burst at the start, refused within the interval
						}
						return p
					})},
				OracleSeconds: 5, WallOverOracle: 0.5,
				ServerView: &ServerView{PeakConcurrency: 200, ThrottledBy: map[string]int64{"max_concurrent": 480},
					// Retries exactly after retry-after: two waves, at 1 s and 2 s.
					Card: &ReportCard{Retries: 340, RetryWaves: 2, SynchronizedRetries: 340, MaxRetryWave: 180,
						RefusedCalls: 180, RefusedCallAttempts: 520, RetryAmplification: 520.0 / 180,
						Capped: true, CapSlotSeconds: 40, IdleSlotSeconds: 19.8, IdleCapacity: 0.495, OverLimit: 480, PeakOverLimit: 180}},
				Expectations: []Check{
					check("completed", "= 60", "60", true),
					check("attempts", "= 540", "540", true),
					check("throttled", "= 480", "480", true),
				},
			},
			{
				Name: "semaphore-50", Kind: "semaphore", Params: map[string]any{"limit": 50, "max_retries": 2},
				Summary: measure.Summary{Items: 200, Completed: 150, Failed: 50, Attempts: 330, Throttled: 180, AttemptsPerCall: 2.2,
					ThrottledByAttempt: []int64{120, 60}, MaxAttempts: 3,
					WallSeconds: 4.5, EndToEnd: lat(1.5, 3.5), Attempt: lat(0.5, 0.5),
					Timeline: sampled(0.25, 18, func(t float64) measure.Point {
						return measure.Point{InFlight: 20, CompletionsRate: 33, ThrottlesRate: 40, Limit: 50}
					})},
				OracleSeconds: 5, WallOverOracle: 0.9,
				ServerView:   &ServerView{PeakConcurrency: 50, ThrottledBy: map[string]int64{"max_concurrent": 180}},
				Expectations: []Check{check("completed", "160..180", "150", false)},
			},
			{
				Name: "semaphore-20", Kind: "semaphore", Params: map[string]any{"limit": 20},
				Summary: measure.Summary{Items: 200, Completed: 200, Attempts: 200, AttemptsPerCall: 1, ThrottledByAttempt: []int64{}, MaxAttempts: 1,
					InputTokens: 4000, OutputTokens: 20000,
					WallSeconds: 5.0, EndToEnd: lat(2.75, 5.0), Attempt: lat(0.5, 0.5),
					WaitSlot: lat(2.25, 4.5),
					Timeline: sampled(0.25, 20, func(t float64) measure.Point {
						// The 180 callers the semaphore holds back, 40 fewer a second.
						return measure.Point{InFlight: 20, CompletionsRate: 40, Limit: 20, Queued: max(0, 180-int(40*t))}
					})},
				OracleSeconds: 5, WallOverOracle: 1,
				ServerView: &ServerView{PeakConcurrency: 20,
					Card: &ReportCard{Capped: true, CapSlotSeconds: 90, IdleSlotSeconds: 0}},
				Expectations: []Check{check("completed", "= 200", "200", true), check("throttled", "= 0", "0", true)},
			},
			{
				Name: "adaptive", Kind: "adaptive", Params: map[string]any{"initial": 4},
				Summary: measure.Summary{Items: 200, Completed: 200, Attempts: 212, Throttled: 12, AttemptsPerCall: 1.06,
					ThrottledByAttempt: []int64{12}, MaxAttempts: 2, FinalLimit: 19,
					WallSeconds: 6.25, EndToEnd: lat(3.1, 6.0), Attempt: lat(0.5, 0.52),
					TTFT: &measure.Percentiles{Count: 212, P50: 0.0052, P90: 0.006, P99: 0.0081, Max: 0.009, Mean: 0.0055},
					Timeline: sampled(0.25, 25, func(t float64) measure.Point {
						limit := math.Min(4+4*t, 22)
						if t > 3 {
							limit = 19
						}
						p := measure.Point{InFlight: int(limit), CompletionsRate: 2 * limit, Limit: limit, Tokens: 1000 * t}
						if t == 3 {
							p.ThrottlesRate = 48
							p.DelaySeconds = 0.2
						}
						if t > 3 && t < 4 {
							p.DelaySeconds = 0.05
						}
						return p
					})},
				OracleSeconds: 5,
				Expectations:  []Check{check("attempts/call", "<= 1.10", "1.06", true)},
				ServerView:    &ServerView{PeakConcurrency: 22, ThrottledBy: map[string]int64{"max_concurrent": 12}},
			},
			{
				Name: "brownout", Kind: "semaphore", Params: map[string]any{"limit": 20},
				Summary: measure.Summary{Items: 200, Completed: 200, Attempts: 205, Overloaded: 4, ServerErrors: 1, Errors: 2, AttemptsPerCall: 1.025, MaxAttempts: 2,
					WallSeconds: 1234.5678, EndToEnd: lat(0.0009, 12.5), Attempt: lat(0.5, 9.9),
					Timeline: sampled(0.5, 16, func(t float64) measure.Point {
						return measure.Point{InFlight: 20, CompletionsRate: 40 / (1 + t/2), Limit: 20}
					})}, OracleSeconds: 5,
				ServerView: &ServerView{PeakConcurrency: 20},
			},
			{
				// A user's program measured by the mock alone: no client
				// latencies, and retries sooner than retry-after.
				Name: "python unbounded", Kind: "command", Params: map[string]any{"command": "python3 unbounded.py --retries 2"},
				Summary: measure.Summary{Items: 200, Completed: 60, Failed: 140, Attempts: 540, Throttled: 480, AttemptsPerCall: 9,
					ThrottledByAttempt: []int64{180, 160, 140}, MaxAttempts: 3, WallSeconds: 2.52, Attempt: lat(0.4, 0.5),
					Timeline: sampled(0.25, 10, func(t float64) measure.Point {
						return measure.Point{InFlight: 20, CompletionsRate: 24}
					})},
				OracleSeconds: 5, WallOverOracle: 0.504,
				ServerView: &ServerView{EarlyRetries: 12, PeakConcurrency: 200, ThrottledBy: map[string]int64{"max_concurrent": 480},
					// No concurrency cap: idle capacity and over the cap "-".
					Card: &ReportCard{Retries: 340, RetriesAfterQuota: 3, RetriesAfterClientError: 1, RetryWaves: 0, MaxRetryWave: 1,
						RefusedCalls: 180, RefusedCallAttempts: 520, RetryAmplification: 520.0 / 180}},
				Command: &Command{Argv: []string{"python3", "unbounded.py", "--retries", "2"}, Dir: "examples/clients",
					Status: "exited 1", ExitCode: 1, Seconds: 2.7134,
					Stdout: "out/python_unbounded.stdout", Stderr: "out/python_unbounded.stderr",
					StderrTail: []string{"RateLimitError: 429 Too Many Requests"}},
				Expectations: []Check{check("exit_code", "= 1", "1", true), check("early_retries", "<= 20", "12", true)},
			},
		},
	}
}

// edgeReport exercises what the renderers must survive: hostile names, a
// nil timeline, an empty one, a single sample, nothing completed, an
// interrupted run.
func edgeReport() Report {
	return Report{
		Scenario:   `<script>alert("x")</script> & "quotes", commas | pipes`,
		Target:     "http://127.0.0.1:9/v1?a=1&b=2",
		Incomplete: true,
		Results: []Result{
			{Name: "no timeline <b>", Kind: "semaphore"},
			{Name: "empty timeline", Kind: "semaphore", Summary: measure.Summary{Timeline: &measure.Timeline{ResolutionSeconds: 0.1}}},
			{
				Name: "one sample | a, \"b\"", Kind: "aimd", Summary: measure.Summary{Items: 3, Completed: 1, Failed: 0, Canceled: 2, Attempts: 1, Invalid: 1, AttemptsPerCall: 1,
					Incomplete: true, WallSeconds: 0.1, EndToEnd: measure.Percentiles{Count: 1, P50: 0.1, P99: 0.1, Max: 0.1, Mean: 0.1},
					Timeline: &measure.Timeline{ResolutionSeconds: 0.1, Points: []measure.Point{{T: 0.1, InFlight: 2, CompletionsRate: 10, Limit: 4, DelaySeconds: 0.5}}}},
				Expectations: []Check{{Metric: "completed", Expected: "= 3", Actual: "1 <i>", OK: false}},
			},
			{
				// A hanging program, stopped at its timeout, with markup
				// and backticks in its argv.
				Name: "hangs `x` <b>", Kind: "command", Summary: measure.Summary{Items: 3, Failed: 3, Attempts: 2, Errors: 2, WallSeconds: 0.2},
				ServerView: &ServerView{PeakConcurrency: 2},
				Command: &Command{Argv: []string{"sh", "-c", "sleep 9 `x` | <b>"}, Status: "timed out after 5m0s (process group stopped)",
					ExitCode: -1, TimedOut: true, Seconds: 300},
				Expectations: []Check{{Metric: "exit_code", Expected: "= 0", Actual: "-1", OK: false}},
			},
		},
	}
}

// openReport is an open-loop run (a scenario with arrival:): 200 items
// arriving as a Poisson process at 20/s against a limit of 20, served by a
// semaphore of 5 (which cannot keep up: items queue) and one of 20.
func openReport() Report {
	arrivals := func(goodput float64, q measure.Percentiles) *Arrivals {
		return &Arrivals{Process: "poisson", RatePerSecond: 20, ArrivalSeconds: 11.102040643, GoodputPerSecond: goodput, QueueingDelay: q}
	}
	return Report{
		Scenario: "open",
		Target:   "embedded mock",
		Results: []Result{
			{Name: "semaphore(5)", Kind: "semaphore", Params: map[string]any{"n": 5},
				Summary: measure.Summary{Items: 200, Completed: 200, Attempts: 200, AttemptsPerCall: 1, WallSeconds: 20.594,
					EndToEnd: measure.Percentiles{Count: 200, P50: 4.85, P90: 8.6, P99: 9.49, Max: 9.51, Mean: 4.87}},
				OracleSeconds: 11.602, WallOverOracle: 1.775,
				Arrivals:     arrivals(9.711387240830785, measure.Percentiles{Count: 200, P50: 4.348628939, P90: 8.114539587, P99: 8.989397598, Max: 9.011997803, Mean: 4.365937660195001}),
				Expectations: []Check{{Metric: "min_goodput", Expected: ">= 9", Actual: "9.711387", OK: true}}},
			{Name: "semaphore(20)", Kind: "semaphore", Params: map[string]any{"n": 20},
				Summary: measure.Summary{Items: 200, Completed: 200, Attempts: 200, AttemptsPerCall: 1, WallSeconds: 11.6,
					EndToEnd: measure.Percentiles{Count: 200, P50: 0.501, P90: 0.51, P99: 0.523, Max: 0.53, Mean: 0.503}},
				OracleSeconds: 11.602, WallOverOracle: 0.9998,
				Arrivals:     arrivals(17.24, measure.Percentiles{Count: 200, P50: 0.0008, P90: 0.004, P99: 0.023, Max: 0.031, Mean: 0.002}),
				Expectations: []Check{{Metric: "max_queueing_delay_p99", Expected: "<= 0.05", Actual: "0.023", OK: true}}},
		},
	}
}
