package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// fakeClient is a server in a function: each attempt sleeps latency (in
// virtual time) and ends as f says.
type fakeClient struct {
	latency time.Duration
	f       func(r provider.Request, n int) strategies.Outcome
}

func (c *fakeClient) Do(ctx context.Context, r provider.Request, n int) (provider.Response, strategies.Outcome) {
	t := time.NewTimer(c.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return provider.Response{}, strategies.Outcome{Kind: strategies.Canceled, Err: ctx.Err()}
	}
	o := strategies.Outcome{Kind: strategies.Success, Status: 200, Latency: c.latency, Usage: strategies.Usage{InputTokens: 10, OutputTokens: 5}}
	if c.f != nil {
		o = c.f(r, n)
		o.Latency = c.latency
	}
	if o.Kind != strategies.Success {
		return provider.Response{}, o
	}
	return provider.Response{Text: "ok:" + r.Messages[0].Content, StopReason: "end_turn", Usage: o.Usage}, o
}

func items(n int) Source {
	return Generate(n, func(i int) Item {
		return Item{ID: fmt.Sprint("id-", i), Request: provider.Request{Model: "m", MaxTokens: 100, Messages: []provider.Message{{Role: "user", Content: fmt.Sprint(i)}}}}
	})
}

func TestRunSemaphoreVirtualTime(t *testing.T) {
	tests := []struct {
		slots    int
		wantWall float64
	}{
		{20, 5}, {10, 10}, {200, 0.5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("semaphore", tt.slots), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var buf bytes.Buffer
				sum, err := Run(t.Context(), Config{
					Client:   &fakeClient{latency: 500 * time.Millisecond},
					Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: tt.slots}),
					Sinks:    []Sink{NewJSONL(&buf)},
				}, items(200))
				if err != nil {
					t.Fatal(err)
				}
				if sum.Items != 200 || sum.Completed != 200 || sum.Failed != 0 || sum.Attempts != 200 || sum.Incomplete {
					t.Errorf("summary: items %d completed %d failed %d attempts %d incomplete %v; want 200/200/0/200/false",
						sum.Items, sum.Completed, sum.Failed, sum.Attempts, sum.Incomplete)
				}
				if sum.WallSeconds != tt.wantWall {
					t.Errorf("wall = %v s, want %v", sum.WallSeconds, tt.wantWall)
				}
				if sum.InputTokens != 2000 || sum.OutputTokens != 1000 || sum.AttemptsPerCall != 1 || sum.MaxAttempts != 1 {
					t.Errorf("tokens %d/%d, attempts/call %v, max attempts %d; want 2000/1000, 1, 1", sum.InputTokens, sum.OutputTokens, sum.AttemptsPerCall, sum.MaxAttempts)
				}
				if sum.EndToEnd.Max != tt.wantWall || sum.Attempt.Mean != 0.5 || sum.Attempt.Count != 200 {
					t.Errorf("end-to-end max %v, attempt mean %v count %d; want %v, 0.5, 200", sum.EndToEnd.Max, sum.Attempt.Mean, sum.Attempt.Count, tt.wantWall)
				}
				if lines := strings.Count(buf.String(), "\n"); lines != 200 {
					t.Errorf("JSONL lines = %d, want 200", lines)
				}
				tl := sum.Timeline
				if tl == nil || tl.ResolutionSeconds != 0.1 || len(tl.Points) < int(tt.wantWall*10) {
					t.Fatalf("timeline = %+v, want a point per 100 ms", tl)
				}
				peak := 0
				for _, p := range tl.Points {
					peak = max(peak, p.InFlight)
					if p.Limit != float64(tt.slots) {
						t.Fatalf("timeline limit = %v, want %d", p.Limit, tt.slots)
					}
				}
				if peak != min(tt.slots, 200) {
					t.Errorf("peak in flight = %d, want %d", peak, tt.slots)
				}
			})
		})
	}
}

func TestRunRecordsFailuresAndCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := &fakeClient{latency: 10 * time.Millisecond, f: func(r provider.Request, n int) strategies.Outcome {
			switch r.Messages[0].Content {
			case "3": // invalid prompt: permanent
				return strategies.Outcome{Kind: strategies.Failed, Status: 400, Err: &provider.APIError{Status: 400, Type: "invalid_request_error", Message: "bad prompt"}}
			case "5": // throttled on the first two attempts
				if n < 2 {
					return strategies.Outcome{Kind: strategies.Throttled, Status: 429, RetryAfter: time.Second, HasRetryAfter: true, Err: &provider.APIError{Status: 429, Type: "rate_limit_error"}}
				}
			case "7": // overloaded, always
				return strategies.Outcome{Kind: strategies.Overloaded, Status: 529, Err: &provider.APIError{Status: 529, Type: "overloaded_error"}}
			case "8":
				return strategies.Outcome{Kind: strategies.Failed, Status: 500, Err: &provider.APIError{Status: 500, Type: "api_error"}}
			}
			return strategies.Outcome{Kind: strategies.Success, Status: 200}
		}}
		var mu sync.Mutex
		results := map[int]Result{}
		attempts := 0
		sum, err := Run(t.Context(), Config{
			Client:   client,
			Strategy: strategies.NewUnbounded(),
			Retry:    &strategies.RetryPolicy{MaxRetries: 2},
			OnResult: func(r Result) { results[r.Index] = r },
			OnAttempt: func(Attempt) {
				mu.Lock()
				attempts++
				mu.Unlock()
			},
		}, items(10))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Completed != 7 || sum.Failed != 3 || len(results) != 10 {
			t.Fatalf("completed %d failed %d results %d, want 7, 3, 10", sum.Completed, sum.Failed, len(results))
		}
		// 10 first attempts, +2 retries for 5 (429), +2 for 7 (529), +2 for 8 (500).
		if sum.Attempts != 16 || attempts != 16 {
			t.Errorf("attempts = %d (callback %d), want 16", sum.Attempts, attempts)
		}
		if sum.Throttled != 2 || sum.Overloaded != 3 || sum.ServerErrors != 3 || sum.Errors != 1 {
			t.Errorf("throttled %d overloaded %d 5xx %d errors %d; want 2, 3, 3, 1", sum.Throttled, sum.Overloaded, sum.ServerErrors, sum.Errors)
		}
		if fmt.Sprint(sum.ThrottledByAttempt) != "[1 1]" || sum.MaxAttempts != 3 {
			t.Errorf("429s by attempt %v, max attempts %d; want [1 1], 3", sum.ThrottledByAttempt, sum.MaxAttempts)
		}
		// Each failed attempt had reserved 100 max tokens + the estimate (1).
		if want := int64(9 * (100 + 1)); sum.FailedTokens != want {
			t.Errorf("failed tokens = %d, want %d", sum.FailedTokens, want)
		}
		if r := results[3]; r.Err == nil || r.Err.Status != 400 || r.Err.Type != "invalid_request_error" || r.Attempts != 1 || r.ID != "id-3" {
			t.Errorf("result 3 = %+v, want a 400 after 1 attempt", r)
		}
		if r := results[5]; r.Err != nil || r.Attempts != 3 || r.Text != "ok:5" || r.Timings.WaitRetryAfter != 2*time.Second {
			t.Errorf("result 5 = %+v, want success on attempt 3 after 2 s of retry-after", r)
		}
		if r := results[7]; r.Err == nil || r.Err.Type != "overloaded_error" || r.Attempts != 3 || r.Timings.Backoff == 0 {
			t.Errorf("result 7 = %+v, want overloaded after 3 attempts with backoff", r)
		}
		if sum.Backoff.Max < 2 {
			t.Errorf("backoff max = %v, want >= 2 s (item 5's retry-after)", sum.Backoff.Max)
		}
	})
}

