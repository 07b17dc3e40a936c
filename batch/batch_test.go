package batch

import (
	"context"
	"errors"
	"fmt"
	"github.com/ratelab/ratelab/internal/fakeclient"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newTestBatch(t *testing.T, c engine.Client, n int) *Batch {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "items.jsonl")
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"id":"id-%d","prompt":"p%d"}`, i, i))
	}
	writeLines(t, in, lines...)
	return &Batch{Input: in, Output: filepath.Join(dir, "results.jsonl"), Model: "m", Config: engine.Config{
		Client: c, Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 4}), Workers: 8, Resolution: -1,
	}}
}

// readOutput returns each id's results in the output, in order.
func readOutput(t *testing.T, path string) map[string][]engine.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make(map[string][]engine.Result)
	if _, err := engine.ReadJSONL(f, func(r engine.Result) error { got[r.ID] = append(got[r.ID], r); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// checkExactlyOnce fails unless every id-0 … id-(n-1) is in the output once.
func checkExactlyOnce(t *testing.T, path string, n int) map[string][]engine.Result {
	t.Helper()
	got := readOutput(t, path)
	for i := range n {
		id := fmt.Sprintf("id-%d", i)
		if len(got[id]) != 1 {
			t.Errorf("%s: %d results, want 1", id, len(got[id]))
		}
	}
	if len(got) != n {
		t.Errorf("output has %d ids, want %d", len(got), n)
	}
	return got
}

func TestBatchInputErrors(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"malformed", []string{`{"id":"a","prompt":"x"}`, `{"id":"b","prompt":`}, "items.jsonl:2: invalid JSON"},
		{"not an object", []string{`["a"]`}, `items.jsonl:1: want a JSON object`},
		{"missing id", []string{`{"prompt":"x"}`}, "items.jsonl:1: id: required"},
		{"missing prompt", []string{`{"id":"a"}`}, "items.jsonl:1: prompt: required: a prompt, or messages"},
		{"both", []string{`{"id":"a","prompt":"x","messages":[{"role":"user","content":"y"}]}`}, "items.jsonl:1: messages: set prompt or messages, not both"},
		{"duplicate", []string{`{"id":"a","prompt":"x"}`, ``, `{"id":"a","prompt":"y"}`}, `items.jsonl:3: id: duplicate id "a" (first on line 1)`},
		{"unknown key", []string{`{"id":"a","promt":"x"}`}, `items.jsonl:1: promt: unknown key "promt" (did you mean prompt?)`},
		{"unknown key far from any", []string{`{"id":"a","prompt":"x","temperature":1}`}, `items.jsonl:1: temperature: unknown key "temperature" (want one of id, max_tokens, messages, metadata, prompt, system)`},
		{"wrong type", []string{`{"id":7,"prompt":"x"}`}, "items.jsonl:1: id: want a string, got 7"},
		{"fraction", []string{`{"id":"a","prompt":"x","max_tokens":1.5}`}, "items.jsonl:1: max_tokens: want an integer, got 1.5"},
		{"string for a number", []string{`{"id":"a","prompt":"x","max_tokens":"ten"}`}, `items.jsonl:1: max_tokens: want an integer, got "ten"`},
		{"list for a string", []string{`{"id":["a"],"prompt":"x"}`}, `items.jsonl:1: id: want a string, got a list`},
		{"nested", []string{`{"id":"a","messages":[{"role":5,"content":"y"}]}`}, `items.jsonl:1: messages.role: want a string, got a number`},
		{"negative max_tokens", []string{`{"id":"a","prompt":"x","max_tokens":-1}`}, "items.jsonl:1: max_tokens: must be positive, got -1"},
		{"bad role", []string{`{"id":"a","messages":[{"role":"system","content":"y"}]}`}, "items.jsonl:1: messages[0].role: want user or assistant"},
		{"control character in id", []string{`{"id":"a","prompt":"x"}`, `{"id":"a\nb","prompt":"x"}`}, `items.jsonl:2: id: "a\nb" holds the control character U+000A at byte 1`},
		{"NUL in id", []string{`{"id":"\u0000","prompt":"x"}`}, `items.jsonl:1: id: "\x00" holds the control character U+0000 at byte 0`},
		{"two values", []string{`{"id":"a","prompt":"x"} {}`}, "items.jsonl:1: more than one JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeclient.Client{}
			b := newTestBatch(t, c, 0)
			b.Input = filepath.Join(t.TempDir(), "items.jsonl")
			writeLines(t, b.Input, tt.lines...)
			_, err := b.Run(t.Context())
			var ie *InputErrors
			if !errors.As(err, &ie) {
				t.Fatalf("Run: %v, want *InputErrors", err)
			}
			if got := strings.ReplaceAll(err.Error(), filepath.Dir(b.Input)+"/", ""); !strings.Contains(got, tt.want) {
				t.Errorf("error = %q, want it to contain %q", got, tt.want)
			}
			if n := c.Calls.Load(); n != 0 {
				t.Errorf("%d calls made, want 0", n)
			}
			if _, err := os.Stat(b.Output); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("output created for invalid input: %v", err)
			}
		})
	}
}

func TestBatchSkipInvalid(t *testing.T) {
	c := &fakeclient.Client{}
	b := newTestBatch(t, c, 0)
	writeLines(t, b.Input, `{"id":"id-0","prompt":"a"}`, `oops`, `{"id":"id-0","prompt":"b"}`, `{"id":"id-1","prompt":"c"}`)
	b.SkipInvalid = true
	sum, err := b.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Invalid.Total != 2 || sum.Items != 2 || sum.Completed != 2 || sum.AllOK() {
		t.Errorf("invalid %d, items %d, completed %d, all ok %v; want 2, 2, 2, false", sum.Invalid.Total, sum.Items, sum.Completed, sum.AllOK())
	}
	got := checkExactlyOnce(t, b.Output, 2)
	if r := got["id-0"][0]; r.Text != "ok a" || r.Index != 0 {
		t.Errorf("id-0: text %q, index %d; want the first line's (ok a, 0)", r.Text, r.Index)
	}
}

// TestBatchResume interrupts a batch after some results and resumes it.
func TestBatchResume(t *testing.T) {
	const n = 50
	c := &fakeclient.Client{}
	b := newTestBatch(t, c, n)
	ctx, cancel := context.WithCancel(t.Context())
	var got atomic.Int64
	b.Config.OnResult = func(engine.Result) {
		if got.Add(1) == 20 {
			cancel()
		}
	}
	sum, err := b.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled", err)
	}
	if sum.Remaining == 0 || sum.Completed+sum.Remaining != n {
		t.Errorf("interrupted: completed %d, remaining %d; want some remaining, summing to %d", sum.Completed, sum.Remaining, n)
	}
	first := sum.Completed
	b.Config.OnResult = nil
	sum, err = b.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.DoneOK != first || sum.Completed != n-first || !sum.AllOK() {
		t.Errorf("resumed: done %d, completed %d, all ok %v; want %d, %d, true", sum.DoneOK, sum.Completed, sum.AllOK(), first, n-first)
	}
	checkExactlyOnce(t, b.Output, n)
}

func TestBatchTornLine(t *testing.T) {
	const n = 10
	c := &fakeclient.Client{}
	b := newTestBatch(t, c, n)
	if _, err := b.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Keep 4 whole lines and half of the 5th, as a kill mid-write would.
	data, err := os.ReadFile(b.Output)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	torn := strings.Join(lines[:4], "") + lines[4][:len(lines[4])/2]
	if err := os.WriteFile(b.Output, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := b.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Repaired != 5 || sum.DoneOK != 4 || sum.Completed != n-4 {
		t.Errorf("repaired line %d, done %d, completed %d; want 5, 4, %d", sum.Repaired, sum.DoneOK, sum.Completed, n-4)
	}
	checkExactlyOnce(t, b.Output, n)
}

func TestBatchRetryFailed(t *testing.T) {
	const n = 12
	broken := true
	c := &fakeclient.Client{Fail: func(prompt string, _ int) (int, string) {
		if broken && (prompt == "p3" || prompt == "p7") {
			return 400, "invalid_request_error"
		}
		return 0, ""
	}}
	b := newTestBatch(t, c, n)
	b.Config.Retry = &strategies.RetryPolicy{MaxRetries: 2}
	sum, err := b.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 2 || sum.FailedByType["invalid_request_error"] != 2 || c.Calls.Load() != n {
		t.Errorf("failed %d (%v), calls %d; want 2 invalid_request_error, %d calls (a 400 is not retried)", sum.Failed, sum.FailedByType, c.Calls.Load(), n)
	}
	// Rerunning without --retry-failed makes nothing.
	if sum, err = b.Run(t.Context()); err != nil || sum.Completed+sum.Failed != 0 || sum.DoneFailed != 2 {
		t.Errorf("rerun: %v, made %d, done failed %d; want nothing made, 2 failed", err, sum.Completed+sum.Failed, sum.DoneFailed)
	}
	broken = false
	b.RetryFailed = true
	sum, err = b.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Retried != 2 || sum.Completed != 2 || !sum.AllOK() {
		t.Errorf("retry failed: retried %d, completed %d, all ok %v; want 2, 2, true", sum.Retried, sum.Completed, sum.AllOK())
	}
	for id, rs := range checkExactlyOnce(t, b.Output, n) {
		if !rs[0].OK() {
			t.Errorf("%s: %v after --retry-failed", id, rs[0].Err)
		}
	}
}

// TestBatchRequeue: throttled results go back in the queue until the item
// succeeds; each is recorded once, with all its attempts.
func TestBatchRequeue(t *testing.T) {
	const n = 20
	c := &fakeclient.Client{Fail: func(prompt string, k int) (int, string) {
		switch {
		case k < 2:
			return 429, "rate_limit_error"
		case k < 3 && prompt == "p5":
			return 529, "overloaded_error"
		}
		return 0, ""
	}}
	b := newTestBatch(t, c, n)
	sum, err := b.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Completed != n || sum.Requeued != 2*n+1 || !sum.AllOK() {
		t.Errorf("completed %d, requeued %d, all ok %v; want %d, %d, true", sum.Completed, sum.Requeued, sum.AllOK(), n, 2*n+1)
	}
	// The engine counts each item once, whatever its rounds.
	if sum.Run.Completed != n || sum.Run.Failed != 0 || sum.Run.Attempts != 3*n+1 || sum.Run.Throttled != 2*n {
		t.Errorf("run: completed %d, failed %d, attempts %d, 429s %d; want %d, 0, %d, %d", sum.Run.Completed, sum.Run.Failed, sum.Run.Attempts, sum.Run.Throttled, n, 3*n+1, 2*n)
	}
	for id, rs := range checkExactlyOnce(t, b.Output, n) {
		want := 3
		if id == "id-5" {
			want = 4
		}
		if rs[0].Attempts != want {
			t.Errorf("%s: attempts %d, want %d", id, rs[0].Attempts, want)
		}
	}
}

// TestBatchRequeueKinds: what is re-queued is what engine.Result.Kind
// says is temporary: a stream's rate_limit_error and overloaded_error events
// are, a 400 and a 500 past its retries are not.
func TestBatchRequeueKinds(t *testing.T) {
	c := &fakeclient.Client{Fail: func(prompt string, k int) (int, string) {
		switch {
		case prompt == "p0" && k == 0:
			return 200, "rate_limit_error"
		case prompt == "p1" && k == 0:
			return 200, "overloaded_error"
		case prompt == "p2":
			return 400, "invalid_request_error"
		case prompt == "p3":
			return 500, "api_error"
		}
		return 0, ""
	}}
	b := newTestBatch(t, c, 5)
	sum, err := b.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Completed != 3 || sum.Requeued != 2 || sum.FailedByType["invalid_request_error"] != 1 || sum.FailedByType["api_error"] != 1 {
		t.Errorf("completed %d, requeued %d, failed %v; want 3, 2, one invalid_request_error and one api_error", sum.Completed, sum.Requeued, sum.FailedByType)
	}
	got := checkExactlyOnce(t, b.Output, 5)
	for id, want := range map[string]int{"id-0": 2, "id-1": 2, "id-2": 1, "id-3": 1, "id-4": 1} {
		if r := got[id][0]; r.Attempts != want {
			t.Errorf("%s: %d attempts, want %d", id, r.Attempts, want)
		}
	}
}

// TestBatchQuotaStops: the first refusal for a spent quota stops the
// batch with ErrQuota after one attempt (no retry, no re-queue): nothing is
// recorded for the refused item nor for the items not started, and a
// resume once the quota is back makes each of them once.
func TestBatchQuotaStops(t *testing.T) {
	const n = 40
	spent := atomic.Bool{}
	spent.Store(true)
	c := &fakeclient.Client{Fail: func(prompt string, k int) (int, string) {
		if prompt == "p5" && spent.Load() {
			return 429, "insufficient_quota"
		}
		return 0, ""
	}}
	b := newTestBatch(t, c, n)
	b.Config.Retry = &strategies.RetryPolicy{MaxRetries: 2}
	sum, err := b.Run(t.Context())
	if !errors.Is(err, ErrQuota) {
		t.Fatalf("err = %v, want ErrQuota", err)
	}
	if sum.QuotaSpent != 1 || sum.Requeued != 0 || sum.Failed != 0 {
		t.Errorf("quota spent %d, requeued %d, failed %d; want 1, 0, 0", sum.QuotaSpent, sum.Requeued, sum.Failed)
	}
	if c.Seen("p5") != 1 {
		t.Errorf("p5 was tried %d times, want once", c.Seen("p5"))
	}
	first := readOutput(t, b.Output)
	if len(first["id-5"]) != 0 || len(first) == n || sum.Remaining != n-len(first) {
		t.Errorf("recorded %d items (id-5: %d), %d remaining; want id-5 and the items not started left", len(first), len(first["id-5"]), sum.Remaining)
	}

	spent.Store(false)
	sum, err = b.Run(t.Context())
	if err != nil || !sum.AllOK() {
		t.Fatalf("resume: %v, all ok %v", err, sum.AllOK())
	}
	checkExactlyOnce(t, b.Output, n)
}

func TestBatchOutputNotResults(t *testing.T) {
	b := newTestBatch(t, &fakeclient.Client{}, 3)
	writeLines(t, b.Output, `{"id":"id-0","attempts":1}`, `not json`)
	_, err := b.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Run over a foreign output: %v, want an error naming line 2", err)
	}
}

// TestBatchInputShrinks: an input cut short between the passes ends the
// batch with the missing items remaining, instead of waiting for them.
func TestBatchInputShrinks(t *testing.T) {
	b := newTestBatch(t, &fakeclient.Client{}, 10)
	b.OnStart = func(Summary) { writeLines(t, b.Input, `{"id":"id-0","prompt":"p0"}`) }
	sum, err := b.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Completed != 1 || sum.Remaining != 9 || sum.AllOK() {
		t.Errorf("completed %d, remaining %d; want 1, 9", sum.Completed, sum.Remaining)
	}
}

// TestBatchLocked: a second batch on the same output refuses to start.
func TestBatchLocked(t *testing.T) {
	b := newTestBatch(t, &fakeclient.Client{}, 3)
	f, err := openLocked(b.Output, os.O_RDWR|os.O_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := b.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "another batch is writing to it") {
		t.Errorf("Run on a locked output: %v, want another batch is writing to it", err)
	}
}

// TestBatchRequeueRace throttles many items from many workers at once, so
// that items are often re-queued while the source is between emptying the
// queue and waiting for more: none may be lost (the run would then wait for
// it until the deadline) and none recorded twice.
func TestBatchRequeueRace(t *testing.T) {
	const n = 3000
	c := &fakeclient.Client{Fail: func(prompt string, k int) (int, string) {
		if k < 1+len(prompt)%3 {
			return 429, "rate_limit_error"
		}
		return 0, ""
	}}
	b := newTestBatch(t, c, n)
	b.Config.Strategy = strategies.NewUnbounded()
	b.Config.Workers = 64
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sum, err := b.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v (completed %d, remaining %d)", err, sum.Completed, sum.Remaining)
	}
	if sum.Completed != n || !sum.AllOK() {
		t.Errorf("completed %d of %d", sum.Completed, n)
	}
	checkExactlyOnce(t, b.Output, n)
}

// gateClient holds every call until release is closed (or its ctx ends).
type gateClient struct {
	inFlight atomic.Int64
	release  chan struct{}
}

func (c *gateClient) Do(ctx context.Context, r provider.Request, _ int) (provider.Response, strategies.Outcome) {
	c.inFlight.Add(1)
	select {
	case <-c.release:
		return provider.Response{Text: "ok"}, strategies.Outcome{Kind: strategies.Success, Status: 200}
	case <-ctx.Done():
		return provider.Response{}, strategies.Outcome{Kind: strategies.Canceled, Err: ctx.Err()}
	}
}

// TestBatchDrain: once ctx ends, no item is taken, the calls in progress
// finish within the grace period and are recorded, and the rest remain. In
// virtual time the drain is exact: the 4 calls holding the semaphore's
// slots when ctx ends are the only ones made.
func TestBatchDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20
		c := &gateClient{release: make(chan struct{})}
		b := newTestBatch(t, c, n)
		b.Config.Grace = time.Minute
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			synctest.Wait() // every worker is blocked: 4 in calls, the rest on a slot
			cancel()
			synctest.Wait() // the stop has been seen everywhere
			close(c.release)
		}()
		sum, err := b.Run(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v, want context.Canceled", err)
		}
		calls := int(c.inFlight.Load())
		if calls != 4 || sum.Completed != 4 || sum.Remaining != n-4 {
			t.Errorf("calls %d, completed %d, remaining %d; want 4, 4, %d", calls, sum.Completed, sum.Remaining, n-4)
		}
		if got := readOutput(t, b.Output); len(got) != 4 {
			t.Errorf("output has %d results, want the 4 drained", len(got))
		}
	})
}

// timedClient throttles each prompt's first call, with a retry-after when
// retryAfter is positive, and records when each call was made.
type timedClient struct {
	retryAfter time.Duration
	mu         sync.Mutex
	calls      map[string][]time.Time
}

func (c *timedClient) Do(_ context.Context, r provider.Request, _ int) (provider.Response, strategies.Outcome) {
	prompt := r.Messages[0].Content
	c.mu.Lock()
	c.calls[prompt] = append(c.calls[prompt], time.Now())
	n := len(c.calls[prompt])
	c.mu.Unlock()
	if n == 1 {
		return provider.Response{}, strategies.Outcome{Kind: strategies.Throttled, Status: 429,
			HasRetryAfter: c.retryAfter > 0, RetryAfter: c.retryAfter,
			Err: &provider.APIError{Status: 429, Type: "rate_limit_error"}}
	}
	return provider.Response{Text: "ok"}, strategies.Outcome{Kind: strategies.Success, Status: 200}
}

// TestBatchRequeueWaits checks, in virtual time, that a re-queued item is
// taken again only once the server's retry-after has passed, or without
// one after the SDKs' first backoff (0.375 s to 0.5 s with its jitter).
func TestBatchRequeueWaits(t *testing.T) {
	tests := []struct {
		retryAfter time.Duration
		min, max   time.Duration
	}{
		{7 * time.Second, 7 * time.Second, 7 * time.Second},
		{0, 375 * time.Millisecond, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.retryAfter), func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				c := &timedClient{retryAfter: tt.retryAfter, calls: make(map[string][]time.Time)}
				b := newTestBatch(t, c, 0)
				b.Input, b.Output = filepath.Join(dir, "items.jsonl"), filepath.Join(dir, "out.jsonl")
				writeLines(t, b.Input, `{"id":"a","prompt":"a"}`, `{"id":"b","prompt":"b"}`, `{"id":"c","prompt":"c"}`)
				sum, err := b.Run(context.Background())
				if err != nil || sum.Completed != 3 || sum.Requeued != 3 {
					t.Fatalf("Run: %v; completed %d, requeued %d; want 3, 3", err, sum.Completed, sum.Requeued)
				}
				for p, at := range c.calls {
					if len(at) != 2 {
						t.Errorf("%s: %d calls, want 2", p, len(at))
						continue
					}
					if gap := at[1].Sub(at[0]); gap < tt.min || gap > tt.max {
						t.Errorf("%s: taken again after %v, want %v to %v", p, gap, tt.min, tt.max)
					}
				}
				// Each result counts the wait between its rounds.
				for id, rs := range readOutput(t, b.Output) {
					tm := rs[0].Timings
					gap := c.calls[id][1].Sub(c.calls[id][0])
					if waited := tm.WaitRetryAfter + tm.Backoff; waited != gap || rs[0].Attempts != 2 {
						t.Errorf("%s: waited %v between rounds, attempts %d; want %v, 2", id, waited, rs[0].Attempts, gap)
					}
				}
			})
		})
	}
}
