package batch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
)

// apiMock serves a mock configured by yaml on an in-memory listener, in
// the current synctest bubble.
func apiMock(t *testing.T, yaml string) (*mock.Server, *http.Client) {
	t.Helper()
	cfg, err := mock.ParseConfig([]byte(yaml), "api_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv := mocktest.Start(t, cfg, mocktest.InMemory())
	return srv.Mock, srv.Client
}

func writeItems(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "items.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, `{"id":"t-%d","prompt":"ticket %d: my order has not arrived","max_tokens":8,"metadata":{"row":%d}}`+"\n", i, i, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// readOutput returns each id's result line count and how many are errors.
func readAPIOutput(t *testing.T, path string) (count map[string]int, failed int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count = map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Index int
			ID    string
			Text  string
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			}
			Error    *struct{ Type string }
			Metadata struct{ Row int }
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		count[r.ID]++
		if r.Error != nil {
			failed++
		} else if r.Text == "" || r.Usage.OutputTokens != 8 || r.ID != fmt.Sprintf("t-%d", r.Index) || r.Metadata.Row != r.Index {
			t.Fatalf("bad result line %s", sc.Bytes())
		}
	}
	return count, failed
}

func checkOnce(t *testing.T, path string, n int) (failed int) {
	t.Helper()
	count, failed := readAPIOutput(t, path)
	if len(count) != n {
		t.Errorf("%d ids in the output, want %d", len(count), n)
	}
	for id, c := range count {
		if c != 1 {
			t.Errorf("id %s %d times", id, c)
		}
	}
	return failed
}

func anthropicAPI(t *testing.T, hc *http.Client, input, output string) *API {
	p, _ := provider.ByName("anthropic")
	return &API{Input: input, Output: output, Model: "claude-haiku-4-5", Provider: p, BaseURL: "http://mock.test", HTTP: hc, PollMin: time.Minute, PollMax: 30 * time.Minute}
}

// TestAPIAnthropic10k: 10,000 items through the Message Batches API in
// three batches (4,000 at most each), 1 % of requests errored by the server
// and resubmitted: every id once, all succeeded, in the queue's exact time.
func TestAPIAnthropic10k(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, hc := apiMock(t, `
seed: 3
batches: {drain_rate: 10, startup: 1m, errored: 0.01}
`)
		dir := t.TempDir()
		in, out := writeItems(t, 10_000), filepath.Join(dir, "out.jsonl")
		a := anthropicAPI(t, hc, in, out)
		a.BatchSize, a.Resubmit = 4000, []string{"errored"}
		start := time.Now()
		sum, err := a.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if f := checkOnce(t, out, 10_000); f != 0 || sum.Completed != 10_000 {
			t.Errorf("%d failed, %d completed", f, sum.Completed)
		}
		errored := sum.Outcomes["errored"]
		if sum.Created < 4 || errored < 50 || errored > 150 || sum.Resubmitted < errored {
			t.Errorf("created %d batches, %d errored, %d resubmitted", sum.Created, errored, sum.Resubmitted)
		}
		st := srv.BatchStats()
		if st.Batches != sum.Created || st.Succeeded != 10_000 {
			t.Errorf("mock: %+v, run created %d", st, sum.Created)
		}
		// 10,000 + the resubmitted at 10 a second, after 1 min: at least
		// 1,000 s; polling adds at most its backoff's cap.
		if wall := time.Since(start); wall < 1000*time.Second || wall > 2*time.Hour {
			t.Errorf("wall %v", wall)
		}
		t.Logf("created %d, errored %d, resubmitted %d, wall %v", sum.Created, errored, sum.Resubmitted, time.Since(start))
	})
}

var errCrash = errors.New("crash between create and record")

