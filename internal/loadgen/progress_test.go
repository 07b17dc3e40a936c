package loadgen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/strategies"
)

// progressScenario lasts 24 s of virtual time for its first strategy (400
// calls of exactly 0.3 s, 5 at a time) and 12 s for its second (10 at a
// time), with no 429: the counts at every 10 s are known exactly.
const progressScenario = `items: 400
request: {max_tokens: 100}
server:
  output: {length: max_tokens}
  latency: {per_token: 3ms}
  limits: {max_concurrent: 10}
strategies:
  - {name: five, kind: semaphore, n: 5}
  - {name: ten, kind: semaphore, n: 10}
`

// TestProgressPlain: with a writer that is not a terminal, a run writes one
// plain line every 10 s of each strategy (in virtual time), naming the
// strategy's place in the run and the counts at that instant, and nothing
// else.
func TestProgressPlain(t *testing.T) {
	s, err := Parse("p.yaml", []byte(progressScenario))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		_, err = Run(t.Context(), s, Options{Listen: ListenMemory, Progress: &Progress{W: &buf}})
	})
	if err != nil {
		t.Fatal(err)
	}
	// five: 33 rounds of 0.3 s are done at 9.9 s, 66 at 19.8 s; ten: 33
	// rounds of 10 at 9.9 s. ETA = elapsed × left / done.
	want := "strategy 1 of 2, five: 165/400 done, 5 in flight, 0 429s, 10s elapsed, ETA 14s\n" +
		"strategy 1 of 2, five: 330/400 done, 5 in flight, 0 429s, 20s elapsed, ETA 4s\n" +
		"strategy 2 of 2, ten: 330/400 done, 10 in flight, 0 429s, 10s elapsed, ETA 2s\n"
	if got := buf.String(); got != want {
		t.Errorf("progress:\n%s\nwant:\n%s", got, want)
	}
}

// TestProgressPlainOnly: the position counts the strategies --only selects.
func TestProgressPlainOnly(t *testing.T) {
	s, err := Parse("p.yaml", []byte(progressScenario))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		_, err = Run(t.Context(), s, Options{Listen: ListenMemory, Only: []string{"ten"}, Progress: &Progress{W: &buf, Every: 5 * time.Second}})
	})
	if err != nil {
		t.Fatal(err)
	}
	// 16 rounds of 10 are done at 4.8 s, 33 at 9.9 s.
	want := "strategy 1 of 1, ten: 160/400 done, 10 in flight, 0 429s, 5s elapsed, ETA 8s\n" +
		"strategy 1 of 1, ten: 330/400 done, 10 in flight, 0 429s, 10s elapsed, ETA 2s\n"
	if got := buf.String(); got != want {
		t.Errorf("progress:\n%s\nwant:\n%s", got, want)
	}
}

// TestProgressLive: on a terminal the line is redrawn in place, names the
// strategy's place and counts, and is cleared at the end.
func TestProgressLive(t *testing.T) {
	src := "items: 40\nrequest: {max_tokens: 100}\nserver: {limits: {max_concurrent: 5, retry_after: 1s}}\n" +
		"strategies: [{name: unbounded, kind: unbounded, max_retries: 10}]\n"
	s, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		_, err = Run(t.Context(), s, Options{Listen: ListenMemory, Progress: &Progress{W: &buf, Live: true}})
	})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, w := range []string{"\r\x1b[Kstrategy 1 of 1, unbounded: ", "/40 done", "in flight", "429s", "elapsed, ETA "} {
		if !strings.Contains(out, w) {
			t.Errorf("progress output lacks %q: %q", w, out)
		}
	}
	if strings.Contains(out, "\n") {
		t.Errorf("live progress wrote a newline: %q", out)
	}
	if !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("progress line not cleared at the end: %q", out[max(0, len(out)-20):])
	}
}

// fakeStats is a strategy with a fixed number of calls in flight.
type fakeStats struct {
	strategies.Strategy
	inFlight int
}

func (f fakeStats) Stats() strategies.Stats { return strategies.Stats{InFlight: f.inFlight} }

