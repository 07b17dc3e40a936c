package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/ratelab/ratelab/internal/loadgen"
)

// TestSameRequest runs the scenario the comparison gives loadgen and checks
// that every request it sent is the targets file's: the same method, URL,
// body and headers (besides those the transport adds), so that vegeta and
// the bare loop send what loadgen sends.
func TestSameRequest(t *testing.T) {
	type seen struct {
		method, url string
		body        string
		header      http.Header
	}
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		for _, k := range []string{"User-Agent", "Accept-Encoding", "Content-Length"} {
			h.Del(k)
		}
		mu.Lock()
		got = append(got, seen{r.Method, "http://" + r.Host + r.URL.String(), string(body), h})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":1}}`)
	}))
	defer srv.Close()

	dir := t.TempDir()
	targets := filepath.Join(dir, "targets.json")
	if err := writeTargets(targets, srv.URL, 3); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, targets)
	if len(lines) != 3 || lines[0] != lines[2] {
		t.Fatalf("targets file: %d lines, want 3 equal ones", len(lines))
	}
	var want vegeta.Target
	if err := json.Unmarshal([]byte(lines[0]), &want); err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(file, scenario(srv.URL, 3, 2), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := loadgen.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(keyEnv, loadgen.DefaultAPIKey) // as runClient sets it
	rep, err := loadgen.Run(context.Background(), s, loadgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := loadgen.Failures(rep); len(f) > 0 {
		t.Fatalf("expectations failed: %v", f)
	}
	if len(got) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(got))
	}
	for i, g := range got {
		if g.method != want.Method || g.url != want.URL || g.body != string(want.Body) {
			t.Errorf("request %d: %s %s %s, want %s %s %s", i, g.method, g.url, g.body, want.Method, want.URL, want.Body)
		}
		if !maps.EqualFunc(g.header, want.Header, slices.Equal) {
			t.Errorf("request %d: headers %v, want %v", i, g.header, want.Header)
		}
	}
}

// TestCheckResults holds vegeta results files to the count of 200s,
// ignoring the results of workers that ran out of targets.
func TestCheckResults(t *testing.T) {
	write := func(rs ...vegeta.Result) string {
		f := filepath.Join(t.TempDir(), "r.bin")
		out, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		enc := vegeta.NewEncoder(out)
		for i := range rs {
			if err := enc.Encode(&rs[i]); err != nil {
				t.Fatal(err)
			}
		}
		out.Close()
		return f
	}
	ok := vegeta.Result{Code: 200}
	end := vegeta.Result{Error: vegeta.ErrNoTargets.Error()}
	for _, c := range []struct {
		name  string
		file  string
		calls int
		err   string
	}{
		{"all 200", write(ok, ok, end, ok, end), 3, ""},
		{"too few", write(ok, end), 2, "1 results, want 2"},
		{"a 429", write(ok, vegeta.Result{Code: 429}), 2, "result 2: status 429"},
		{"an error", write(vegeta.Result{Error: "connection refused"}), 1, "result 1: status 0 connection refused"},
	} {
		err := checkResults(c.file, c.calls)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: checkResults = %v, want %q", c.name, err, c.err)
		}
	}
}

func readLines(t *testing.T, file string) []string {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}
