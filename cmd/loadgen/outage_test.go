package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestBatchOutageRealNetwork takes a loopback mock down in the middle of a
// batch (its listener and every connection closed, so calls in progress are
// cut and new ones refused) and brings a fresh one up on the same port a
// second later: every item still ends with exactly one successful result,
// and stderr says when the batch paused and when it resumed.
func TestBatchOutageRealNetwork(t *testing.T) {
	const n = 300
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener) *mock.Server {
		srv, err := mock.New(fastMock())
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		return srv
	}
	srv := serve(ln)
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		srv.Close()
		mu.Unlock()
	}()

	dir := t.TempDir()
	in := batchItems(t, n, 10) // 10 ms a call
	out := filepath.Join(dir, "results.jsonl")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	outage := make(chan error, 1)
	go func() {
		for countLines(out) < n/3 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		srv.Close()
		mu.Unlock()
		time.Sleep(time.Second)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			outage <- err
			return
		}
		mu.Lock()
		srv = serve(ln)
		mu.Unlock()
		outage <- nil
	}()

	var stdout, stderr lockedBuffer
	err = run(ctx, []string{"batch", "--input", in, "--output", out, "--base-url", "http://" + addr,
		"--strategy", "semaphore:n=8", "--state-file", ""}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("batch: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if err := <-outage; err != nil {
		t.Fatalf("restarting the mock on %s: %v", addr, err)
	}
	for id, r := range exactlyOnce(t, out, n) {
		if !r.OK() {
			t.Errorf("%s: %v", id, r.Err)
		}
	}
	log := stderr.String()
	if !strings.Contains(log, "endpoint unreachable") || !strings.Contains(log, "batch paused") || !strings.Contains(log, "batch resumed") {
		t.Errorf("stderr does not say the batch paused and resumed:\n%s", log)
	}
	if !strings.Contains(stdout.String(), "outages      1") {
		t.Errorf("summary does not count the outage:\n%s", stdout.String())
	}
	t.Logf("stderr:\n%s\nstdout:\n%s", log, stdout.String())
}