// TestProgressCounts: the hooks count finished items and 429 attempts (not
// other failures), and the line shows them with the estimate of the time
// left, which is absent before the first item and once all are done.
func TestProgressCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		p := startProgress(&Progress{W: &buf}, position{i: 3, n: 8}.label("semaphore(20)"), 100, fakeStats{inFlight: 7})
		// Each change comes after the line of the same instant is written.
		time.Sleep(10 * time.Second)
		synctest.Wait() // the first line: nothing done
		for range 3 {
			p.attempt(engine.Attempt{Outcome: strategies.Outcome{Kind: strategies.Throttled, Status: 429}})
		}
		p.attempt(engine.Attempt{Outcome: strategies.Outcome{Kind: strategies.Overloaded, Status: 529}})
		p.attempt(engine.Attempt{Outcome: strategies.Outcome{Kind: strategies.Success, Status: 200}})
		for range 25 {
			p.result(engine.Result{})
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		for range 75 {
			p.result(engine.Result{})
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		p.stop()
		want := "strategy 3 of 8, semaphore(20): 0/100 done, 7 in flight, 0 429s, 10s elapsed\n" +
			"strategy 3 of 8, semaphore(20): 25/100 done, 7 in flight, 3 429s, 20s elapsed, ETA 1m0s\n" +
			"strategy 3 of 8, semaphore(20): 100/100 done, 7 in flight, 3 429s, 30s elapsed\n"
		if got := buf.String(); got != want {
			t.Errorf("progress:\n%s\nwant:\n%s", got, want)
		}
	})
}

// lineWatch is a progress writer that creates the file go once a line
// containing want has been written.
type lineWatch struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	want   string
	goFile string
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		if err := os.WriteFile(w.goFile, nil, 0o644); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// TestProgressCommandRow: a command row's progress comes from the embedded
// mock's account of the program's calls. The program makes two calls, each
// refused once with a 429 (scripted) and then answered, and waits until a
// progress line has shown exactly that: the line is the server's count, at
// a moment the test chooses, with no timing involved.
func TestProgressCommandRow(t *testing.T) {
	dir := t.TempDir()
	client := `import json, os, time, urllib.error, urllib.request
for call in range(2):
    for attempt in range(2):
        req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
            data=json.dumps({"model": os.environ["RATELAB_MODEL"], "max_tokens": 5,
                             "messages": [{"role": "user", "content": "hi"}]}).encode(),
            headers={"content-type": "application/json", "anthropic-version": "2023-06-01",
                     "x-api-key": os.environ["ANTHROPIC_API_KEY"],
                     "idempotency-key": "call-%d" % call, "x-stainless-retry-count": str(attempt)})
        try:
            urllib.request.urlopen(req).read()
        except urllib.error.HTTPError as e:
            if e.code != 429:
                raise
while not os.path.exists("go-on"):
    time.sleep(0.005)
`
	if err := os.WriteFile(filepath.Join(dir, "client.py"), []byte(client), 0o644); err != nil {
		t.Fatal(err)
	}
	s := commandScenario(t, dir, "items: 5\nserver: {faults: {script: [{attempts: 1, status: 429}]}}\n", `
  - {name: py, kind: command, command: [python3, client.py], timeout: 1m, expect: {exit_code: 0}}
`)
	w := &lineWatch{want: "strategy 1 of 1, py: 2/5 done, 0 in flight, 2 429s, ", goFile: filepath.Join(dir, "go-on")}
	rep, err := Run(t.Context(), s, Options{Progress: &Progress{W: w, Every: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Command.ExitCode != 0 || r.Completed != 2 || r.Throttled != 2 {
		t.Fatalf("row: exit %d, %d completed, %d 429s; want 0, 2, 2\n%s", r.Command.ExitCode, r.Completed, r.Throttled, r.Command.StderrTail)
	}
	out := w.buf.String()
	if !strings.Contains(out, w.want) {
		t.Errorf("progress never showed %q:\n%s", w.want, out)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(l, "strategy 1 of 1, py: ") {
			t.Errorf("progress line %q", l)
		}
	}
}
