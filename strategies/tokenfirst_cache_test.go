package strategies

import (
	"testing"
	"time"
)

// TestTokenFirstCacheAccounting steps token-first's accounting of a cached
// prompt through its budget at named instants: 6,000 tokens a minute (100 a
// second), calls of a 4,000-token cached system prompt, 5 more input
// tokens and max_tokens 50. A call reserves Cost.Tokens() — its uncached
// input and max_tokens — and settles to settledUsage: a write counts its
// cache_creation_input_tokens, a read not its cache_read_input_tokens.
func TestTokenFirstCacheAccounting(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	write := Usage{InputTokens: 5, CacheCreationInputTokens: 4000, OutputTokens: 50}
	read := Usage{InputTokens: 5, CacheReadInputTokens: 4000, OutputTokens: 50}
	blind := Cost{InputTokens: 4005, MaxTokens: 50}
	learned := Cost{InputTokens: 4005, CachedInputTokens: 4000, MaxTokens: 50}

	b := newBudget(t0, 6000, 6000)
	claims := map[string]*reservation{}
	steps := []struct {
		at      time.Duration
		name    string
		cost    *Cost  // reserve cost.Tokens() for name
		usage   *Usage // or settle name's success with this usage
		granted []string
		next    time.Duration
		tokens  float64
	}{
		// The first call knows nothing of the cache: it reserves it all.
		{0, "a", &blind, nil, []string{"a"}, 0, 1945},
		// It wrote the prefix: 4,055 tokens counted, as reserved.
		{ms(2000), "a", nil, &write, nil, 0, 2145},
		// The next knows the prefix is cached: it reserves 5 + 50.
		{ms(2000), "b", &learned, nil, []string{"b"}, 0, 2090},
		{ms(2250), "b", nil, &read, nil, 0, 2115},
		// A call estimated blind waits for 4,055 tokens, 19.4 s of refill,
		// and a learned call behind it waits too: the line is FIFO.
		{ms(2250), "c", &blind, nil, nil, ms(19400), 2115},
		{ms(2250), "d", &learned, nil, nil, ms(19400), 2115},
		{ms(21650), "", nil, nil, []string{"c"}, ms(550), 0},
		// c read the prefix: 4,000 of its 4,055 go back, and d starts.
		{ms(21900), "c", nil, &read, []string{"d"}, 0, 3970},
	}
	for i, st := range steps {
		now := t0.Add(st.at)
		switch {
		case st.cost != nil:
			r, err := b.reserve(now, st.cost.Tokens())
			if err != nil {
				t.Fatalf("step %d: reserve: %v", i, err)
			}
			claims[st.name] = r
		case st.usage != nil:
			r := claims[st.name]
			b.settle(now, r.n, settledUsage(Outcome{Kind: Success, Usage: *st.usage}, r.n))
		}
		got, next := b.admit(now)
		var names []string
		for _, r := range got {
			for name, c := range claims {
				if c == r {
					names = append(names, name)
				}
			}
		}
		if !equal(names, st.granted) || next != st.next {
			t.Errorf("step %d (%s at t0+%v): granted %v, next %v; want %v, %v", i, st.name, st.at, names, next, st.granted, st.next)
		}
		if got := b.available(now); got != st.tokens {
			t.Errorf("step %d (%s at t0+%v): tokens %v, want %v", i, st.name, st.at, got, st.tokens)
		}
	}
}
