package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// bareServer answers every request at once with a small Messages response:
// the "same bare server" both sides of the overhead benchmark hit.
func bareServer() *httptest.Server {
	body := []byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
}

// BenchmarkOverhead compares the engine (unbounded strategy, zero latency)
// with a bare net/http client loop at the same concurrency against the same
// bare server, interleaved round by round in the same run, and reports the
// ratio of their request rates (target >= 0.8):
//
//	go test -run '^$' -bench Overhead -benchtime 60x ./engine/
func BenchmarkOverhead(b *testing.B) {
	const (
		concurrency = 32
		perRound    = 1000
	)
	srv := bareServer()
	defer srv.Close()
	// The bare loop sends the very request the engine sends (same body and
	// headers), prebuilt: the difference is the engine, not the wire.
	proto := mustRequest(b, srv.URL)
	body, _ := io.ReadAll(proto.Body)

	bareTr := provider.NewTransport(concurrency)
	engTr := provider.NewTransport(concurrency)
	defer bareTr.CloseIdleConnections()
	defer engTr.CloseIdleConnections()
	bare := &http.Client{Transport: bareTr}
	client := &provider.Client{Provider: provider.Anthropic{}, BaseURL: srv.URL, APIKey: "k", HTTP: &http.Client{Transport: engTr}}
	req := provider.Request{Model: "m", MaxTokens: 1, Messages: []provider.Message{{Role: "user", Content: "hi"}}}

	bareRound := func() time.Duration {
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range concurrency {
			wg.Go(func() {
				for next.Add(1) <= perRound {
					r, _ := http.NewRequest(http.MethodPost, proto.URL.String(), bytes.NewReader(body))
					r.Header = proto.Header
					resp, err := bare.Do(r)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	engineRound := func() time.Duration {
		start := time.Now()
		sum, err := Run(context.Background(), Config{
			Client:   client,
			Strategy: strategies.NewUnbounded(),
			Workers:  concurrency,
		}, Generate(perRound, func(int) Item { return Item{Request: req} }))
		if err != nil || sum.Completed != perRound {
			b.Fatalf("engine round: %v, completed %d", err, sum.Completed)
		}
		return time.Since(start)
	}
	bareRound() // warm both connection pools
	engineRound()
	b.ReportAllocs()
	b.ResetTimer()
	// Each iteration is one pair of rounds, in alternating order; the
	// machine's load drifts, so the figure is the median of the pairs'
	// ratios, and the rates are totals.
	var bareT, engT time.Duration
	var ratios []float64
	for i := 0; b.Loop(); i++ {
		var bt, et time.Duration
		if i%2 == 0 {
			bt = bareRound()
			et = engineRound()
		} else {
			et = engineRound()
			bt = bareRound()
		}
		bareT, engT = bareT+bt, engT+et
		ratios = append(ratios, bt.Seconds()/et.Seconds())
	}
	n := float64(len(ratios) * perRound)
	b.ReportMetric(n/bareT.Seconds(), "bare-req/s")
	b.ReportMetric(n/engT.Seconds(), "engine-req/s")
	b.ReportMetric(median(ratios), "engine/bare")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func mustRequest(b *testing.B, url string) *http.Request {
	r, err := provider.Anthropic{}.NewRequest(context.Background(), url, "k", provider.Request{Model: "m", MaxTokens: 1, Messages: []provider.Message{{Role: "user", Content: "hi"}}}, 0)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// instantClient answers at once, without a network: it isolates the engine's
// own cost per item.
type instantClient struct{ inFlight, peak atomic.Int64 }

func (c *instantClient) Do(ctx context.Context, r provider.Request, n int) (provider.Response, strategies.Outcome) {
	v := c.inFlight.Add(1)
	for {
		p := c.peak.Load()
		if v <= p || c.peak.CompareAndSwap(p, v) {
			break
		}
	}
	runtime.Gosched()
	c.inFlight.Add(-1)
	return provider.Response{Text: "ok", Usage: strategies.Usage{InputTokens: 1, OutputTokens: 1}},
		strategies.Outcome{Kind: strategies.Success, Status: 200, Usage: strategies.Usage{InputTokens: 1, OutputTokens: 1}}
}

// BenchmarkRun100k runs 100,000 items at zero latency through the engine
// with a JSONL sink to io.Discard, and reports the peak live heap seen while
// it ran: it stays flat in the number of items because nothing keeps
// results (go test -run '^$' -bench Run100k -benchtime 3x ./engine/).
func BenchmarkRun100k(b *testing.B) {
	const items = 100_000
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		done := 0
		sum, err := Run(context.Background(), Config{
			Client:   &instantClient{},
			Strategy: strategies.NewUnbounded(),
			Workers:  256,
			Sinks:    []Sink{NewJSONL(io.Discard)},
			OnResult: func(Result) {
				if done++; done%10_000 == 0 {
					runtime.ReadMemStats(&ms)
					if ms.HeapAlloc > base {
						peak = max(peak, ms.HeapAlloc-base)
					}
				}
			},
		}, Generate(items, func(i int) Item {
			return Item{ID: fmt.Sprint(i), Request: provider.Request{MaxTokens: 1, Messages: []provider.Message{{Role: "user", Content: "hi"}}}}
		}))
		if err != nil || sum.Completed != items {
			b.Fatalf("run: %v, completed %d", err, sum.Completed)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), "ns/item")
}

// TestRunBoundedWorkers checks what bounds the engine's memory: however many
// items the source holds, no more than Workers are in progress at once.
func TestRunBoundedWorkers(t *testing.T) {
	c := &instantClient{}
	taken := 0
	sum, err := Run(context.Background(), Config{Client: c, Strategy: strategies.NewUnbounded(), Workers: 8, Resolution: -1},
		Generate(20_000, func(i int) Item {
			taken++
			return Item{Request: provider.Request{MaxTokens: 1}}
		}))
	if err != nil || sum.Completed != 20_000 || taken != 20_000 {
		t.Fatalf("run: %v, completed %d, taken %d", err, sum.Completed, taken)
	}
	if p := c.peak.Load(); p > 8 {
		t.Errorf("peak items in progress = %d, want <= Workers (8)", p)
	}
	if sum.Timeline != nil {
		t.Errorf("Timeline = %+v with Resolution < 0, want none", sum.Timeline)
	}
}