func TestRunCanceled(t *testing.T) {
	for _, grace := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("grace=", grace), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				time.AfterFunc(1250*time.Millisecond, cancel)
				var buf bytes.Buffer
				sum, err := Run(ctx, Config{
					Client:   &fakeClient{latency: 500 * time.Millisecond},
					Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 10}),
					Sinks:    []Sink{NewJSONL(&buf)},
					Items:    100,
					Grace:    grace,
				}, items(100))
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run error = %v, want context.Canceled", err)
				}
				// 100 items taken: 20 done by 1.25 s, 10 in flight, 70
				// waiting for a slot.
				wantDone, wantCanceled, wantWall := 20, 80, 1.25
				if grace > 0 { // the 10 in flight finish within the grace; no new one starts
					wantDone, wantCanceled, wantWall = 30, 70, 1.5
				}
				if !sum.Incomplete || sum.Items != 100 || sum.Completed != wantDone || sum.Canceled != wantCanceled || sum.WallSeconds != wantWall {
					t.Errorf("summary: incomplete %v items %d completed %d canceled %d wall %v; want true, 100, %d, %d, %v",
						sum.Incomplete, sum.Items, sum.Completed, sum.Canceled, sum.WallSeconds, wantDone, wantCanceled, wantWall)
				}
				if lines := strings.Count(buf.String(), "\n"); lines != wantDone {
					t.Errorf("JSONL lines = %d, want %d (interrupted items are not written)", lines, wantDone)
				}
			})
		})
	}
}

func TestRunPanicPropagates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer func() {
			p := recover()
			pe, ok := p.(*PanicError)
			if !ok || pe.Value != "boom" || !strings.Contains(pe.Error(), "boom") {
				t.Errorf("recovered %v, want a *PanicError of boom", p)
			}
		}()
		Run(t.Context(), Config{
			Client: &fakeClient{latency: time.Millisecond, f: func(r provider.Request, n int) strategies.Outcome {
				if r.Messages[0].Content == "4" {
					panic("boom")
				}
				return strategies.Outcome{Kind: strategies.Success, Status: 200}
			}},
			Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 2}),
		}, items(50))
		t.Error("Run returned; want a panic")
	})
}

type failingSink struct{ after int }

func (s *failingSink) Put(Result) error {
	if s.after--; s.after < 0 {
		return errors.New("disk full")
	}
	return nil
}

func TestRunSinkErrorStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sum, err := Run(t.Context(), Config{
			Client:   &fakeClient{latency: 100 * time.Millisecond},
			Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 5}),
			Sinks:    []Sink{&failingSink{after: 7}},
		}, items(100))
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("Run error = %v, want the sink's", err)
		}
		if !sum.Incomplete || sum.Completed+sum.Failed >= 100 {
			t.Errorf("summary: incomplete %v, finished %d; want an incomplete run", sum.Incomplete, sum.Completed+sum.Failed)
		}
		if sum.Completed+sum.Failed != 7 || sum.Completed+sum.Failed+sum.Canceled != sum.Items {
			t.Errorf("completed %d + failed %d + canceled %d, items %d; want 7 recorded (the sink's successes), and the sum = items",
				sum.Completed, sum.Failed, sum.Canceled, sum.Items)
		}
	})
}

func TestRunSourceError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := func(yield func(Item, error) bool) {
			for i := range 3 {
				if !yield(Item{Index: i, Request: provider.Request{Messages: []provider.Message{{Content: "x"}}}}, nil) {
					return
				}
			}
			yield(Item{}, errors.New("line 4: bad json"))
		}
		sum, err := Run(t.Context(), Config{Client: &fakeClient{latency: time.Millisecond}, Strategy: strategies.NewUnbounded()}, src)
		if err == nil || !strings.Contains(err.Error(), "line 4") {
			t.Errorf("Run error = %v, want the source's", err)
		}
		if sum.Completed != 3 {
			t.Errorf("completed = %d, want the 3 items taken before the error", sum.Completed)
		}
	})
}

func TestRunConfigErrors(t *testing.T) {
	if _, err := Run(context.Background(), Config{}, Slice(nil)); err == nil {
		t.Error("Run with no client: want an error")
	}
}

func TestJSONL(t *testing.T) {
	var buf bytes.Buffer
	j := NewJSONL(&buf)
	r := Result{Index: 3, ID: "a", Text: "hi", Attempts: 1, Metadata: json.RawMessage(`{"k":1}`)}
	r2 := Result{Index: 4, ID: "b", Attempts: 3, Err: &ResultError{Status: 429, Type: "rate_limit_error", Message: "slow"}}
	for _, x := range []Result{r, r2} {
		if err := j.Put(x); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines = %q", lines)
	}
	var got Result
	if err := json.Unmarshal([]byte(lines[1]), &got); err != nil || got.Err == nil || got.Err.Status != 429 || got.ID != "b" {
		t.Errorf("line 2 = %s → %+v, %v", lines[1], got, err)
	}
	if !strings.Contains(lines[0], `"metadata":{"k":1}`) || strings.Contains(lines[0], `"error"`) {
		t.Errorf("line 1 = %s, want metadata and no error", lines[0])
	}
}

