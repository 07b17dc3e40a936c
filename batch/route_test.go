package batch

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/fakeclient"
	"github.com/ratelab/ratelab/strategies"
)

// fakeQueue hands out its lines once each, then the lines of again once
// Held has said it no longer holds them; it implements QueueHolder, Held
// saying no, once, for the lines in lose.
type fakeQueue struct {
	lines [][]byte
	again []int

	mu       sync.Mutex
	next     int
	lose     map[int]bool
	lost     map[int]chan struct{}
	recorded map[int]int
}

func (q *fakeQueue) Start(context.Context, string, *os.File) error { return nil }
func (q *fakeQueue) Skip(int, string)                              {}
func (q *fakeQueue) Stop(error)                                    {}

func (q *fakeQueue) Next(ctx context.Context) (int, []byte, error) {
	q.mu.Lock()
	i := q.next
	q.next++
	q.mu.Unlock()
	switch {
	case i < len(q.lines):
		return i + 1, q.lines[i], nil
	case i < len(q.lines)+len(q.again):
		line := q.again[i-len(q.lines)]
		select { // handed out again only once this worker has dropped it
		case <-q.lost[line]:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
		return line, q.lines[line-1], nil
	}
	return 0, nil, io.EOF
}

func (q *fakeQueue) Recorded(line int, _ engine.Result) {
	q.mu.Lock()
	q.recorded[line]++
	q.mu.Unlock()
}

func (q *fakeQueue) Held(line int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lose[line] {
		delete(q.lose, line)
		close(q.lost[line])
		return false
	}
	return true
}

// TestBatchRoutesQueue: a batch whose items come from a queue sends each
// to the client and strategy of the provider its metadata names (odd
// lines: openai, a route; even lines: the batch's own anthropic); an item
// the queue says this worker no longer holds is dropped before its call
// (no call, no result, counted as lost), and made when it comes back.
func TestBatchRoutesQueue(t *testing.T) {
	const n = 20
	q := &fakeQueue{lose: map[int]bool{3: true, 4: true}, again: []int{3},
		lost: map[int]chan struct{}{3: make(chan struct{}), 4: make(chan struct{})}, recorded: map[int]int{}}
	for i := 1; i <= n; i++ {
		md := ""
		if i%2 == 1 {
			md = `, "metadata": {"provider": "openai", "model": "gpt-x"}`
		}
		q.lines = append(q.lines, []byte(fmt.Sprintf(`{"id": "i%d", "prompt": "p%d"%s}`, i, i, md)))
	}
	own, routed := &fakeclient.Client{}, &fakeclient.Client{}
	routedSem := strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 3})
	var routesMade []string
	b := &Batch{Output: filepath.Join(t.TempDir(), "out.jsonl"), Model: "claude-x", Queue: q, Provider: "anthropic",
		Routes: func(name string) (*Route, error) {
			routesMade = append(routesMade, name)
			return &Route{Client: routed, Strategy: routedSem, Model: "unused: the lines name theirs"}, nil
		},
		Config: engine.Config{Client: own, Strategy: strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 2})}}
	sum, err := b.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		want := 1
		if i == 4 {
			want = 0 // dropped, and not handed out again: another worker's
		}
		if q.recorded[i] != want {
			t.Errorf("line %d recorded %d times, want %d", i, q.recorded[i], want)
		}
		client, other := own, routed
		if i%2 == 1 {
			client, other = routed, own
		}
		if client.Seen(fmt.Sprint("p", i)) != want || other.Seen(fmt.Sprint("p", i)) != 0 {
			t.Errorf("line %d: %d calls to its provider's client, %d to the other; want %d, 0", i, client.Seen(fmt.Sprint("p", i)), other.Seen(fmt.Sprint("p", i)), want)
		}
	}
	if strings.Join(routesMade, ",") != "openai" {
		t.Errorf("routes made: %q, want openai once", routesMade)
	}
	if sum.Lost != 2 || sum.Completed != n-1 || sum.Providers["openai"].Completed != 10 || sum.Providers["anthropic"].Completed != 9 {
		t.Errorf("summary: lost %d, completed %d, by provider openai %+v anthropic %+v; want 2, %d, 10, 9",
			sum.Lost, sum.Completed, sum.Providers["openai"], sum.Providers["anthropic"], n-1)
	}
	if st := routedSem.Stats(); st.Attempts != 10 || st.Cancels != 1 {
		t.Errorf("the route's strategy: %d attempts, %d released unused; want 10, 1 (line 3's first)", st.Attempts, st.Cancels)
	}
}
