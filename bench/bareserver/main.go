// Command bareserver is the baseline of mockllm's cross-process throughput
// comparison (bench/compare): a bare net/http server that reads each request
// and answers one fixed response, nothing else.
//
// By default the response is a Messages-API JSON body of the size mockllm
// answers the benchmark's request with; --response replays a captured one
// instead (status, headers and body, as bench/compare writes it).
//
// Like mockllm, its first line on stdout is "listening on http://HOST:PORT".
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/ratelab/ratelab/bench/internal/benchcmd"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() { benchcmd.Main("bareserver", run) }

// Response is a captured HTTP response, the format of --response.
type Response struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
}

// defaultResponse is a Messages-API answer of the shape and size mockllm
// gives the benchmark's request (16 output tokens).
var defaultResponse = Response{
	Status: http.StatusOK,
	Header: http.Header{"Content-Type": {"application/json"}},
	Body: `{"id":"msg_01AAAAAAAAAAAAAAAAAAAAAA","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[{"type":"text","text":"Lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et"}],` +
		`"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":16}}`,
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bareserver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen `address`")
	respFile := fs.String("response", "", "JSON `file` {status, header, body} to answer with (default: a built-in Messages-API body)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	resp := defaultResponse
	if *respFile != "" {
		b, err := os.ReadFile(*respFile)
		if err != nil {
			return err
		}
		resp = Response{}
		if err := json.Unmarshal(b, &resp); err != nil {
			return fmt.Errorf("%s: %w", *respFile, err)
		}
		if resp.Status == 0 {
			return fmt.Errorf("%s: status: missing", *respFile)
		}
	}
	h := resp.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del("Date")
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	body := []byte(resp.Body)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		dst := w.Header()
		for k, v := range h {
			dst[k] = v
		}
		w.WriteHeader(resp.Status)
		w.Write(body)
	})

	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	return benchcmd.Serve(ctx, *addr, stdout, srv.Serve, func() { srv.Close() })
}
