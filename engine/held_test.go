package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/internal/fakeclient"
	"github.com/ratelab/ratelab/strategies"
)

// TestHeld: with Config.Held, an item it says the run no longer holds is
// not attempted: no call reaches the client, its permit is released
// unused, and no Result is delivered, nor is it counted as canceled.
func TestHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &fakeclient.Client{}
		var mu sync.Mutex
		asked := map[string]int{}
		var got []string
		sem := strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 2})
		cfg := Config{
			Client: c, Strategy: sem, Resolution: -1,
			Retry:    &strategies.RetryPolicy{MaxRetries: 2},
			OnResult: func(r Result) { got = append(got, r.ID) },
			Held: func(index int, id string) bool {
				mu.Lock()
				defer mu.Unlock()
				asked[id]++
				if id != fmt.Sprint("i", index) {
					t.Errorf("Held(%d, %q): the index and id of another item", index, id)
				}
				return index%2 == 0 // the odd items were taken over by another worker
			},
		}
		items := make([]Item, 6)
		for i := range items {
			items[i] = Item{Index: i, ID: fmt.Sprint("i", i), Request: testRequest(fmt.Sprint("p", i))}
		}
		sum, err := Run(context.Background(), cfg, Slice(items))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if fmt.Sprint(got) != "[i0 i2 i4]" {
			t.Errorf("results %v, want the even items only", got)
		}
		for i := range items {
			if want := 1 - i%2; c.Seen(fmt.Sprint("p", i)) != want {
				t.Errorf("item %d: %d calls, want %d", i, c.Seen(fmt.Sprint("p", i)), want)
			}
			if asked[fmt.Sprint("i", i)] != 1 {
				t.Errorf("item %d: Held asked %d times, want once (before its one attempt)", i, asked[fmt.Sprint("i", i)])
			}
		}
		st := sem.Stats()
		if sum.Completed != 3 || sum.Failed != 0 || sum.Canceled != 0 || sum.Incomplete || sum.Items != 6 || sum.Attempts != 3 {
			t.Errorf("summary: %d items, %d completed, %d failed, %d canceled, %d attempts, incomplete %v; want 6, 3, 0, 0, 3, false",
				sum.Items, sum.Completed, sum.Failed, sum.Canceled, sum.Attempts, sum.Incomplete)
		}
		if st.Permits != 6 || st.Attempts != 3 || st.Cancels != 3 || st.InFlight != 0 {
			t.Errorf("semaphore: %d permits, %d attempts, %d cancels, %d in flight; want 6, 3, 3 (the released ones), 0", st.Permits, st.Attempts, st.Cancels, st.InFlight)
		}
	})
}

// TestHeldBeforeRetry: Held is asked again before a retry; an item lost
// after a throttled first attempt makes no retry and delivers nothing.
func TestHeldBeforeRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &fakeclient.Client{RetryAfter: time.Second, Fail: func(_ string, n int) (int, string) {
			if n == 0 {
				return 429, "rate_limit_error"
			}
			return 0, ""
		}}
		asks := 0
		delivered := 0
		cfg := Config{
			Client: c, Strategy: strategies.NewUnbounded(), Resolution: -1,
			Retry:    &strategies.RetryPolicy{MaxRetries: 2},
			OnResult: func(Result) { delivered++ },
			Held:     func(int, string) bool { asks++; return asks == 1 },
		}
		start := time.Now()
		sum, err := Run(context.Background(), cfg, Slice([]Item{{Index: 0, ID: "a", Request: testRequest("p")}}))
		if err != nil {
			t.Fatal(err)
		}
		if asks != 2 || c.Seen("p") != 1 || delivered != 0 || sum.Attempts != 1 || sum.Throttled != 1 {
			t.Errorf("Held asked %d times, %d calls, %d results, %d attempts, %d 429s; want 2, 1, 0, 1, 1", asks, c.Seen("p"), delivered, sum.Attempts, sum.Throttled)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("the run took %v, want the retry-after, 1s, before the retry that Held stopped", d)
		}
	})
}
