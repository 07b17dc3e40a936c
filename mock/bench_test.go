package mock_test

import (
	"bytes"
	"fmt"
	"github.com/ratelab/ratelab/internal/ssetext"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
)

// The benchmarks below produce the figures of docs/performance.md
// section. Each compares the mock with a baseline measured in the same run,
// interleaved, because this machine is too noisy for absolute figures: only
// the ratios mean something. Run them with
//
//	go test -run '^$' -bench . -benchtime 1x ./mock/
//
// Every benchmark does a fixed amount of work per iteration, so -benchtime 1x
// bounds its time.

const (
	benchModel = "claude-sonnet-4-5"
	// benchWorkers is the number of concurrent keep-alive clients of the
	// throughput benchmark.
	benchWorkers = 32
)

// startTCP serves h on a fresh loopback port and returns its base URL and a
// function that stops the server.
func startTCP(b *testing.B, h http.Handler) (string, func()) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }
}

// startMockTCP starts a mock server from YAML over loopback with its own
// Serve, and returns its base URL and a stop function.
func startMockTCP(b *testing.B, yaml string) (string, *mock.Server, func()) {
	b.Helper()
	cfg, err := mock.ParseConfig([]byte(yaml), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := mock.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Serve(ln); close(done) }()
	return "http://" + ln.Addr().String(), s, func() {
		s.Close()
		<-done
	}
}

// benchTarget is one endpoint of the throughput benchmark.
type benchTarget struct {
	name string
	path string
	body string
	hdr  map[string]string
}

var throughputTargets = []benchTarget{
	{
		name: "anthropic",
		path: "/v1/messages",
		body: `{"model":"` + benchModel + `","max_tokens":16,"messages":[{"role":"user","content":"Say something short."}]}`,
		hdr:  map[string]string{"x-api-key": "bench-key", "anthropic-version": "2023-06-01"},
	},
	{
		name: "openai",
		path: "/v1/chat/completions",
		body: `{"model":"gpt-4o-mini","max_completion_tokens":16,"messages":[{"role":"user","content":"Say something short."}]}`,
		hdr:  map[string]string{"authorization": "Bearer bench-key"},
	},
}

// BenchmarkJSONThroughput measures the mock's non-streaming throughput at
// zero latency with every limit configured (checked on every request, set so
// high that none binds) against a bare net/http handler that writes the same
// status, headers and body. Both serve over real loopback to benchWorkers
// concurrent keep-alive clients; rounds alternate between them and the
// reported ratio_vs_bare is mock requests/s over bare requests/s (target ≥ 0.8).
// The ns/op, B/op and allocs/op of an iteration cover rounds·perRound
// requests to each server, clients included; mock_allocs/req and
// bare_allocs/req split them per request.
func BenchmarkJSONThroughput(b *testing.B) {
	const (
		perRound = 250 // requests per target per round: short rounds, finely interleaved
		rounds   = 16  // rounds per benchmark iteration (alternating order)
	)
	for _, tg := range throughputTargets {
		b.Run(tg.name, func(b *testing.B) {
			b.ReportAllocs()
			mockURL, _, stopMock := startMockTCP(b, `
seed: 1
api_keys: [bench-key]
latency: {ttft: 0s, ttft_per_input_token: 0s, per_token: 0s}
limits: {max_concurrent: 100000, rpm: 1000000000, itpm: 1000000000, otpm: 1000000000, tpm: 1000000000, retry_after: 1s}
capacity: {max_concurrent: 100000}
`)
			defer stopMock()

			// Capture one mock response: the bare handler replays it.
			status, hdr, body := captureResponse(b, mockURL+tg.path, tg)
			if status != http.StatusOK {
				b.Fatalf("mock answered %d: %s", status, body)
			}
			bareURL, stopBare := startTCP(b, replayHandler(hdr, body))
			defer stopBare()

			mockC, bareC := newBenchClient(), newBenchClient()
			defer mockC.CloseIdleConnections()
			defer bareC.CloseIdleConnections()
			// Warm up both: connections, buffers, the mock's per-key state.
			hammer(b, mockC, mockURL+tg.path, tg, perRound)
			hammer(b, bareC, bareURL+tg.path, tg, perRound)

			var mock, bare load
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for r := 0; r < rounds; r++ {
					if (i+r)%2 == 0 {
						mock.add(hammer(b, mockC, mockURL+tg.path, tg, perRound))
						bare.add(hammer(b, bareC, bareURL+tg.path, tg, perRound))
					} else {
						bare.add(hammer(b, bareC, bareURL+tg.path, tg, perRound))
						mock.add(hammer(b, mockC, mockURL+tg.path, tg, perRound))
					}
				}
			}
			b.StopTimer()
			n := float64(b.N * rounds * perRound)
			mockRate := n / mock.took.Seconds()
			bareRate := n / bare.took.Seconds()
			b.ReportMetric(mockRate, "mock_req/s")
			b.ReportMetric(bareRate, "bare_req/s")
			b.ReportMetric(mockRate/bareRate, "ratio_vs_bare")
			// Allocations per request, client side included in both.
			b.ReportMetric(float64(mock.mallocs)/n, "mock_allocs/req")
			b.ReportMetric(float64(bare.mallocs)/n, "bare_allocs/req")
		})
	}
}

func newBenchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        4 * benchWorkers,
		MaxIdleConnsPerHost: 4 * benchWorkers,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

func newBenchRequest(b *testing.B, url string, tg benchTarget) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(tg.body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	for k, v := range tg.hdr {
		req.Header.Set(k, v)
	}
	return req
}

// captureResponse sends one request and returns the response.
func captureResponse(b *testing.B, url string, tg benchTarget) (int, http.Header, []byte) {
	b.Helper()
	resp, err := http.DefaultClient.Do(newBenchRequest(b, url, tg))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Clone(), body
}

// replayHandler is the bare baseline: it reads the request and writes the
// given headers and body, nothing else.
func replayHandler(hdr http.Header, body []byte) http.Handler {
	h := hdr.Clone()
	h.Del("Date")
	h.Del("Content-Length")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		dst := w.Header()
		for k, v := range h {
			dst[k] = v
		}
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	})
}

// load is what a series of hammer rounds cost.
type load struct {
	took    time.Duration
	mallocs uint64
}

func (l *load) add(m load) {
	l.took += m.took
	l.mallocs += m.mallocs
}

// hammer sends n requests to url from benchWorkers concurrent workers and
// returns the elapsed time and the heap allocations made meanwhile (by
// client and server). Any status but 200 fails the benchmark: a limit that
// binds would make the comparison meaningless.
func hammer(b *testing.B, c *http.Client, url string, tg benchTarget, n int) load {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	body := []byte(tg.body)
	start := time.Now()
	for w := 0; w < benchWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Anthropic-Version", "2023-06-01")
				req.Header.Set("content-type", "application/json")
				for k, v := range tg.hdr {
					req.Header.Set(k, v)
				}
				resp, err := c.Do(req)
				if err != nil {
					failed.CompareAndSwap(nil, err.Error())
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.CompareAndSwap(nil, fmt.Sprintf("status %d", resp.StatusCode))
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	runtime.ReadMemStats(&ms)
	if f := failed.Load(); f != nil {
		b.Fatalf("%s: %v", url, f)
	}
	return load{took: d, mallocs: ms.Mallocs - mallocs}
}

// Streams: the pacing benchmark.

const (
	paceStreams  = 1000
	paceTokens   = 20
	pacePerToken = 20 * time.Millisecond
)

// refPacer is the reference absolute-deadline pacer: like the mock, it
// sends a message_start frame at once, then n Anthropic-shaped text deltas
// of one four-character token each, token i (1-based) due at
// start + i·perToken and waited for with one timer against that absolute
// deadline, so timer overshoot does not accumulate.
func refPacer(n int, perToken time.Duration) http.Handler {
	const (
		head  = "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
		delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"the \"}}\n\n"
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("content-type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, head)
		f := w.(http.Flusher)
		f.Flush()
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		for i := 1; i <= n; i++ {
			t.Reset(time.Until(start.Add(time.Duration(i) * perToken)))
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, delta)
			f.Flush()
		}
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
}

// arrivals records when each request reached the server, keyed by the
// X-Bench-Stream header.
type arrivals struct{ at []atomic.Int64 }

func (a *arrivals) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if i, err := strconv.Atoi(r.Header.Get("X-Bench-Stream")); err == nil && i >= 0 && i < len(a.at) {
			a.at[i].Store(time.Now().UnixNano())
		}
		h.ServeHTTP(w, r)
	})
}

