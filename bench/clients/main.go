// Command clients measures load generators against each other as users run
// them, each its own process started afresh for every run.
//
// Every client sends the same request with the same number of workers to the
// same server (a child process too, started once), in interleaved rounds whose
// order rotates. It prints every run and the medians over rounds with their
// [min–max]: calls a second (calls over the process's wall time, start-up
// included), the client's CPU time a call and its peak RSS (when /usr/bin/time
// is there), and each client's throughput against every earlier one (the first
// client is the baseline).
//
//	clients -server 'bin/bareserver' -rounds 4 -calls 100000 -workers 32 \
//		-client 'bare=bin/clientloop --target @TARGETS@ --workers @WORKERS@ --calls @CALLS@' \
//		-client 'vegeta=bin/vegeta attack -lazy -format json -targets @TARGETS@ -rate 0 -workers @WORKERS@ -max-workers @WORKERS@ -output @RESULTS@' \
//		-client 'loadgen=bin/loadgen run @SCENARIO@ --format json'
//
// In a client's command, @TARGETS@ is a vegeta JSON targets file of --calls
// lines, every line the request loadgen sends for the scenario's items;
// @SCENARIO@ is a loadgen scenario of --calls items on --workers workers, an
// unbounded row and target: the server, whose expectations (every call
// completed in one attempt) make loadgen exit 1 otherwise; @RESULTS@ is a
// file the client writes vegeta results to, which is then checked (--calls
// results, every one a 200); @CALLS@ and @WORKERS@ are the flags' values. A
// client that exits non-zero stops the comparison.
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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/ratelab/ratelab/bench/internal/benchcmd"
	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/provider"
)

func main() { benchcmd.Main("clients", run) }

type clientFlags []string

func (c *clientFlags) String() string     { return strings.Join(*c, " ") }
func (c *clientFlags) Set(v string) error { *c = append(*c, v); return nil }

// client is one load generator under test.
type client struct {
	name    string
	command string
}

