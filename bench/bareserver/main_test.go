package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplay starts the server on a free port with a --response file and
// checks that it answers that status, those headers and that body.
func TestReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(file, []byte(`{"status":201,"header":{"X-Test":["a"],"Date":["old"]},"body":"{\"ok\":true}"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--response", file}, pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("X-Test") != "a" || resp.Header.Get("Date") == "old" || string(body) != `{"ok":true}` {
		t.Errorf("got %d %v %s", resp.StatusCode, resp.Header, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

func TestBadResponseFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.json")
	os.WriteFile(file, []byte(`{"header":{}}`), 0o600)
	err := run(context.Background(), []string{"--response", file}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "status: missing") {
		t.Errorf("run = %v, want an error naming status", err)
	}
}
