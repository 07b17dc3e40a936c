// Command compare measures HTTP servers against each other from a separate
// process, as users run them, as ratios against the first server (the
// baseline).
//
// It starts each server as a child process (a command whose first line on
// stdout is "listening on http://HOST:PORT", as mockllm prints), drives them
// with its own client in interleaved rounds, and prints each round and the
// medians over rounds with their spread. This machine is noisy, so only
// same-sitting ratios mean anything.
//
//	compare json   -server bare='bin/bareserver --response @RESPONSE@' -server mock='bin/mockllm --config bench/mock-json.yaml --addr 127.0.0.1:0'
//	compare stream -server ref='bin/refpacer' -server mock='bin/mockllm --config bench/mock-stream.yaml --addr 127.0.0.1:0'
//
// json: closed-loop throughput of non-streaming Messages-API calls over
// --conns keep-alive connections, --round long per server per round.
// @RESPONSE@ in a server's command is replaced by a file holding the response
// (status, headers, body) of the first server started without it, so a bare
// server can replay the same bytes.
//
// stream: --streams concurrent streams of --tokens tokens at --per-token,
// started evenly over --spread (by default one token interval: a burst).
// A longer spread measures the pacing alone. A stream's lateness is when the
// client read its last token minus its due time, send time + tokens ×
// per-token; a stream whose tokens came in fewer events than tokens had late
// tokens merged.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/ratelab/ratelab/bench/internal/benchcmd"
	"github.com/ratelab/ratelab/internal/ssetext"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() { benchcmd.Main("compare", run) }

type serverFlags []string

func (s *serverFlags) String() string     { return strings.Join(*s, " ") }
func (s *serverFlags) Set(v string) error { *s = append(*s, v); return nil }

// server is one child process under test.
type server struct {
	name string
	url  string
	cmd  *exec.Cmd
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "json" && args[0] != "stream") {
		return errors.New("usage: compare json|stream [flags] -server NAME=COMMAND -server NAME=COMMAND [-server ...]")
	}
	mode := args[0]
	fs := flag.NewFlagSet("compare "+mode, flag.ContinueOnError)
	var servers serverFlags
	fs.Var(&servers, "server", "`NAME=COMMAND` of a server to start (repeatable; the first is the baseline)")
	rounds := fs.Int("rounds", 6, "interleaved rounds")
	conns := fs.Int("conns", 64, "json: concurrent keep-alive connections")
	round := fs.Duration("round", 3*time.Second, "json: time per server per round")
	streams := fs.Int("streams", 1000, "stream: concurrent streams")
	tokens := fs.Int("tokens", 20, "stream: tokens per stream (the request's max_tokens)")
	perToken := fs.Duration("per-token", 20*time.Millisecond, "stream: the servers' time per token")
	spread := fs.Duration("spread", 0, "stream: the streams start evenly over this `duration` (0: one token interval)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if len(servers) < 2 {
		return errors.New("want at least two -server flags")
	}
	if *rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	if *spread < 0 {
		return fmt.Errorf("-spread %v: want a positive duration, or 0 for one token interval", *spread)
	}
	tmp, err := os.MkdirTemp("", "compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// Servers whose command holds @RESPONSE@ start last, once a response
	// has been captured from the first of the others; they are reported in
	// the order given, the baseline first.
	started := make([]*server, len(servers))
	defer func() {
		for _, s := range started {
			if s != nil {
				s.cmd.Process.Signal(syscall.SIGTERM)
				s.cmd.Wait()
			}
		}
	}()
	respFile := ""
	for pass := range 2 {
		for i, spec := range servers {
			name, command, ok := strings.Cut(spec, "=")
			if !ok || name == "" || command == "" {
				return fmt.Errorf("-server %q: want NAME=COMMAND", spec)
			}
			replay := strings.Contains(command, "@RESPONSE@")
			if replay != (pass == 1) {
				continue
			}
			if replay {
				if respFile == "" {
					j := slices.IndexFunc(started, func(s *server) bool { return s != nil })
					if j < 0 {
						return fmt.Errorf("-server %s: @RESPONSE@ needs another server to capture a response from", name)
					}
					respFile = filepath.Join(tmp, "response.json")
					if err := capture(started[j].url, respFile); err != nil {
						return fmt.Errorf("capturing %s's response: %w", started[j].name, err)
					}
				}
				command = strings.ReplaceAll(command, "@RESPONSE@", respFile)
			}
			s, err := start(name, command)
			if err != nil {
				return err
			}
			started[i] = s
		}
	}
	// Report in the order given, the baseline first.
	if mode == "json" {
		return compareJSON(ctx, stdout, started, *rounds, *conns, *round)
	}
	if *spread == 0 {
		*spread = *perToken
	}
	return compareStreams(ctx, stdout, started, *rounds, *streams, *tokens, *perToken, *spread)
}

