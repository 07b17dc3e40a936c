package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/redistest"
)

func writeInput(t *testing.T, n int, extra string) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id": "t-%d", "prompt": "p %d"}`+"\n", i, i)
	}
	b.WriteString(extra)
	path := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func job(t *testing.T) string {
	c := redistest.Client(t)
	name := redistest.Name(t, "queue")
	redistest.DeleteAtEnd(t, c, "ratelab:batch:{"+name+"}:*")
	return name
}

// TestEnqueueOnce: the same input twice adds nothing; another input under
// the same name is refused; the status counts what is on the stream.
func TestEnqueueOnce(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	name := job(t)
	in := writeInput(t, 2500, "")
	res, err := Enqueue(ctx, c, name, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Added != 2500 || res.Items != 2500 {
		t.Fatalf("first enqueue: %+v, want created with 2500 added", res)
	}
	res, err = Enqueue(ctx, c, name, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || res.Added != 0 {
		t.Fatalf("second enqueue: %+v, want nothing added", res)
	}
	if n := c.XLen(ctx, keysOf(name).items).Val(); n != 2500 {
		t.Fatalf("stream holds %d entries, want 2500", n)
	}
	other := writeInput(t, 3, "")
	if _, err := Enqueue(ctx, c, name, other, nil); err == nil || !strings.Contains(err.Error(), "holds another input") {
		t.Fatalf("another input under the same name: %v, want refused", err)
	}
	st, err := Status(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Items != 2500 || st.Waiting != 2500 || st.Pending != 0 || st.Done != 0 || !st.Enqueued || st.State != "working" {
		t.Fatalf("status %+v", st)
	}
	if _, err := Status(ctx, c, name+"-none"); !errors.Is(err, ErrNoJob) {
		t.Fatalf("status of a job not enqueued: %v, want ErrNoJob", err)
	}
}

// TestEnqueueRefusesBadInput: an invalid or duplicate line is named, and
// nothing is enqueued.
func TestEnqueueRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	name := job(t)
	in := writeInput(t, 3, `{"id": "t-1", "prompt": "again"}`+"\n")
	_, err := Enqueue(ctx, c, name, in, nil)
	var ie *batch.InputErrors
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `items.jsonl:4: id: duplicate id "t-1" (first on line 2)`) {
		t.Fatalf("duplicate id: %v", err)
	}
	if n := c.Exists(ctx, keysOf(name).job).Val(); n != 0 {
		t.Fatal("a refused input created the job")
	}
	if err := CheckName("a{b}"); err == nil {
		t.Fatal("a name with braces (a hash tag) was accepted")
	}
}

// TestCollect: one id in two outputs is kept once (the success over the
// error), the merged file is in input order, and the total's percentiles
// come from the merged histograms, not averaged.
func TestCollect(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := func(i int, d time.Duration, failed bool) engine.Result {
		r := engine.Result{Index: i, ID: fmt.Sprintf("t-%d", i), Attempts: 1,
			Timings: engine.Timings{Start: t0, End: t0.Add(d)}}
		if failed {
			r.Err = &engine.ResultError{Status: 500, Type: "api_error", Message: "x"}
		}
		return r
	}
	write := func(name string, rs ...engine.Result) string {
		path := filepath.Join(dir, name)
		var b strings.Builder
		for _, r := range rs {
			j, _ := json.Marshal(r)
			b.Write(append(j, '\n'))
		}
		os.WriteFile(path, []byte(b.String()), 0o644)
		return path
	}
	// Worker a: three items of 1 s, one of them an error; worker b: that
	// item again, a success, and one of 3 s; a torn last line.
	a := write("a.jsonl", res(2, time.Second, false), res(0, time.Second, true), res(1, time.Second, false))
	b := write("b.jsonl", res(0, time.Second, false), res(3, 3*time.Second, false))
	f, _ := os.OpenFile(b, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"index": 4, "id": "t-4"`)
	f.Close()
	out := filepath.Join(dir, "all.jsonl")
	rep, err := Collect(CollectOptions{Outputs: []string{a, b}, Output: out, Items: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Items != 4 || rep.Duplicates != 1 || rep.Torn != 1 || rep.Missing != 1 {
		t.Fatalf("report: items %d, duplicates %d, torn %d, missing %d; want 4, 1, 1, 1", rep.Items, rep.Duplicates, rep.Torn, rep.Missing)
	}
	var got []string
	if _, err := engine.ReadJSONL(mustOpen(t, out), func(r engine.Result) error {
		if !r.OK() {
			t.Errorf("%s: the error was kept over the success", r.ID)
		}
		got = append(got, r.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "t-0,t-1,t-2,t-3" {
		t.Fatalf("merged order %v, want input order", got)
	}
	if rep.Total.EndToEnd.Count != 4 || rep.Total.EndToEnd.P50 > 1.01 || rep.Total.EndToEnd.P99 < 2.99 {
		t.Fatalf("merged end-to-end %+v: want count 4, p50 1 s, p99 3 s (averaging the workers' p50s would give 1.5 s)", rep.Total.EndToEnd)
	}
	if rep.Workers[0].Kept != 2 || rep.Workers[1].Kept != 2 {
		t.Fatalf("per-worker kept %d, %d; want 2, 2", rep.Workers[0].Kept, rep.Workers[1].Kept)
	}
	if _, err := Collect(CollectOptions{Outputs: []string{a, out}, Output: out}); err == nil {
		t.Fatal("collect into one of its inputs was accepted")
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