// BenchmarkStreamPacing runs paceStreams concurrent streams of paceTokens
// tokens at pacePerToken over loopback (keep-alive connections, the starts
// spread evenly over one token interval, so 50,000 tokens/s fall due at a
// steady rate), against the mock and against refPacer, alternating. Both schedule token i at start + i·per_token (the
// mock with no time to first token), so the last token is due
// paceTokens·pacePerToken after the stream started. A stream's lateness is
// when its client read the last token minus that due time, with the start
// taken as the request's arrival at the server (recorded by a wrapper around
// the handler). That origin is conservative for the mock: its schedule
// starts at admission, after it has decoded and admitted the request, so
// the figure includes admission time under a burst of paceStreams
// simultaneous requests. (The client's receipt of the first frame is no
// better an origin: under the burst it lags by up to a hundred
// milliseconds.) It reports p50 and p99 lateness for both and
// mock_p99/ref_p99. Targets: mock p50 ≤ 2 ms, ratio ≤ 1.5.
//
// The mock is served through its Handler by a plain http.Server, so that the
// arrival wrapper can be put in front of it.
func BenchmarkStreamPacing(b *testing.B) {
	b.ReportAllocs()
	arrMock := &arrivals{at: make([]atomic.Int64, paceStreams)}
	arrRef := &arrivals{at: make([]atomic.Int64, paceStreams)}

	cfg, err := mock.ParseConfig([]byte(fmt.Sprintf(`
seed: 1
latency: {ttft: 0s, ttft_per_input_token: 0s, per_token: %v, jitter: 0}
`, pacePerToken)), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := mock.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	mockURL, stopMock := startTCP(b, arrMock.wrap(s.Handler()))
	defer stopMock()
	refURL, stopRef := startTCP(b, arrRef.wrap(refPacer(paceTokens, pacePerToken)))
	defer stopRef()

	body := fmt.Sprintf(`{"model":%q,"max_tokens":%d,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`, benchModel, paceTokens)
	due := time.Duration(paceTokens) * pacePerToken

	// Each target keeps a pool of paceStreams keep-alive connections, opened
	// by a warm-up round, so the rounds measure streams rather than dials.
	mockC, refC := newStreamClient(), newStreamClient()
	defer mockC.CloseIdleConnections()
	defer refC.CloseIdleConnections()
	runStreams(b, mockC, mockURL, body, arrMock, due)
	runStreams(b, refC, refURL, body, arrRef, due)
	b.ResetTimer()

	// Rounds go mock, ref, ref, mock, so that a burst of load from
	// elsewhere on the machine tends to fall on both.
	var lateMock, lateRef []time.Duration
	for i := 0; i < b.N; i++ {
		for _, mockTurn := range []bool{true, false, false, true} {
			if mockTurn {
				lateMock = append(lateMock, runStreams(b, mockC, mockURL, body, arrMock, due)...)
			} else {
				lateRef = append(lateRef, runStreams(b, refC, refURL, body, arrRef, due)...)
			}
		}
	}
	b.StopTimer()
	mp50, mp99 := percentile(lateMock, 50), percentile(lateMock, 99)
	rp50, rp99 := percentile(lateRef, 50), percentile(lateRef, 99)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(mp50), "mock_p50_ms")
	b.ReportMetric(ms(mp99), "mock_p99_ms")
	b.ReportMetric(ms(rp50), "ref_p50_ms")
	b.ReportMetric(ms(rp99), "ref_p99_ms")
	if rp99 > 0 {
		b.ReportMetric(float64(mp99)/float64(rp99), "p99_ratio_vs_ref")
	}
}

func newStreamClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        paceStreams,
		MaxIdleConnsPerHost: paceStreams,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// runStreams opens paceStreams concurrent streams to base and returns the
