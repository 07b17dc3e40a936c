package strategies

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestTokenBucketReserve steps the decision core through reservations at
// named instants: 1 request a second with a burst of 2, 1 token a second
// with a burst of 10.
func TestTokenBucketReserve(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	b := NewTokenBucket(TokenBucketConfig{RPM: 60, RequestBurst: 2, TPM: 60, TokenBurst: 10})
	steps := []struct {
		at         time.Duration
		tokens     int
		wantWait   Waits
		wantErr    error
		wantTokens float64 // in the token bucket after the step
	}{
		{at: 0, tokens: 5, wantWait: Waits{}, wantTokens: 5},
		{at: 0, tokens: 5, wantWait: Waits{}, wantTokens: 0},
		{at: 0, tokens: 1, wantWait: Waits{Slot: sec(1)}, wantTokens: -1},                 // request-bound
		{at: 0, tokens: 3, wantWait: Waits{Slot: sec(2), Tokens: sec(2)}, wantTokens: -4}, // token-bound
		{at: sec(10), tokens: 10, wantWait: Waits{Tokens: sec(4)}, wantTokens: -4},
		{at: sec(10), tokens: 11, wantErr: ErrExceedsBudget, wantTokens: -4},
		{at: sec(14), tokens: 0, wantWait: Waits{Slot: 0}, wantTokens: 0},
		{at: sec(30), tokens: 10, wantWait: Waits{}, wantTokens: 0},
	}
	for i, st := range steps {
		now := t0.Add(st.at)
		r, err := b.reserve(now, st.tokens)
		if !errors.Is(err, st.wantErr) {
			t.Errorf("step %d: reserve(t0+%v, %d) error = %v, want %v", i, st.at, st.tokens, err, st.wantErr)
		}
		if err == nil && r.wait != st.wantWait {
			t.Errorf("step %d: reserve(t0+%v, %d) wait = %+v, want %+v", i, st.at, st.tokens, r.wait, st.wantWait)
		}
		if got := b.tokensAt(now); got != st.wantTokens {
			t.Errorf("step %d: tokens at t0+%v = %v, want %v", i, st.at, got, st.wantTokens)
		}
	}
}

// TestTokenBucketCancel checks that a canceled reservation gives its room
// back to the bucket.
func TestTokenBucketCancel(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewTokenBucket(TokenBucketConfig{TPM: 60, TokenBurst: 10})
	b.reserve(t0, 10)
	r, _ := b.reserve(t0, 5)
	if got := b.tokensAt(t0); got != -5 {
		t.Fatalf("tokens after reserving 15 = %v, want -5", got)
	}
	b.cancel(t0.Add(time.Second), r)
	if got := b.tokensAt(t0.Add(time.Second)); got != 1 {
		t.Errorf("tokens 1 s after canceling 5 = %v, want 1", got)
	}
}

// TestTokenBucketPacing runs calls through Acquire in virtual time and checks
// when each starts.
func TestTokenBucketPacing(t *testing.T) {
	tests := []struct {
		name      string
		cfg       TokenBucketConfig
		cost      Cost
		calls     int
		wantStart []time.Duration
		wantWaits Stats // WaitSlot and WaitTokens
	}{
		{
			name:  "rpm 60 paces a second apart",
			cfg:   TokenBucketConfig{RPM: 60},
			calls: 4, wantStart: []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second},
			wantWaits: Stats{WaitSlot: 6 * time.Second},
		},
		{
			name:  "rpm 120 with a burst of 2",
			cfg:   TokenBucketConfig{RPM: 120, RequestBurst: 2},
			calls: 4, wantStart: []time.Duration{0, 0, 500 * time.Millisecond, time.Second},
			wantWaits: Stats{WaitSlot: 1500 * time.Millisecond},
		},
		{
			name: "tpm 6000 with calls of 1000 tokens",
			cfg:  TokenBucketConfig{TPM: 6000}, cost: Cost{InputTokens: 900, MaxTokens: 100},
			calls: 8, wantStart: []time.Duration{0, 0, 0, 0, 0, 0, 10 * time.Second, 20 * time.Second},
			wantWaits: Stats{WaitTokens: 30 * time.Second},
		},
		{
			name: "the tighter of rpm and tpm",
			cfg:  TokenBucketConfig{RPM: 60, TPM: 600, TokenBurst: 100}, cost: Cost{InputTokens: 40, MaxTokens: 10},
			calls: 4, wantStart: []time.Duration{0, 1 * time.Second, 5 * time.Second, 10 * time.Second},
			wantWaits: Stats{WaitSlot: 6 * time.Second, WaitTokens: 10 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := NewTokenBucket(tt.cfg)
				start := time.Now()
				got := make([]time.Duration, tt.calls)
				var wg sync.WaitGroup
				for i := range tt.calls {
					wg.Go(func() {
						Do(t.Context(), b, nil, tt.cost, func(context.Context, int) Outcome {
							got[i] = time.Since(start)
							return ok200
						})
					})
					synctest.Wait() // arrival order = index order
				}
				wg.Wait()
				if !equal(got, tt.wantStart) {
					t.Errorf("calls started at %v, want %v", got, tt.wantStart)
				}
				st := b.Stats()
				if st.WaitSlot != tt.wantWaits.WaitSlot || st.WaitTokens != tt.wantWaits.WaitTokens {
					t.Errorf("waits: slot %v, tokens %v; want %v, %v", st.WaitSlot, st.WaitTokens, tt.wantWaits.WaitSlot, tt.wantWaits.WaitTokens)
				}
				wantRate, wantDelay := 0.0, 0.0
				if tt.cfg.RPM > 0 {
					wantRate, wantDelay = tt.cfg.RPM/60, 60/tt.cfg.RPM
				}
				if st.Rate != wantRate || st.Delay != wantDelay {
					t.Errorf("Rate, Delay = %v, %v; want %v, %v", st.Rate, st.Delay, wantRate, wantDelay)
				}
			})
		})
	}
}

// TestTokenBucketTooCostly checks that a call no budget can hold is refused
// at once rather than left waiting forever.
func TestTokenBucketTooCostly(t *testing.T) {
	b := NewTokenBucket(TokenBucketConfig{TPM: 1000})
	_, err := b.Acquire(context.Background(), Cost{InputTokens: 900, MaxTokens: 200})
	if !errors.Is(err, ErrExceedsBudget) {
		t.Errorf("Acquire(1100 tokens, TPM 1000) error = %v, want ErrExceedsBudget", err)
	}
	if st := b.Stats(); st.Queued != 0 || st.Permits != 0 || st.Tokens != 1000 {
		t.Errorf("after a refused call: Stats = %+v, want nothing queued or granted, 1000 tokens", st)
	}
}