// start runs command and waits for its "listening on URL" line.
func start(name, command string) (*server, error) {
	cmd, url, err := benchcmd.Start("-server "+name, command)
	if err != nil {
		return nil, err
	}
	return &server{name: name, url: url, cmd: cmd}, nil
}

// The request of the json comparison: what mock/bench_test.go's throughput
// benchmark sends.
const (
	jsonPath = "/v1/messages"
	jsonBody = `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"Say something short."}]}`
)

func newRequest(ctx context.Context, url, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+jsonPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "bench-key")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	return req
}

// capture writes url's answer to the json request to file, in
// bench/bareserver's --response format.
func capture(url, file string) error {
	resp, err := http.DefaultClient.Do(newRequest(context.Background(), url, jsonBody))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	b, err := json.Marshal(struct {
		Status int         `json:"status"`
		Header http.Header `json:"header"`
		Body   string      `json:"body"`
	}{resp.StatusCode, resp.Header, string(body)})
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o600)
}

// order is the servers' order in round r: rotated, so that each server
// follows each other as often.
func order(n, r int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = (i + r) % n
	}
	return o
}

func compareJSON(ctx context.Context, w io.Writer, servers []*server, rounds, conns int, round time.Duration) error {
	clients := make([]*http.Client, len(servers))
	for i := range clients {
		clients[i] = &http.Client{Transport: &http.Transport{
			MaxIdleConns: 2 * conns, MaxIdleConnsPerHost: 2 * conns, MaxConnsPerHost: conns,
			IdleConnTimeout: time.Minute, DisableCompression: true,
		}}
	}
	fmt.Fprintf(w, "json: %d connections, %v per server per round, %d rounds\n", conns, round, rounds)
	for i, s := range servers { // warm up: connections, buffers, per-key state
		if _, _, err := hammer(ctx, clients[i], s.url, conns, round/3); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	rates := make([][]float64, len(servers))
	cpu := make([][]float64, len(servers)) // server CPU µs per request
	for r := range rounds {
		for _, i := range order(len(servers), r) {
			pid := servers[i].cmd.Process.Pid
			c0 := cpuTime(pid)
			rate, n, err := hammer(ctx, clients[i], servers[i].url, conns, round)
			if err != nil {
				return fmt.Errorf("%s: %w", servers[i].name, err)
			}
			rates[i] = append(rates[i], rate)
			cpu[i] = append(cpu[i], float64(cpuTime(pid)-c0)/1e3/float64(max(n, 1)))
		}
		fmt.Fprintf(w, "round %d:", r+1)
		for i, s := range servers {
			fmt.Fprintf(w, "  %s %.0f req/s %.1f µs CPU/req", s.name, rates[i][r], cpu[i][r])
			if i > 0 {
				fmt.Fprintf(w, " (%.3f, %.3f)", rates[i][r]/rates[0][r], cpu[0][r]/cpu[i][r])
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s: median %.0f req/s %s, %.1f µs server CPU a request %s\n", servers[0].name, benchcmd.Median(rates[0]), benchcmd.Spread(rates[0], "%.0f"), benchcmd.Median(cpu[0]), benchcmd.Spread(cpu[0], "%.1f"))
	for i := 1; i < len(servers); i++ {
		ratios := make([]float64, rounds)
		eff := make([]float64, rounds)
		for r := range ratios {
			ratios[r] = rates[i][r] / rates[0][r]
			eff[r] = cpu[0][r] / cpu[i][r]
		}
		fmt.Fprintf(w, "%s: median %.0f req/s %s, %.1f µs server CPU a request %s\n", servers[i].name, benchcmd.Median(rates[i]), benchcmd.Spread(rates[i], "%.0f"), benchcmd.Median(cpu[i]), benchcmd.Spread(cpu[i], "%.1f"))
		fmt.Fprintf(w, "  %s/%s: throughput median %.3f %s; CPU efficiency (%s's CPU a request / %s's) median %.3f %s\n",
			servers[i].name, servers[0].name, benchcmd.Median(ratios), benchcmd.Spread(ratios, "%.3f"), servers[0].name, servers[i].name, benchcmd.Median(eff), benchcmd.Spread(eff, "%.3f"))
	}
	return nil
}

// hammer sends requests to url from conns workers for d and returns the
// rate and number of 200s. Any other answer is an error: a limit that binds would
// make the comparison meaningless.
func hammer(ctx context.Context, c *http.Client, url string, conns int, d time.Duration) (float64, int64, error) {
	var n atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) && ctx.Err() == nil {
				resp, err := c.Do(newRequest(ctx, url, jsonBody))
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.CompareAndSwap(nil, fmt.Errorf("status %d", resp.StatusCode))
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return 0, 0, err
	}
	if ctx.Err() != nil {
		return 0, 0, ctx.Err()
	}
	return float64(n.Load()) / time.Since(start).Seconds(), n.Load(), nil
}

// streamRound is one round of streams against one server.
type streamRound struct {
	p50, p99, max time.Duration
	merged        int // streams with fewer events than tokens
	mergedEvents  int // tokens that arrived in another token's event
}

func compareStreams(ctx context.Context, w io.Writer, servers []*server, rounds, streams, tokens int, perToken, spread time.Duration) error {
	body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":%d,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`, tokens)
	clients := make([]*http.Client, len(servers))
	for i := range clients {
		clients[i] = &http.Client{Transport: &http.Transport{
			MaxIdleConns: streams, MaxIdleConnsPerHost: streams,
			IdleConnTimeout: time.Minute, DisableCompression: true,
		}}
	}
	fmt.Fprintf(w, "stream: %d streams of %d tokens at %v, started over %v, %d rounds; lateness of the last token\n", streams, tokens, perToken, spread, rounds)
	for i, s := range servers { // warm up: one connection per stream
		if _, err := runStreams(ctx, clients[i], s.url, body, streams, tokens, perToken, spread); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	res := make([][]streamRound, len(servers))
	cpu := make([][]float64, len(servers))    // server CPU µs per stream
	client := make([][]float64, len(servers)) // this process's CPU µs per stream
	self := os.Getpid()
	for r := range rounds {
		for _, i := range order(len(servers), r) {
			pid := servers[i].cmd.Process.Pid
			c0, s0 := cpuTime(pid), cpuTime(self)
			sr, err := runStreams(ctx, clients[i], servers[i].url, body, streams, tokens, perToken, spread)
			if err != nil {
				return fmt.Errorf("%s: %w", servers[i].name, err)
			}
			res[i] = append(res[i], sr)
			cpu[i] = append(cpu[i], float64(cpuTime(pid)-c0)/1e3/float64(streams))
			client[i] = append(client[i], float64(cpuTime(self)-s0)/1e3/float64(streams))
		}
		fmt.Fprintf(w, "round %d:", r+1)
		for i, s := range servers {
			sr := res[i][r]
			fmt.Fprintf(w, "  %s p50 %s p99 %s max %s merged %d streams (%d tokens) %.0f µs CPU/stream (client %.0f)", s.name, ms(sr.p50), ms(sr.p99), ms(sr.max), sr.merged, sr.mergedEvents, cpu[i][r], client[i][r])
		}
		fmt.Fprintln(w)
	}
	pick := func(i int, f func(streamRound) float64) []float64 {
		v := make([]float64, rounds)
		for r := range v {
			v[r] = f(res[i][r])
		}
		return v
	}
	msOf := func(d time.Duration) float64 { return float64(d) / 1e6 }
	for i, s := range servers {
		p50 := pick(i, func(r streamRound) float64 { return msOf(r.p50) })
		p99 := pick(i, func(r streamRound) float64 { return msOf(r.p99) })
		mx := pick(i, func(r streamRound) float64 { return msOf(r.max) })
		merged := pick(i, func(r streamRound) float64 { return float64(r.merged) })
		fmt.Fprintf(w, "%s: p50 %.2f ms %s, p99 %.2f ms %s, max %.1f ms %s, merged streams %.0f %s, server CPU a stream %.0f µs %s, client's %.0f µs %s",
			s.name, benchcmd.Median(p50), benchcmd.Spread(p50, "%.2f"), benchcmd.Median(p99), benchcmd.Spread(p99, "%.2f"), benchcmd.Median(mx), benchcmd.Spread(mx, "%.1f"), benchcmd.Median(merged), benchcmd.Spread(merged, "%.0f"), benchcmd.Median(cpu[i]), benchcmd.Spread(cpu[i], "%.0f"), benchcmd.Median(client[i]), benchcmd.Spread(client[i], "%.0f"))
		if i > 0 {
			r50 := make([]float64, rounds)
			r99 := make([]float64, rounds)
			for r := range rounds {
				r50[r] = float64(res[i][r].p50) / float64(res[0][r].p50)
				r99[r] = float64(res[i][r].p99) / float64(res[0][r].p99)
			}
			fmt.Fprintf(w, "; vs %s p50 %.2f× %s, p99 %.2f× %s", servers[0].name, benchcmd.Median(r50), benchcmd.Spread(r50, "%.2f"), benchcmd.Median(r99), benchcmd.Spread(r99, "%.2f"))
		}
		fmt.Fprintln(w)
	}
	return nil
}

// cpuTime is the CPU time pid's threads have run, from
// /proc/PID/task/*/schedstat (nanoseconds); 0 where that is not available.
// A server's CPU time per request depends far less than its throughput on
// what else the machine runs.
func cpuTime(pid int) time.Duration {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var ns int64
		if _, err := fmt.Sscan(string(b), &ns); err == nil {
			sum += time.Duration(ns)
		}
	}
	return sum
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }

// runStreams opens streams concurrent streams, their starts spread evenly
// over spread, and returns the lateness of their last tokens.
func runStreams(ctx context.Context, c *http.Client, url, body string, streams, tokens int, perToken, spread time.Duration) (streamRound, error) {
	late := make([]time.Duration, streams)
	events := make([]int, streams)
	errs := make(chan error, streams)
	due := time.Duration(tokens) * perToken
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(t0.Add(time.Duration(i) * spread / time.Duration(streams))))
			req := newRequest(ctx, url, body)
			sent := time.Now()
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
			// Every token is four characters, so the text's length counts
			// the tokens an event carries.
			chars, n, last := ssetext.Read(resp.Body, 4*tokens)
			events[i] = n
			if chars != 4*tokens {
				errs <- fmt.Errorf("stream %d: %d characters of text, want %d (%d tokens)", i, chars, 4*tokens, tokens)
				return
			}
			late[i] = last.Sub(sent.Add(due))
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return streamRound{}, err
	}
	var sr streamRound
	for _, e := range events {
		if e < tokens {
			sr.merged++
			sr.mergedEvents += tokens - e
		}
	}
	slices.Sort(late)
	sr.p50, sr.p99, sr.max = pct(late, 50), pct(late, 99), late[len(late)-1]
	return sr, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}
