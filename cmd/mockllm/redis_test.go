package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/redistest"
)

// redisPrefix returns a key prefix unique to this test, and deletes its
// keys when the test ends.
func redisPrefix(t *testing.T) string {
	prefix := redistest.Name(t, "mockllm-test")
	redistest.DeleteAtEnd(t, redistest.Client(t), prefix+":*")
	return prefix
}

// TestRunReplicasShareRedis starts two mockllm replicas sharing one Redis
// with a limit of 20 concurrent calls per key, and sends 40 calls at once,
// 20 to each: exactly 20 get through, the other 20 are throttled.
func TestRunReplicasShareRedis(t *testing.T) {
	url := redistest.URL(t)
	prefix := redisPrefix(t)
	args := []string{"--redis", url, "--redis-prefix", prefix, "--max-concurrent", "20", "--per-token-latency", "20ms", "--api-key", "k1"}
	replicas := []string{start(t, args...), start(t, args...)}

	// 50 output tokens of 20 ms: each call holds its slot a second, so all
	// 40 overlap.
	body := `{"model":"claude-haiku-4-5","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 40}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	var (
		mu     sync.Mutex
		status = map[int]int{}
		wg     sync.WaitGroup
		ready  = make(chan struct{})
	)
	for i := range 40 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", replicas[i%2]+"/v1/messages", strings.NewReader(body))
			req.Header.Set("x-api-key", "k1")
			req.Header.Set("anthropic-version", "2023-06-01")
			<-ready
			resp, err := client.Do(req)
			code := -1
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				code = resp.StatusCode
			}
			mu.Lock()
			status[code]++
			mu.Unlock()
		})
	}
	close(ready)
	wg.Wait()
	if status[200] != 20 || status[429] != 20 {
		t.Errorf("statuses = %v, want 20 × 200 and 20 × 429", status)
	}
}

// TestRunRedisErrors: a bad or unreachable --redis is a clear error and
// nothing is served.
func TestRunRedisErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	tests := []struct {
		name, url, want string
	}{
		{"not a URL", "127.0.0.1:6379", "--redis: want redis://HOST:PORT/DB"},
		{"password hidden", "http://u:secret@h:1/0", "REDACTED"},
		{"unreachable", "redis://" + closed + "/0", "--redis: " + closed + " does not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var stdout strings.Builder
			err := run(ctx, []string{"--addr", "127.0.0.1:0", "--redis", tt.url}, &stdout, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run error = %v, want it to contain %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("run error = %v shows the password", err)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing (nothing served)", stdout.String())
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRunRedisOutageLog is issue 10's item 13: while Redis is down, every
// call is answered overloaded, and stderr says so in structured records,
// once: one from the mock, one from go-redis's pool, not one per call.
func TestRunRedisOutageLog(t *testing.T) {
	srv := redistest.Start(t)
	var stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"--addr", "127.0.0.1:0", "--redis", srv.URL(), "--max-concurrent", "5", "--per-token-latency", "1ms"}, pw, &stderr)
		pw.Close()
		done <- err
	}()
	defer func() {
		cancel()
		<-done
		redistest.Quiet() // go-redis's logger is global: quiet it for the other tests
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	url := strings.TrimPrefix(strings.TrimSpace(line), "listening on ")
	body := `{"model":"claude-haiku-4-5","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`
	post := func() int {
		req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("content-type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(10 * time.Second) // a new key is quiet at first
	for post() != http.StatusOK && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	srv.Stop()
	statuses := map[int]int{}
	for range 20 {
		statuses[post()]++
	}
	if statuses[529] != 20 {
		t.Errorf("statuses while Redis is down = %v, want 20 × 529", statuses)
	}
	out := stderr.String()
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" && !strings.HasPrefix(l, "time=") {
			t.Errorf("a line outside the structured log: %q", l)
		}
	}
	if n := strings.Count(out, "limit store unavailable"); n != 1 {
		t.Errorf("%d 'limit store unavailable' records for 20 calls, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "source=go-redis"); n != 1 {
		t.Errorf("%d go-redis records, want 1:\n%s", n, out)
	}
}