// sample is one run of one client.
type sample struct {
	rate   float64 // calls a second of wall time
	cpu    float64 // µs of the process's CPU time a call
	rssMiB float64 // peak RSS
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("clients", flag.ContinueOnError)
	var specs clientFlags
	fs.Var(&specs, "client", "`NAME=COMMAND` of a client to run (repeatable; the first is the baseline)")
	serverCmd := fs.String("server", "", "`COMMAND` of the server, whose first line on stdout is \"listening on URL\"")
	rounds := fs.Int("rounds", 4, "interleaved rounds")
	calls := fs.Int("calls", 100000, "calls a client makes in a run")
	workers := fs.Int("workers", 32, "a client's concurrent workers")
	warmup := fs.Bool("warmup", true, "run every client once before the rounds, not counted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(specs) < 2 || *serverCmd == "" {
		return errors.New("want --server COMMAND and at least two --client NAME=COMMAND")
	}
	if *rounds < 1 || *calls < 1 || *workers < 1 {
		return errors.New("--rounds, --calls and --workers must be at least 1")
	}
	clients := make([]client, len(specs))
	for i, spec := range specs {
		name, command, ok := strings.Cut(spec, "=")
		if !ok || name == "" || strings.TrimSpace(command) == "" {
			return fmt.Errorf("--client %q: want NAME=COMMAND", spec)
		}
		clients[i] = client{name, command}
	}
	tmp, err := os.MkdirTemp("", "clients-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	srv, url, err := benchcmd.Start("--server", *serverCmd)
	if err != nil {
		return err
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	files := map[string]string{
		"@TARGETS@":  filepath.Join(tmp, "targets.json"),
		"@SCENARIO@": filepath.Join(tmp, "scenario.yaml"),
		"@CALLS@":    strconv.Itoa(*calls),
		"@WORKERS@":  strconv.Itoa(*workers),
	}
	if err := writeTargets(files["@TARGETS@"], url, *calls); err != nil {
		return err
	}
	if err := os.WriteFile(files["@SCENARIO@"], scenario(url, *calls, *workers), 0o600); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "clients: %d calls on %d workers a run, %d rounds, server %s; load average %s\n", *calls, *workers, *rounds, *serverCmd, loadavg())
	runOne := func(c client) (sample, error) {
		return runClient(ctx, c, files, filepath.Join(tmp, c.name+".results"), *calls)
	}
	if *warmup {
		for _, c := range clients {
			if _, err := runOne(c); err != nil {
				return err
			}
		}
	}
	res := make([][]sample, len(clients))
	for r := range *rounds {
		for k := range clients {
			i := (k + r) % len(clients)
			s, err := runOne(clients[i])
			if err != nil {
				return err
			}
			res[i] = append(res[i], s)
		}
		fmt.Fprintf(stdout, "round %d:", r+1)
		for i, c := range clients {
			s := res[i][r]
			fmt.Fprintf(stdout, "  %s %.0f calls/s %.1f µs CPU/call %.0f MiB", c.name, s.rate, s.cpu, s.rssMiB)
		}
		fmt.Fprintf(stdout, "  (load average %s)\n", loadavg())
	}
	pick := func(i int, f func(sample) float64) []float64 {
		v := make([]float64, *rounds)
		for r := range v {
			v[r] = f(res[i][r])
		}
		return v
	}
	for i, c := range clients {
		rate := pick(i, func(s sample) float64 { return s.rate })
		cpu := pick(i, func(s sample) float64 { return s.cpu })
		rss := pick(i, func(s sample) float64 { return s.rssMiB })
		fmt.Fprintf(stdout, "%s: median %.0f calls/s %s, %.1f µs CPU a call %s, peak RSS %.0f MiB %s\n",
			c.name, benchcmd.Median(rate), benchcmd.Spread(rate, "%.0f"), benchcmd.Median(cpu), benchcmd.Spread(cpu, "%.1f"), benchcmd.Median(rss), benchcmd.Spread(rss, "%.0f"))
	}
	for i := 1; i < len(clients); i++ {
		for j := range i {
			ratio := make([]float64, *rounds)
			eff := make([]float64, *rounds)
			for r := range ratio {
				ratio[r] = res[i][r].rate / res[j][r].rate
				eff[r] = res[j][r].cpu / res[i][r].cpu
			}
			fmt.Fprintf(stdout, "  %s/%s: throughput median %.3f %s; CPU efficiency (%s's CPU a call / %s's) median %.3f %s\n",
				clients[i].name, clients[j].name, benchcmd.Median(ratio), benchcmd.Spread(ratio, "%.3f"),
				clients[j].name, clients[i].name, benchcmd.Median(eff), benchcmd.Spread(eff, "%.3f"))
		}
	}
	return nil
}

// The request every client sends: what loadgen sends for the scenario's
// items (scenario below).
const (
	model     = "claude-haiku-4-5"
	maxTokens = 16
	prompt    = "Say something short."
)

// scenario is the loadgen scenario of the comparison.
func scenario(url string, calls, workers int) []byte {
	return fmt.Appendf(nil, `# bench/clients: loadgen's side of the comparison.
name: clients
items: %d
workers: %d
request:
  model: %s
  max_tokens: %d
  prompt: %s
target:
  url: %s
  api_key_env: %s
strategies:
  - name: unbounded
    kind: unbounded
    expect:
      completed: %d
      attempts: %d
      failed: 0
`, calls, workers, model, maxTokens, prompt, url, keyEnv, calls, calls)
}

// keyEnv holds the key loadgen's side sends (a target's key comes from
// api_key_env only): loadgen.DefaultAPIKey, as the other clients send.
const keyEnv = "RATELAB_BENCH_KEY"

// request is the request of the scenario's items, built by the code
// loadgen builds it with.
func request(url string) (*http.Request, []byte, error) {
	// Every client sends loadgen.DefaultAPIKey (loadgen's side through
	// keyEnv).
	req, err := provider.Anthropic{}.NewRequest(context.Background(), url, loadgen.DefaultAPIKey, provider.Request{
		Model: model, MaxTokens: maxTokens, Messages: []provider.Message{{Role: "user", Content: prompt}},
	}, 0)
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(req.Body)
	return req, body, err
}

// writeTargets writes a vegeta JSON targets file of calls copies of the
// request: read lazily, vegeta stops when the file ends.
func writeTargets(file, url string, calls int) error {
	req, body, err := request(url)
	if err != nil {
		return err
	}
	line, err := json.Marshal(vegeta.Target{Method: req.Method, URL: req.URL.String(), Body: body, Header: req.Header})
	if err != nil {
		return err
	}
	line = append(line, '\n')
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for range calls {
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runClient runs c once and measures it; a client whose command writes
// @RESULTS@ has that file checked.
func runClient(ctx context.Context, c client, files map[string]string, results string, calls int) (sample, error) {
	var args []string
	for _, a := range strings.Fields(c.command) {
		for k, v := range files {
			a = strings.ReplaceAll(a, k, v)
		}
		args = append(args, strings.ReplaceAll(a, "@RESULTS@", results))
	}
	// ru_maxrss of a child Go started counts Go's own RSS (the child
	// shares Go's memory until it execs), so the peak RSS is /usr/bin/time's
	// figure, from a child it forked itself; its rusage includes the client's
	// CPU time, which is all that is.
	rssFile := results + ".rss"
	timed := false
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		args = append([]string{"/usr/bin/time", "-f", "%M", "-o", rssFile}, args...)
		timed = true
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), keyEnv+"="+loadgen.DefaultAPIKey)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w\n%s", c.name, err, tail(out.Bytes()))
	}
	if strings.Contains(c.command, "@RESULTS@") {
		if err := checkResults(results, calls); err != nil {
			return sample{}, fmt.Errorf("%s: %s: %w", c.name, results, err)
		}
		os.Remove(results)
	}
	st := cmd.ProcessState
	s := sample{
		rate: float64(calls) / wall.Seconds(),
		cpu:  float64(st.UserTime()+st.SystemTime()) / 1e3 / float64(calls),
	}
	if timed {
		b, err := os.ReadFile(rssFile)
		if err != nil {
			return sample{}, fmt.Errorf("%s: peak RSS: %w", c.name, err)
		}
		kib, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil {
			return sample{}, fmt.Errorf("%s: peak RSS: /usr/bin/time wrote %q", c.name, b)
		}
		s.rssMiB = kib / 1024
	}
	return s, nil
}

// checkResults holds a vegeta results file to calls results, all 200s,
// besides the results of workers that found no target left.
func checkResults(file string, calls int) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := vegeta.NewDecoder(bufio.NewReader(f))
	n := 0
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("result %d: %w", n+1, err)
		}
		if r.Error == vegeta.ErrNoTargets.Error() {
			continue // a worker that found the targets file at its end
		}
		if r.Code != http.StatusOK || r.Error != "" {
			return fmt.Errorf("result %d: status %d %s", n+1, r.Code, r.Error)
		}
		n++
	}
	if n != calls {
		return fmt.Errorf("%d results, want %d", n, calls)
	}
	return nil
}

func tail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}

// loadavg is the first three fields of /proc/loadavg ("?" elsewhere).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