// lateness of each stream's last token.
func runStreams(b *testing.B, c *http.Client, base, body string, arr *arrivals, due time.Duration) []time.Duration {
	late := make([]time.Duration, paceStreams)
	errs := make(chan error, paceStreams)
	for i := range arr.at {
		arr.at[i].Store(0)
	}
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < paceStreams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the starts evenly over one token interval, so that
			// tokens fall due at a steady rate rather than all at once.
			time.Sleep(time.Until(t0.Add(time.Duration(i) * pacePerToken / paceStreams)))
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(body))
			req.Header.Set("content-type", "application/json")
			req.Header.Set("x-api-key", "bench-key")
			req.Header.Set("anthropic-version", "2023-06-01")
			req.Header.Set("X-Bench-Stream", strconv.Itoa(i))
			resp, err := c.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("stream %d: status %d", i, resp.StatusCode)
				return
			}
			// A late server may put several tokens in one delta; every
			// token is four characters, so the text length counts them.
			chars, _, last := ssetext.Read(resp.Body, 4*paceTokens)
			if chars != 4*paceTokens {
				errs <- fmt.Errorf("stream %d: %d characters of text, want %d (%d tokens)", i, chars, 4*paceTokens, paceTokens)
				return
			}
			late[i] = last.Sub(time.Unix(0, arr.at[i].Load()).Add(due))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return late
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

// Parked streams: the memory benchmark.

const parkedStreams = 1000

// BenchmarkParkedStreamMemory opens parkedStreams streams whose next token is
// an hour away and measures the growth of heap plus stack memory per stream
// (after GC) for the mock, the reference pacer and an idle keep-alive
// connection to a bare handler. The clients are raw loopback connections read
// only up to the end of the response headers, so nearly all of the growth is
// the server's. Target: mock ≤ 32 KiB per stream.
func BenchmarkParkedStreamMemory(b *testing.B) {
	b.ReportAllocs()
	cfg, err := mock.ParseConfig([]byte(`
seed: 1
latency: {ttft: 0s, ttft_per_input_token: 0s, per_token: 1h}
`), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := mock.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	streamReq := func(addr string) string {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":20,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`, benchModel)
		return "POST /v1/messages HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
			"X-Api-Key: bench-key\r\nAnthropic-Version: 2023-06-01\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	idleReq := func(addr string) string {
		return "GET / HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	}
	cases := []struct {
		name string
		h    http.Handler
		req  func(addr string) string
		// complete reads a whole (Content-Length) response, leaving the
		// connection idle; otherwise only the headers are read.
		complete bool
	}{
		{"mock", s.Handler(), streamReq, false},
		{"ref", refPacer(20, time.Hour), streamReq, false},
		{"idle", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), idleReq, true},
	}
	perStream := map[string]float64{}
	for i := 0; i < b.N; i++ {
		for _, c := range cases {
			perStream[c.name] += parkMemory(b, c.h, c.req, c.complete)
		}
	}
	b.StopTimer()
	for _, c := range cases {
		b.ReportMetric(perStream[c.name]/float64(b.N)/1024, c.name+"_KiB/stream")
	}
}

// parkMemory serves h over loopback, opens parkedStreams connections, sends
// req on each and reads its response headers (or the whole response), and
// returns the growth of heap and stack memory per connection.
func parkMemory(b *testing.B, h http.Handler, req func(string) string, complete bool) float64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()
	conns := make([]net.Conn, 0, parkedStreams)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	buf := make([]byte, 4096)

	before := heapAndStack()
	for i := 0; i < parkedStreams; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, req(addr)); err != nil {
			b.Fatal(err)
		}
		if err := readResponseHead(c, buf, complete); err != nil {
			b.Fatalf("connection %d: %v", i, err)
		}
	}
	// Let every handler reach its parked state.
	time.Sleep(200 * time.Millisecond)
	after := heapAndStack()
	return float64(after-before) / parkedStreams
}

// readResponseHead reads c until the end of the response headers, and with
// complete until the end of a short Content-Length body too.
func readResponseHead(c net.Conn, buf []byte, complete bool) error {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	var got []byte
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if i := bytes.Index(got, []byte("\r\n\r\n")); i >= 0 {
			if !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) {
				return fmt.Errorf("response %q", got)
			}
			if !complete {
				return nil
			}
			head := strings.ToLower(string(got[:i]))
			_, rest, ok := strings.Cut(head, "content-length: ")
			if !ok {
				return fmt.Errorf("no content-length in %q", head)
			}
			n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\r\n", 2)[0]))
			if len(got)-(i+4) >= n {
				return nil
			}
		}
		if err != nil {
			return err
		}
	}
}

// heapAndStack returns the bytes in live heap objects plus goroutine stacks,
// after a full collection.
func heapAndStack() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}
