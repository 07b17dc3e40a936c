// Command clientloop is the baseline of bench/clients: the bare Go client
// loop.
//
// --workers goroutines share one http.Client and send, between them, --calls
// copies of one request (the first line of a vegeta JSON targets file,
// --target), each reading the whole response and checking its status is 200.
// Nothing is recorded: it is what any load generator's own work is measured
// against.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/bench/internal/benchcmd"
)

func main() { benchcmd.Main("clientloop", run) }

// Target is one line of vegeta's JSON targets format (Body in base64, as
// encoding/json writes a []byte).
type Target struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Body   []byte      `json:"body"`
	Header http.Header `json:"header"`
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("clientloop", flag.ContinueOnError)
	file := fs.String("target", "", "vegeta JSON targets `file`; its first line is the request sent")
	workers := fs.Int("workers", 32, "concurrent workers (and connections)")
	calls := fs.Int64("calls", 100000, "calls in all")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || *workers < 1 || *calls < 1 {
		return errors.New("want --target FILE, --workers ≥ 1 and --calls ≥ 1")
	}
	t, err := readTarget(*file)
	if err != nil {
		return err
	}
	c := &http.Client{Transport: &http.Transport{
		MaxIdleConns: *workers, MaxIdleConnsPerHost: *workers, IdleConnTimeout: time.Minute,
	}}
	start := time.Now()
	n, err := loop(ctx, c, t, *workers, *calls)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d calls in %.3f s\n", n, time.Since(start).Seconds())
	return nil
}

func readTarget(file string) (Target, error) {
	f, err := os.Open(file)
	if err != nil {
		return Target{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return Target{}, err
	}
	var t Target
	if err := json.Unmarshal(line, &t); err != nil {
		return Target{}, fmt.Errorf("%s:1: %w", file, err)
	}
	if t.Method == "" || t.URL == "" {
		return Target{}, fmt.Errorf("%s:1: want a method and a url", file)
	}
	return t, nil
}

// loop sends calls requests from workers goroutines and returns how many
// were answered 200; any other answer or error stops it with an error.
func loop(ctx context.Context, c *http.Client, t Target, workers int, calls int64) (int64, error) {
	var next, ok atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= calls && ctx.Err() == nil && failed.Load() == nil {
				req, err := http.NewRequestWithContext(ctx, t.Method, t.URL, bytes.NewReader(t.Body))
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				req.Header = t.Header // only read by the transport
				resp, err := c.Do(req)
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return ok.Load(), err
	}
	return ok.Load(), ctx.Err()
}