// TestAPICrashWindow: a run stopped right after creating a batch, before
// recording its id, is resumed by adopting that batch (found in the list),
// not by creating it again.
func TestAPICrashWindow(t *testing.T) {
	for _, prov := range []string{"anthropic", "openai"} {
		t.Run(prov, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, hc := apiMock(t, `batches: {drain_rate: 20, startup: 1m}`)
				dir := t.TempDir()
				in, out := writeItems(t, 3000), filepath.Join(dir, "out.jsonl")
				p, _ := provider.ByName(prov)
				mk := func() *API {
					a := anthropicAPI(t, hc, in, out)
					a.Provider, a.BatchSize = p, 1000
					if prov == "openai" {
						a.Model, a.BaseURL = "gpt-4o-mini", "http://mock.test/v1"
					}
					return a
				}
				a := mk()
				created := 0
				a.afterCreate = func() error {
					if created++; created == 2 {
						return errCrash
					}
					return nil
				}
				if _, err := a.Run(context.Background()); !errors.Is(err, errCrash) {
					t.Fatalf("first run: %v", err)
				}
				sum, err := mk().Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if sum.Adopted != 1 || sum.Created != 1 {
					t.Errorf("resume adopted %d and created %d, want 1 and 1", sum.Adopted, sum.Created)
				}
				if st := srv.BatchStats(); st.Batches != 3 {
					t.Errorf("the mock has %d batches, want 3 (none created twice)", st.Batches)
				}
				if f := checkOnce(t, out, 3000); f != 0 {
					t.Errorf("%d failed", f)
				}
			})
		})
	}
}

// TestAPIExpired: a queue too slow for 24 hours expires part of a batch;
// recorded as errors without --resubmit, made in later batches with it.
func TestAPIExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// one request every 20 s after 1 min: (86,400 − 60) / 20 = 4,317 of 10,000 in the first day.
		srv, hc := apiMock(t, `batches: {drain_rate: 0.05, startup: 1m}`)
		dir := t.TempDir()
		in := writeItems(t, 10_000)
		out := filepath.Join(dir, "out.jsonl")
		a := anthropicAPI(t, hc, in, out)
		a.PollMax = time.Hour
		sum, err := a.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if f := checkOnce(t, out, 10_000); f != 10_000-4317 || sum.Outcomes["expired"] != 10_000-4317 || sum.FailedByType["expired"] != 10_000-4317 {
			t.Errorf("%d failed, outcomes %v", f, sum.Outcomes)
		}
		// Rerun with --retry-failed and resubmission of expired items:
		// the expired ones are made, over three more days.
		a = anthropicAPI(t, hc, in, out)
		a.RetryFailed, a.Resubmit, a.MaxRounds, a.PollMax = true, []string{"expired"}, 5, time.Hour
		sum, err = a.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if f := checkOnce(t, out, 10_000); f != 0 || sum.Resubmitted == 0 {
			t.Errorf("%d failed, %d resubmitted, outcomes %v", f, sum.Resubmitted, sum.Outcomes)
		}
		if st := srv.BatchStats(); st.Expired == 0 || st.Succeeded != 10_000 {
			t.Errorf("mock: %+v", st)
		}
	})
}

// TestAPIBatchGone: a recorded batch the API no longer knows (a restarted
// mock, a deleted batch) is answered 404 on the resume; its items are
// submitted again, and every id still ends up once.
func TestAPIBatchGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, hc1 := apiMock(t, `batches: {drain_rate: 10, startup: 1m}`)
		dir := t.TempDir()
		in, out := writeItems(t, 500), filepath.Join(dir, "out.jsonl")
		ctx, cancel := context.WithCancel(context.Background())
		a := anthropicAPI(t, hc1, in, out)
		a.OnEvent = func(e string) {
			if strings.HasPrefix(e, "created batch") {
				cancel() // stop once the batch is recorded
			}
		}
		if _, err := a.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("first run: %v", err)
		}
		srv2, hc2 := apiMock(t, `batches: {drain_rate: 10, startup: 1m}`)
		var events []string
		a = anthropicAPI(t, hc2, in, out)
		a.OnEvent = func(e string) { events = append(events, e) }
		sum, err := a.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if sum.Created != 1 || !strings.Contains(strings.Join(events, "\n"), "is gone (404)") || srv2.BatchStats().Batches != 1 {
			t.Errorf("created %d, events %q", sum.Created, events)
		}
		if f := checkOnce(t, out, 500); f != 0 {
			t.Errorf("%d failed", f)
		}
	})
}