func TestReadJSONL(t *testing.T) {
	var buf bytes.Buffer
	j := NewJSONL(&buf)
	for i := range 3 {
		r := Result{Index: i, ID: fmt.Sprint("id-", i), Attempts: 1}
		if i == 1 {
			r.Err = &ResultError{Status: 400, Type: "invalid_request_error", Message: "bad"}
		}
		if err := j.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	whole := buf.String()
	tests := []struct {
		name       string
		in         string
		wantIDs    string
		wantOffset int
		wantErr    error
	}{
		{"whole", whole, "[id-0 id-1 id-2]", len(whole), nil},
		{"empty", "", "[]", 0, nil},
		{"torn", whole + `{"index":3,"id":"id-3","att`, "[id-0 id-1 id-2]", len(whole), ErrTornLine},
		{"torn without newline only", strings.TrimSuffix(whole, "\n"), "[id-0 id-1]", strings.LastIndex(whole[:len(whole)-1], "\n") + 1, ErrTornLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ids []string
			off, err := ReadJSONL(strings.NewReader(tt.in), func(r Result) error {
				ids = append(ids, r.ID)
				return nil
			})
			if !errors.Is(err, tt.wantErr) || int(off) != tt.wantOffset || fmt.Sprint(ids) != tt.wantIDs {
				t.Errorf("ReadJSONL = %v, %d, %v; want %s, %d, %v", ids, off, err, tt.wantIDs, tt.wantOffset, tt.wantErr)
			}
		})
	}
	if _, err := ReadJSONL(strings.NewReader("{\"index\":0}\nnot json\n"), func(Result) error { return nil }); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("ReadJSONL(corrupt) error = %v, want one naming line 2", err)
	}
}

func TestSources(t *testing.T) {
	collect := func(src Source) (idx []int) {
		for it, err := range src {
			if err != nil {
				t.Fatal(err)
			}
			idx = append(idx, it.Index)
			if len(idx) == 3 {
				break // sources must stop when asked
			}
		}
		return idx
	}
	ch := make(chan Item, 5)
	for i := range 5 {
		ch <- Item{Index: 10 + i}
	}
	close(ch)
	for name, tt := range map[string]struct {
		src  Source
		want string
	}{
		"slice":    {Slice([]Item{{Index: 4}, {Index: 5}}), "[4 5]"},
		"generate": {Generate(10, func(int) Item { return Item{Index: -1} }), "[0 1 2]"},
		"chan":     {Chan(ch), "[10 11 12]"},
	} {
		if got := fmt.Sprint(collect(tt.src)); got != tt.want {
			t.Errorf("%s: indexes %s, want %s", name, got, tt.want)
		}
	}
}

func TestRunRequeue(t *testing.T) {
	// Re-queueing with unlimited retries: a tight limit slows the batch down
	// but loses nothing (the batch runtime of the seeds).
	synctest.Test(t, func(t *testing.T) {
		inFlight, served := 0, 0
		var mu sync.Mutex
		client := &fakeClient{latency: 0, f: nil}
		limited := clientFunc(func(ctx context.Context, r provider.Request, n int) (provider.Response, strategies.Outcome) {
			mu.Lock()
			if inFlight >= 5 {
				mu.Unlock()
				return provider.Response{}, strategies.Outcome{Kind: strategies.Throttled, Status: 429, RetryAfter: 100 * time.Millisecond, HasRetryAfter: true}
			}
			inFlight++
			served++
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			inFlight--
			mu.Unlock()
			return client.Do(ctx, r, n)
		})
		var results []Result
		sum, err := Run(t.Context(), Config{
			Client:   limited,
			Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 20}),
			Retry:    &strategies.RetryPolicy{MaxRetries: -1, Requeue: true},
			OnResult: func(r Result) { results = append(results, r) },
		}, items(100))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, r := range results {
			if r.Err != nil || seen[r.Index] {
				t.Fatalf("result %+v: want each item once, successful", r)
			}
			seen[r.Index] = true
		}
		if sum.Completed != 100 || len(seen) != 100 || served != 100 || sum.Throttled == 0 {
			t.Errorf("completed %d, distinct %d, served %d, 429s %d; want 100, 100, 100, some", sum.Completed, len(seen), served, sum.Throttled)
		}
	})
}

