package strategies

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// TestRetryable is the SDKs' shouldRetry (anthropic-sdk-go
// internal/requestconfig), status by status.
func TestRetryable(t *testing.T) {
	errConn := errors.New("connection refused")
	tests := []struct {
		name string
		o    Outcome
		want bool
	}{
		{"200 success", Outcome{Kind: Success, Status: 200}, false},
		{"200 stream cut mid-way", Outcome{Kind: Failed, Status: 200, Err: errConn}, false},
		{"200 x-should-retry true", Outcome{Kind: Success, Status: 200, ShouldRetry: ptr(true)}, true},
		{"400", Outcome{Kind: Failed, Status: 400}, false},
		{"401", Outcome{Kind: Failed, Status: 401}, false},
		{"403", Outcome{Kind: Failed, Status: 403}, false},
		{"404", Outcome{Kind: Failed, Status: 404}, false},
		{"408", Outcome{Kind: Failed, Status: 408}, true},
		{"409", Outcome{Kind: Failed, Status: 409}, true},
		{"413", Outcome{Kind: Failed, Status: 413}, false},
		{"422", Outcome{Kind: Failed, Status: 422}, false},
		{"429", Outcome{Kind: Throttled, Status: 429}, true},
		{"499", Outcome{Kind: Failed, Status: 499}, false},
		{"500", Outcome{Kind: Failed, Status: 500}, true},
		{"502", Outcome{Kind: Failed, Status: 502}, true},
		{"503", Outcome{Kind: Overloaded, Status: 503}, true},
		{"504", Outcome{Kind: Failed, Status: 504}, true},
		{"529", Outcome{Kind: Overloaded, Status: 529}, true},
		{"599", Outcome{Kind: Failed, Status: 599}, true},
		{"429 x-should-retry false", Outcome{Kind: Throttled, Status: 429, ShouldRetry: ptr(false)}, false},
		{"529 x-should-retry false", Outcome{Kind: Overloaded, Status: 529, ShouldRetry: ptr(false)}, false},
		{"400 x-should-retry true", Outcome{Kind: Failed, Status: 400, ShouldRetry: ptr(true)}, true},
		{"500 x-should-retry true", Outcome{Kind: Failed, Status: 500, ShouldRetry: ptr(true)}, true},
		{"connection error", Outcome{Kind: Failed, Err: errConn}, true},
		{"per-attempt timeout", Outcome{Kind: Failed, Err: errors.New("context deadline exceeded")}, true},
		{"canceled", Outcome{Kind: Canceled, Err: errors.New("context canceled")}, false},
		{"canceled with status", Outcome{Kind: Canceled, Status: 429}, false},
		{"abandoned", Outcome{Kind: Abandoned}, false},
		{"quota 429", Outcome{Kind: Quota, Status: 429}, false},
		{"quota 429 x-should-retry true", Outcome{Kind: Quota, Status: 429, ShouldRetry: ptr(true)}, false},
		{"quota 429 with retry-after", Outcome{Kind: Quota, Status: 429, RetryAfter: time.Second, HasRetryAfter: true}, false},
	}
	for _, tt := range tests {
		if got := Retryable(tt.o); got != tt.want {
			t.Errorf("Retryable(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestNext checks retries left, the server delay and the switch to backoff.
func TestNext(t *testing.T) {
	throttled := Outcome{Kind: Throttled, Status: 429}
	withDelay := func(d time.Duration) Outcome {
		o := throttled
		o.RetryAfter, o.HasRetryAfter = d, true
		return o
	}
	tests := []struct {
		name      string
		policy    *RetryPolicy
		taken     int
		o         Outcome
		wantRetry bool
		wantMin   time.Duration // exclusive, unless equal to wantMax
		wantMax   time.Duration // inclusive
	}{
		{"nil policy", nil, 0, throttled, false, 0, 0},
		{"zero policy", &RetryPolicy{}, 0, throttled, false, 0, 0},
		{"default, first retry", &RetryPolicy{MaxRetries: 2}, 0, throttled, true, 375 * time.Millisecond, 500 * time.Millisecond},
		{"default, second retry", &RetryPolicy{MaxRetries: 2}, 1, throttled, true, 750 * time.Millisecond, time.Second},
		{"default, retries used up", &RetryPolicy{MaxRetries: 2}, 2, throttled, false, 0, 0},
		{"not retryable", &RetryPolicy{MaxRetries: 2}, 0, Outcome{Kind: Failed, Status: 400}, false, 0, 0},
		{"unlimited, 1000th retry capped", &RetryPolicy{MaxRetries: -1}, 1000, throttled, true, 6 * time.Second, 8 * time.Second},
		{"retry-after 1 s", &RetryPolicy{MaxRetries: 2}, 0, withDelay(time.Second), true, time.Second, time.Second},
		{"retry-after-ms 250", &RetryPolicy{MaxRetries: 2}, 1, withDelay(250 * time.Millisecond), true, 250 * time.Millisecond, 250 * time.Millisecond},
		{"retry-after 0: retry at once", &RetryPolicy{MaxRetries: 2}, 0, withDelay(0), true, 0, 0},
		{"retry-after date in the past", &RetryPolicy{MaxRetries: 2}, 0, withDelay(-3 * time.Second), true, 0, 0},
		{"retry-after 120 s: no cap", &RetryPolicy{MaxRetries: 2}, 0, withDelay(120 * time.Second), true, 120 * time.Second, 120 * time.Second},
		{"retry-after on a 400: not retried", &RetryPolicy{MaxRetries: 2}, 0, Outcome{Kind: Failed, Status: 400, RetryAfter: time.Second, HasRetryAfter: true}, false, 0, 0},
		{"RetryAfter without HasRetryAfter: backoff", &RetryPolicy{MaxRetries: 2}, 0, Outcome{Kind: Throttled, Status: 429, RetryAfter: 5 * time.Second}, true, 375 * time.Millisecond, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		retry, wait := tt.policy.Next(tt.taken, tt.o)
		inRange := wait == tt.wantMax || (wait > tt.wantMin && wait < tt.wantMax)
		if retry != tt.wantRetry || !inRange {
			t.Errorf("%s: Next(%d) = (%v, %v), want (%v, in (%v, %v])", tt.name, tt.taken, retry, wait, tt.wantRetry, tt.wantMin, tt.wantMax)
		}
	}
}

// TestBackoff checks min(0.5·2^n, 8 s) and the jitter's bounds at both ends:
// the SDKs subtract rand.Int63n(d/4), so the wait is in (0.75·d, d].
func TestBackoff(t *testing.T) {
	lowest := func(int64) int64 { return 0 }
	highest := func(k int64) int64 { return k - 1 }
	tests := []struct {
		n            int
		wantBase     time.Duration
		wantJittered time.Duration // with the largest jitter
	}{
		{-1, 500 * time.Millisecond, 375*time.Millisecond + 1},
		{0, 500 * time.Millisecond, 375*time.Millisecond + 1},
		{1, time.Second, 750*time.Millisecond + 1},
		{2, 2 * time.Second, 1500*time.Millisecond + 1},
		{3, 4 * time.Second, 3*time.Second + 1},
		{4, 8 * time.Second, 6*time.Second + 1},
		{5, 8 * time.Second, 6*time.Second + 1},
		{62, 8 * time.Second, 6*time.Second + 1},
		{1 << 30, 8 * time.Second, 6*time.Second + 1},
	}
	for _, tt := range tests {
		if got := Backoff(tt.n, lowest); got != tt.wantBase {
			t.Errorf("Backoff(%d) without jitter = %v, want %v", tt.n, got, tt.wantBase)
		}
		if got := Backoff(tt.n, highest); got != tt.wantJittered {
			t.Errorf("Backoff(%d) with the largest jitter = %v, want %v", tt.n, got, tt.wantJittered)
		}
	}
}

// TestRetryPolicyJitter checks that the seeded jitter stays in the SDKs'
// bounds, spreads over them, and repeats for a seed.
func TestRetryPolicyJitter(t *testing.T) {
	throttled := Outcome{Kind: Throttled, Status: 429}
	draw := func(seed int64, n int) []time.Duration {
		p := &RetryPolicy{MaxRetries: -1, Seed: seed}
		var waits []time.Duration
		for i := range n {
			_, w := p.Next(i%2, throttled)
			waits = append(waits, w)
		}
		return waits
	}
	bounds := [2][2]time.Duration{{375 * time.Millisecond, 500 * time.Millisecond}, {750 * time.Millisecond, time.Second}}
	a := draw(1, 2000)
	var lowest, highest [2]time.Duration
	lowest = [2]time.Duration{time.Hour, time.Hour}
	for i, w := range a {
		b := bounds[i%2]
		if w <= b[0] || w > b[1] {
			t.Fatalf("wait %d = %v, want in (%v, %v]", i, w, b[0], b[1])
		}
		lowest[i%2] = min(lowest[i%2], w)
		highest[i%2] = max(highest[i%2], w)
	}
	for k, b := range bounds {
		spread := (b[1] - b[0]) / 20
		if lowest[k] > b[0]+spread || highest[k] < b[1]-spread {
			t.Errorf("retry %d: waits span [%v, %v], want close to (%v, %v]", k, lowest[k], highest[k], b[0], b[1])
		}
	}
	if b := draw(1, 2000); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("seed 1 gave different jitter on a second run")
	}
	if c := draw(2, 2000); fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 1 and 2 gave the same jitter")
	}
}

// FuzzRetryPolicyNext checks the policy's invariants on any outcome: no
// retry past MaxRetries, none for a canceled call, the server's delay used
// verbatim (never negative), and otherwise a backoff in (0.75·d, d].
func FuzzRetryPolicyNext(f *testing.F) {
	f.Add(2, 0, int(Throttled), 429, int64(time.Second), true, 0)
	f.Add(2, 1, int(Overloaded), 529, int64(0), false, 0)
	f.Add(-1, 40, int(Failed), 0, int64(0), false, 0)
	f.Add(2, 0, int(Failed), 400, int64(-time.Second), true, 1)
	f.Add(2, 0, int(Success), 200, int64(0), false, 2)
	f.Add(2, 0, int(Quota), 429, int64(time.Second), true, 2)
	f.Fuzz(func(t *testing.T, maxRetries, taken, kind, status int, retryAfter int64, hasRetryAfter bool, shouldRetry int) {
		o := Outcome{Kind: Kind(kind), Status: status, RetryAfter: time.Duration(retryAfter), HasRetryAfter: hasRetryAfter}
		switch shouldRetry {
		case 1:
			o.ShouldRetry = ptr(false)
		case 2:
			o.ShouldRetry = ptr(true)
		}
		p := &RetryPolicy{MaxRetries: maxRetries, Seed: 1}
		retry, wait := p.Next(taken, o)
		switch {
		case !retry && wait != 0:
			t.Errorf("Next = (false, %v), want no wait without a retry", wait)
		case retry && maxRetries >= 0 && taken >= maxRetries:
			t.Errorf("Next(%d) with MaxRetries %d retried", taken, maxRetries)
		case retry && (o.Kind == Canceled || o.Kind == Abandoned || o.Kind == Quota):
			t.Errorf("Next retried a %v call", o.Kind)
		case retry != (Retryable(o) && (maxRetries < 0 || taken < maxRetries)):
			t.Errorf("Next retry = %v, disagrees with Retryable", retry)
		case retry && hasRetryAfter && wait != max(0, o.RetryAfter):
			t.Errorf("Next wait = %v, want the server's %v", wait, o.RetryAfter)
		case retry && !hasRetryAfter:
			d := Backoff(taken, func(int64) int64 { return 0 })
			if wait <= d*3/4 || wait > d || d > MaxBackoff {
				t.Errorf("Next(%d) wait = %v, want in (%v, %v]", taken, wait, d*3/4, d)
			}
		}
	})
}

// TestRetryPolicyForCall checks that a per-call policy keeps the fields, and
// that its jitter depends on the seed and the call alone.
func TestRetryPolicyForCall(t *testing.T) {
	base := &RetryPolicy{MaxRetries: 5, Requeue: true, Seed: 9}
	waits := func(p *RetryPolicy) []time.Duration {
		var ws []time.Duration
		for n := range 4 {
			_, w := p.Next(n, Outcome{Kind: Throttled, Status: 429})
			ws = append(ws, w)
		}
		return ws
	}
	a := base.ForCall(1)
	if a.MaxRetries != 5 || !a.Requeue {
		t.Errorf("ForCall(1) = MaxRetries %d, Requeue %v; want 5, true", a.MaxRetries, a.Requeue)
	}
	waits(base) // the shared source moves on; the per-call ones do not care
	wantA := fmt.Sprint(waits(a))
	tests := []struct {
		name string
		p    *RetryPolicy
		same bool // as call 1 with seed 9
	}{
		{"same seed, same call", base.ForCall(1), true},
		{"same seed, another call", base.ForCall(2), false},
		{"another seed, same call", (&RetryPolicy{MaxRetries: 5, Seed: 10}).ForCall(1), false},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(waits(tt.p)); (got == wantA) != tt.same {
			t.Errorf("%s: waits %v, call 1 with seed 9 had %v; want same = %v", tt.name, got, wantA, tt.same)
		}
	}
	if (*RetryPolicy)(nil).ForCall(1) != nil {
		t.Errorf("nil.ForCall(1) != nil")
	}
}
