package mock_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/ratelab/ratelab/mock"
)

// discardWriter is the least a ResponseWriter can do: it keeps one header
// map, cleared per request, and counts the bytes written, so that
// BenchmarkHandlerJSON's allocations and time are the mock's own.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// BenchmarkHandlerJSON is the mock's own cost of one non-streaming request
// of bench/mock-json.yaml's setup (zero latency, every limit configured and
// none binding), per wire format: the Handler called in this goroutine with
// a reused request and a ResponseWriter that allocates nothing, so ns/op and
// allocs/op are the handler's alone (decoding, admission, call accounting,
// metrics, headers and the body), without net/http's connection handling.
func BenchmarkHandlerJSON(b *testing.B) {
	cfg, err := mock.ParseConfig([]byte(`
seed: 1
api_keys: [bench-key]
latency: {ttft: 0s, ttft_per_input_token: 0s, per_token: 0s}
limits: {max_concurrent: 100000, rpm: 1000000000, itpm: 1000000000, otpm: 1000000000, tpm: 1000000000, retry_after: 1s}
capacity: {max_concurrent: 100000}
`), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, tg := range throughputTargets {
		b.Run(tg.name, func(b *testing.B) {
			s, err := mock.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			h := s.Handler()
			body := []byte(tg.body)
			rd := bytes.NewReader(body)
			req, err := http.NewRequest(http.MethodPost, "http://mock"+tg.path, rd)
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Anthropic-Version", "2023-06-01")
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tg.hdr {
				req.Header.Set(k, v)
			}
			w := &discardWriter{h: http.Header{}}
			bodyReader := io.NopCloser(rd)
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(body)
				req.Body = bodyReader
				clear(w.h)
				w.status, w.n = 0, 0
				h.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}
