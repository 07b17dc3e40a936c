// Package redistest gives ratelab's tests the real Redis server that
// .ci/start-redis.sh starts: its URL, a client, and key names unique to a test
// whose keys are deleted when the test ends; and private servers a test may
// kill, restart or flush (Start).
//
// Importing it also silences go-redis's logger, which would otherwise print
// every failed dial of a test that stops a server on purpose.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// URL returns the URL of the shared test server (RATELAB_REDIS_URL, as
// printed by .ci/start-redis.sh). Without it the test fails when CI is set,
// so a CI run can never skip the Redis tests silently, and is skipped
// elsewhere with a message saying how to run it.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("RATELAB_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("RATELAB_REDIS_URL is not set on CI; run: export RATELAB_REDIS_URL=$(.ci/start-redis.sh)")
		}
		t.Skip("no Redis: run export RATELAB_REDIS_URL=$(.ci/start-redis.sh) to run this test")
	}
	return url
}

// Client returns a client of the shared test server, closed when the test
// ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(URL(t))
	if err != nil {
		t.Fatalf("RATELAB_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// Name returns a name unique to this run of the test: base, the test's name
// made safe for a Redis key (no hash-tag braces, no spaces or slashes), and
// random hex.
func Name(t testing.TB, base string) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_", "{", "(", "}", ")").Replace(t.Name())
	return base + "-" + name + "-" + hex.EncodeToString(b[:])
}

// DeleteAtEnd deletes the keys matching pattern (a KEYS glob) when the test
// ends.
func DeleteAtEnd(t testing.TB, c *redis.Client, pattern string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if keys, _ := c.Keys(ctx, pattern).Result(); len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
}

func init() { Quiet() }

// Quiet silences go-redis's logger again, after a test installed another.
func Quiet() { redis.SetLogger(discardLogger{}) }

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// Server is a redis-server of one test's own, without persistence, on a
// free loopback port: a test may kill it, restart it empty, or flush it
// without disturbing the others.
type Server struct {
	t    testing.TB
	bin  string
	port int
	cmd  *exec.Cmd
}

// Start starts a private redis-server and stops it when the test ends.
// Without redis-server the test fails on CI and is skipped elsewhere, as
// with URL.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed on CI; run .ci/start-redis.sh")
		}
		t.Skip("no redis-server: run .ci/start-redis.sh to install it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &Server{t: t, bin: bin, port: port}
	r.start()
	t.Cleanup(r.Stop)
	return r
}

// Addr returns the server's host:port.
func (r *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// URL returns the server's URL.
func (r *Server) URL() string { return "redis://" + r.Addr() + "/0" }

// start starts the server and waits until it answers PING.
func (r *Server) start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(r.port),
		"--save", "", "--appendonly", "no")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s does not answer: %v", r.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server, as a crash or a lost network would.
func (r *Server) Stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// Restart stops the server with sig (SIGKILL: a crash; SIGTERM: a clean
// shutdown, which saves nothing) and, down later, starts an empty one on
// the same port.
func (r *Server) Restart(sig os.Signal, down time.Duration) {
	r.t.Helper()
	if r.cmd != nil {
		r.cmd.Process.Signal(sig)
		r.cmd.Wait()
		r.cmd = nil
	}
	time.Sleep(down)
	r.start()
}

// StartAgain starts a server Stop stopped, empty, on the same port.
func (r *Server) StartAgain() {
	r.t.Helper()
	r.start()
}
