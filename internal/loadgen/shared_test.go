package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/redistest"
	"github.com/ratelab/ratelab/sharedlimit"
)

// sharedKey returns a shared-limit name unique to this test, and deletes
// its Redis keys when the test ends.
func sharedKey(t *testing.T) string {
	key := redistest.Name(t, "loadgen-test")
	redistest.DeleteAtEnd(t, redistest.Client(t), "ratelab:{"+key+"}:*")
	return key
}

// TestSharedParseErrors: a shared: block is parsed as strictly as the rest
// of a scenario, each problem naming the file, the line and the key.
func TestSharedParseErrors(t *testing.T) {
	const head = "items: 3\nstrategies:\n  - name: a\n"
	tests := []struct {
		name, strategy, want string
	}{
		{"kind that cannot share", "    kind: aimd\n    shared: {redis: \"redis://127.0.0.1:6379/0\", key: k}\n",
			`x.yaml:5: strategies[0].shared: kind aimd cannot share its limits through Redis (kinds that can: semaphore, token-bucket, token-first, adaptive)`},
		{"no redis", "    kind: semaphore\n    n: 5\n    shared:\n      key: k\n",
			`x.yaml:7: strategies[0].shared.redis: required`},
		{"no key", "    kind: semaphore\n    n: 5\n    shared:\n      redis: \"redis://127.0.0.1:6379/0\"\n",
			`x.yaml:7: strategies[0].shared.key: required`},
		{"bad URL", "    kind: semaphore\n    n: 5\n    shared:\n      redis: \"http://127.0.0.1:6379\"\n      key: k\n",
			`x.yaml:7: strategies[0].shared.redis: want redis://`},
		{"braces in key", "    kind: semaphore\n    n: 5\n    shared:\n      redis: \"redis://h:1/0\"\n      key: \"a{b}\"\n",
			`x.yaml:8: strategies[0].shared.key: must not contain '{' or '}'`},
		{"unknown key", "    kind: semaphore\n    n: 5\n    shared:\n      redis: \"redis://h:1/0\"\n      key: k\n      ttl: 5s\n",
			`x.yaml:9: strategies[0].shared.ttl: unknown key "ttl" (want one of key, lease_ttl, op_timeout, peers, redis)`},
		{"short lease", "    kind: token-first\n    tpm: 1000\n    shared:\n      redis: \"redis://h:1/0\"\n      key: k\n      lease_ttl: 1ms\n",
			`x.yaml:9: strategies[0].shared.lease_ttl: must be at least 10ms`},
		{"negative peers", "    kind: token-bucket\n    rpm: 60\n    shared: {redis: \"redis://h:1/0\", key: k, peers: -1}\n",
			`x.yaml:6: strategies[0].shared.peers: must not be negative, got -1`},
		{"wrong type", "    kind: semaphore\n    n: 5\n    shared:\n      redis: \"redis://h:1/0\"\n      key: k\n      op_timeout: soon\n",
			`x.yaml:9: strategies[0].shared.op_timeout: want a duration like 500ms or 1s, got "soon"`},
		{"not a mapping", "    kind: semaphore\n    n: 5\n    shared: redis://h:1/0\n",
			`x.yaml:6: strategies[0].shared: want a mapping`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(head+tt.strategy))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestSharedConfig: each kind that accepts shared: hands its limits to
// sharedlimit, with the block's settings.
func TestSharedConfig(t *testing.T) {
	const block = "\n    shared: {redis: \"redis://127.0.0.1:6379/0\", key: team-a, lease_ttl: 30s, peers: 4, op_timeout: 1s}\n"
	base := sharedlimit.Config{URL: "redis://127.0.0.1:6379/0", Key: "team-a", LeaseTTL: 30 * time.Second, Peers: 4, OpTimeout: time.Second}
	tests := []struct {
		strategy string
		want     func(c *sharedlimit.Config)
	}{
		{"kind: semaphore, n: 20", func(c *sharedlimit.Config) { c.MaxConcurrent = 20 }},
		{"kind: token-first, n: 8, tpm: 40000, token_burst: 5000", func(c *sharedlimit.Config) {
			c.MaxConcurrent, c.TPM, c.TokenBurst = 8, 40000, 5000
		}},
		{"kind: token-bucket, rpm: 50, tpm: 30000, request_burst: 5, token_burst: 2000", func(c *sharedlimit.Config) {
			c.RPM, c.TPM, c.RequestBurst, c.TokenBurst = 50, 30000, 5, 2000
		}},
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			src := "items: 3\nstrategies:\n  - name: a\n    " + strings.ReplaceAll(tt.strategy, ", ", "\n    ") + block
			s, err := Parse("x.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := base
			tt.want(&want)
			if got := sharedConfig(&s.Strategies[0]); !reflect.DeepEqual(got, want) {
				t.Errorf("sharedConfig = %+v\nwant %+v", got, want)
			}
			if got := s.Strategies[0].Params()["shared"]; got != "team-a" {
				t.Errorf(`Params()["shared"] = %v, want "team-a"`, got)
			}
		})
	}
}

// TestSharedUnreachable: a Redis that does not answer at the start is an
// error wrapping sharedlimit.ErrUnreachable, naming the strategy and the
// address, and nothing runs.
func TestSharedUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	src := fmt.Sprintf("items: 3\nstrategies:\n  - name: shared-5\n    kind: semaphore\n    n: 5\n    shared: {redis: \"redis://%s/0\", key: k, op_timeout: 500ms}\n", addr)
	s, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rep, err := Run(ctx, s, Options{})
	if !errors.Is(err, sharedlimit.ErrUnreachable) {
		t.Fatalf("Run error = %v, want one wrapping sharedlimit.ErrUnreachable", err)
	}
	for _, want := range []string{`strategy "shared-5"`, `shared limit "k"`, addr} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run error = %v, want it to name %s", err, want)
		}
	}
	if len(rep.Results) != 0 {
		t.Errorf("%d results, want none", len(rep.Results))
	}
}

// TestSharedRun runs a scenario whose semaphore is shared through the real
// Redis: within the server's limit it sees no 429s; above it, a throttle
// closes the shared retry-after gate, and that event is on the report's
// timeline.
func TestSharedRun(t *testing.T) {
	url := redistest.URL(t)
	tests := []struct {
		name      string
		items, n  int
		throttles bool
	}{
		{"within the limit", 40, 4, false},
		{"above the limit", 8, 6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := sharedKey(t)
			src := fmt.Sprintf(`items: %d
request: {max_tokens: 5}
server:
  latency: {per_token: 4ms}
  limits: {max_concurrent: 4, retry_after: 1s}
strategies:
  - name: shared
    kind: semaphore
    n: %d
    requeue: true
    max_retries: -1
    shared: {redis: %q, key: %s, lease_ttl: 5s}
`, tt.items, tt.n, url, key)
			s, err := Parse("x.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			rep, err := Run(ctx, s, Options{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			r := rep.Results[0]
			if r.Completed != tt.items {
				t.Errorf("completed = %d, want %d", r.Completed, tt.items)
			}
			if got := r.Throttled > 0; got != tt.throttles {
				t.Errorf("throttled = %d; want some: %v", r.Throttled, tt.throttles)
			}
			gate := false
			if r.Timeline != nil {
				for _, e := range r.Timeline.Events {
					gate = gate || e.Type == "gate_close"
				}
			}
			if gate != tt.throttles {
				t.Errorf("gate_close on the timeline: %v, want %v", gate, tt.throttles)
			}
		})
	}
}
