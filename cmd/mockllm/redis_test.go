package main

import (
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
