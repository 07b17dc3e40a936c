package strategies

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestAdaptiveSpentOutputBudget checks, in virtual time, what follows a 429
// for Anthropic's output-token budget (100,000 a minute: 1,666.7 a second)
// refusing a call of max_tokens 300, with the headers the API sends: output
// tokens remaining 0, their reset 2 s away (when the bucket is full again)
// and retry-after 1 s (whole seconds). The next call goes as soon as the
// budget has refilled its 300 tokens, 180 ms later, and the ones after it
// (answers of 300 tokens, none given back) every 180 ms: not at the reset, nor after the retry-after. The refusal
// is the rate's: no gate closes, no limit is learned and the window keeps
// its size.
func TestAdaptiveSpentOutputBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			evMu   sync.Mutex
			events []Event
		)
		a := NewAdaptive(AdaptiveConfig{Initial: 4}, WithObserver(func(e Event) {
			evMu.Lock()
			events = append(events, e)
			evMu.Unlock()
		}))
		call := Cost{Provider: "anthropic", Key: Fingerprint("a"), InputTokens: 600, MaxTokens: 300}
		start := time.Now()
		reset := func(d time.Duration) time.Time { return start.Add(d) }

		p, err := a.Acquire(t.Context(), call)
		if err != nil {
			t.Fatal(err)
		}
		p.Done(Outcome{Kind: Throttled, Status: 429, RetryAfter: time.Second, HasRetryAfter: true,
			Limits: Limits{
				Requests:     Limit{Limit: 1000, Remaining: 16, Reset: reset(time.Second)},
				InputTokens:  Limit{Limit: 500000, Remaining: 8000, Reset: reset(time.Second)},
				OutputTokens: Limit{Limit: 100000, Remaining: 0, Reset: reset(2 * time.Second)},
				Tokens:       Limit{Limit: 600000, Remaining: 8000, Reset: reset(2 * time.Second)},
			}})
		if st := a.State(call.Provider, call.Key); st.Limit != 0 {
			t.Errorf("learned limit %d, want none: the refusal is the output budget's", st.Limit)
		}
		if st := a.Stats(); st.Limit < 4 {
			t.Errorf("Stats.Limit = %v after the refusal, want at least 4 (the window is not cut)", st.Limit)
		}
		// Stats.Tokens is the scarcest token budget: the output one, spent.
		if st := a.Stats(); st.Tokens != 0 {
			t.Errorf("Stats.Tokens = %v after the refusal, want 0 (the output budget is spent)", st.Tokens)
		}

		for k := 1; k <= 4; k++ {
			p, err := a.Acquire(t.Context(), call)
			if err != nil {
				t.Fatal(err)
			}
			want := time.Duration(k) * 180 * time.Millisecond
			if got := time.Since(start); got < want || got > want+time.Microsecond {
				t.Errorf("call %d admitted %v after the refusal, want %v (300 tokens of refill each)", k, got, want)
			}
			// Answers of max_tokens: nothing given back.
			p.Done(Outcome{Kind: Success, Status: 200, Usage: Usage{InputTokens: 600, OutputTokens: 300}})
		}
		if st := a.Stats(); st.WaitRetryAfter != 0 {
			t.Errorf("Stats.WaitRetryAfter = %v, want 0: no gate", st.WaitRetryAfter)
		}
		// A second later the output budget, still the scarcest (1.7 % of
		// it, against 4.0 % of the input one and 3.6 % of the combined),
		// holds a second of refill: 1,666.7 tokens.
		time.Sleep(time.Second)
		if st := a.Stats(); st.Tokens < 1666 || st.Tokens > 1667 {
			t.Errorf("Stats.Tokens = %v a second after the last call, want 1,666.7 (the output budget's refill)", st.Tokens)
		}
		evMu.Lock()
		defer evMu.Unlock()
		for _, e := range events {
			if e.Type == EventGateClose {
				t.Errorf("event %+v: the gate closed for a spent budget the copy paces", e)
			}
		}
	})
}

// TestBudgetCopySet checks how a copy of a budget narrows what it knows of
// the server's level from the headers' ranges (a rounded count is a range).
func TestBudgetCopySet(t *testing.T) {
	tests := []struct {
		name                string
		tokens, slack       float64 // before
		lo, hi              float64 // what the headers say
		burst               float64
		wantTokens, wantTop float64
		wantAdjusted        float64
	}{
		{"overlapping ranges narrow", 0, 1000, 500, 1500, 5000, 500, 1000, 500},
		{"a range inside the copy's", 0, 1000, 200, 400, 5000, 200, 400, 200},
		{"a disjoint range replaces the copy's", 0, 100, 500, 600, 5000, 500, 600, 500},
		{"a range below the copy's replaces it", 800, 200, 100, 300, 5000, 100, 300, -700},
		{"capped at the burst", 0, 1000, 900, 1900, 950, 900, 950, 900},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &budgetCopy{budget: budget{rate: 1, burst: tt.burst, tokens: tt.tokens, last: stepT0}, slack: tt.slack}
			b.set(stepT0, tt.lo, tt.hi)
			if b.tokens != tt.wantTokens || b.tokens+b.slack != tt.wantTop || b.adjusted != tt.wantAdjusted {
				t.Errorf("set(%v, %v) on [%v, %v]: [%v, %v] adjusted %v, want [%v, %v] adjusted %v",
					tt.lo, tt.hi, tt.tokens, tt.tokens+tt.slack, b.tokens, b.tokens+b.slack, b.adjusted,
					tt.wantTokens, tt.wantTop, tt.wantAdjusted)
			}
		})
	}
}

// TestAdaptiveTokensSumKeys: Stats.Tokens sums the keys' token budgets,
// each key's as its copy of the published one holds it: two keys whose
// responses show 30,000 and 10,000 input tokens left hold 40,000.
func TestAdaptiveTokensSumKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := NewAdaptive(AdaptiveConfig{Initial: 4})
		for _, k := range []struct {
			key  string
			left int64
		}{{"a", 30000}, {"b", 10000}} {
			p, err := a.Acquire(t.Context(), Cost{Provider: "anthropic", Key: Fingerprint(k.key), InputTokens: 100})
			if err != nil {
				t.Fatal(err)
			}
			p.Done(Outcome{Kind: Success, Status: 200, Usage: Usage{InputTokens: 100},
				Limits: Limits{InputTokens: Limit{Limit: 60000, Remaining: k.left}}})
		}
		if st := a.Stats(); st.Tokens != 40000 {
			t.Errorf("Stats.Tokens = %v with 30,000 and 10,000 input tokens left on two keys, want 40,000", st.Tokens)
		}
	})
}