type clientFunc func(ctx context.Context, r provider.Request, n int) (provider.Response, strategies.Outcome)

func (f clientFunc) Do(ctx context.Context, r provider.Request, n int) (provider.Response, strategies.Outcome) {
	return f(ctx, r, n)
}

func TestRunCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[int]int{}
		var results = map[int]Result{}
		sum, err := Run(t.Context(), Config{
			Client:   &fakeClient{latency: 10 * time.Millisecond},
			Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 4}),
			Retry:    &strategies.RetryPolicy{MaxRetries: 2},
			Check: func(it Item, resp provider.Response) error {
				mu.Lock()
				defer mu.Unlock()
				seen[it.Index]++
				switch {
				case it.Index == 3 && seen[3] <= 2: // valid on the third ask
					return errors.New("not JSON")
				case it.Index == 5: // never valid
					return errors.New(`missing property "label"`)
				}
				return nil
			},
			MaxInvalid: 2,
			OnResult:   func(r Result) { results[r.Index] = r },
		}, items(8))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Completed != 7 || sum.Failed != 1 || sum.Invalid != 2+3 || sum.Attempts != 8+2+2 {
			t.Errorf("completed %d, failed %d, invalid %d, attempts %d; want 7, 1, 5, 12", sum.Completed, sum.Failed, sum.Invalid, sum.Attempts)
		}
		if r := results[3]; r.Err != nil || r.Attempts != 3 {
			t.Errorf("result 3 = %+v, want success after 3 asks", r)
		}
		if r := results[5]; r.Err == nil || r.Err.Type != "validation_error" || r.Err.Status != 200 || !strings.Contains(r.Err.Message, "label") || r.Attempts != 3 || r.Text == "" {
			t.Errorf("result 5 = %+v, want a validation error after 3 asks, with the text", r)
		}
	})
}

// TestRunWorkerStartsEachItemAfresh: one worker makes every item's call,
// reusing its task, and nothing of one item carries into the next: each
// Result counts its own item's attempts, waits and text, and each
// attempt is numbered within its item.
func TestRunWorkerStartsEachItemAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := &fakeClient{latency: 10 * time.Millisecond, f: func(r provider.Request, n int) strategies.Outcome {
			if n == 0 {
				return strategies.Outcome{Kind: strategies.Throttled, Status: 429, RetryAfter: time.Second, HasRetryAfter: true}
			}
			return strategies.Outcome{Kind: strategies.Success, Status: 200, Usage: strategies.Usage{InputTokens: 10, OutputTokens: 5}}
		}}
		var (
			results []Result
			ns      = map[int][]int{}
		)
		_, err := Run(t.Context(), Config{
			Client:    client,
			Strategy:  strategies.NewUnbounded(),
			Retry:     &strategies.RetryPolicy{MaxRetries: 1},
			Workers:   1,
			OnAttempt: func(a Attempt) { ns[a.Index] = append(ns[a.Index], a.N) },
			OnResult:  func(r Result) { results = append(results, r) },
		}, items(4))
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != 4 {
			t.Fatalf("%d results, want 4", len(results))
		}
		for _, r := range results {
			want := fmt.Sprint("ok:", r.Index)
			if r.Err != nil || r.Attempts != 2 || r.Timings.WaitRetryAfter != time.Second || r.Timings.Backoff != 0 || r.Text != want {
				t.Errorf("result %d: err %v, %d attempts, waited %v for retry-after and %v backing off, text %q; want nil, 2, 1s, 0, %q",
					r.Index, r.Err, r.Attempts, r.Timings.WaitRetryAfter, r.Timings.Backoff, r.Text, want)
			}
			if got := ns[r.Index]; len(got) != 2 || got[0] != 0 || got[1] != 1 {
				t.Errorf("item %d: attempts numbered %v, want [0 1]", r.Index, got)
			}
		}
	})
}
