package strategies

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestPerProviderIsolation sends a burst to one provider and checks that it
// never holds up calls to another provider or another key.
func TestPerProviderIsolation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewPerProvider(PerProviderConfig{Limits: map[string]int{"anthropic": 2, "openai": 3}})
		start := time.Now()
		type call struct {
			provider, key string
			n             int
			wantEnd       time.Duration // of the last call
		}
		calls := []call{
			{"anthropic", "a", 10, 5 * time.Second}, // the burst: 5 rounds of 2
			{"openai", "o", 3, time.Second},         // one round, alongside it
			{"anthropic", "b", 2, time.Second},      // another key: its own limit
			{"gemini", "g", 7, time.Second},         // no limit, no default
		}
		ends := make([]time.Duration, len(calls))
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for i, c := range calls {
			for range c.n {
				wg.Go(func() {
					Do(t.Context(), s, nil, Cost{Provider: c.provider, Key: c.key}, script(time.Second, nil, ok200))
					mu.Lock()
					ends[i] = max(ends[i], time.Since(start))
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		for i, c := range calls {
			if ends[i] != c.wantEnd {
				t.Errorf("%s/%s: %d calls ended at %v, want %v", c.provider, c.key, c.n, ends[i], c.wantEnd)
			}
		}
		tests := []struct {
			provider, key string
			want          Stats
		}{
			{"anthropic", "a", Stats{Limit: 2, Permits: 10, Attempts: 10, Successes: 10, WaitSlot: (0 + 2 + 4 + 6 + 8) * time.Second}},
			{"openai", "o", Stats{Limit: 3, Permits: 3, Attempts: 3, Successes: 3}},
			{"anthropic", "b", Stats{Limit: 2, Permits: 2, Attempts: 2, Successes: 2}},
			{"gemini", "g", Stats{Limit: 0, Permits: 7, Attempts: 7, Successes: 7}},
			{"openai", "never", Stats{}},
		}
		for _, tt := range tests {
			if got := s.StatsFor(tt.provider, tt.key); got != tt.want {
				t.Errorf("StatsFor(%s, %s) = %+v, want %+v", tt.provider, tt.key, got, tt.want)
			}
		}
		want := Stats{Limit: 0, Permits: 22, Attempts: 22, Successes: 22, WaitSlot: 20 * time.Second}
		if got := s.Stats(); got != want {
			t.Errorf("Stats() = %+v, want %+v", got, want)
		}
	})
}

// TestPerProviderLimit checks Stats.Limit: the sum of the limits of the
// providers and keys seen, 0 once any of them is unlimited.
func TestPerProviderLimit(t *testing.T) {
	s := NewPerProvider(PerProviderConfig{Limits: map[string]int{"anthropic": 10, "openai": 30}, Default: 5})
	steps := []struct {
		provider, key string
		want          float64
	}{
		{"anthropic", "k1", 10},
		{"openai", "k1", 40},
		{"anthropic", "k2", 50},
		{"anthropic", "k1", 50},
		{"gemini", "k1", 55},
	}
	for _, st := range steps {
		p, err := s.Acquire(context.Background(), Cost{Provider: st.provider, Key: st.key})
		if err != nil {
			t.Fatalf("Acquire(%s, %s): %v", st.provider, st.key, err)
		}
		p.Done(ok200)
		if got := s.Stats().Limit; got != st.want {
			t.Errorf("after %s/%s: Limit = %v, want %v", st.provider, st.key, got, st.want)
		}
	}
	u := NewPerProvider(PerProviderConfig{Limits: map[string]int{"anthropic": 10}})
	for _, provider := range []string{"anthropic", "openai"} {
		p, _ := u.Acquire(context.Background(), Cost{Provider: provider})
		p.Done(ok200)
	}
	if got := u.Stats().Limit; got != 0 {
		t.Errorf("with an unlimited provider: Limit = %v, want 0", got)
	}
}

// TestAddStats checks that addStats sums every field of Stats, so that a
// field added to Stats cannot be forgotten by PerProvider.
func TestAddStats(t *testing.T) {
	var one Stats
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Float64:
			f.SetFloat(1)
		case reflect.String:
			f.SetString("max: 1")
		default:
			t.Fatalf("Stats.%s has kind %v: teach TestAddStats and addStats", v.Type().Field(i).Name, f.Kind())
		}
	}
	sum := reflect.ValueOf(addStats(one, one))
	for i := range sum.NumField() {
		f := sum.Field(i)
		got := f.Interface()
		var two any
		switch f.Kind() {
		case reflect.Int:
			two = 2
		case reflect.Int64:
			two = reflect.ValueOf(int64(2)).Convert(f.Type()).Interface()
		case reflect.Float64:
			two = 2.0
		case reflect.String:
			two = "max: 1" // the same bound, once
		}
		if got != two {
			t.Errorf("addStats: %s = %v, want %v", sum.Type().Field(i).Name, got, two)
		}
	}
}
