//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// netnsHost is a network namespace joined to this one by a veth pair: a
// second "host" on this machine. The addresses are in 10.231.N.0/24,
// private and on this machine only: here .1 and .3, there .2.
type netnsHost struct {
	name, link          string
	here1, here3, there string
}

// newNetnsHost makes one, deleted when the test ends. Without the
// privilege or the ip tool it skips, saying why, except under CI=true,
// where it fails.
func newNetnsHost(t *testing.T) *netnsHost {
	t.Helper()
	id := os.Getpid() % 100000
	sub := 1 + os.Getpid()%250
	h := &netnsHost{name: fmt.Sprintf("rlq%d", id), link: fmt.Sprintf("rlqh%d", id),
		here1: fmt.Sprintf("10.231.%d.1", sub), here3: fmt.Sprintf("10.231.%d.3", sub), there: fmt.Sprintf("10.231.%d.2", sub)}
	peer := fmt.Sprintf("rlqn%d", id)
	unavailable := func(why string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("network namespaces are needed on CI: %s", why)
		}
		t.Skipf("network namespaces unavailable (%s): run as root on Linux with iproute2 to run this test", why)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		unavailable("no ip command")
	}
	if out, err := exec.Command("ip", "netns", "add", h.name).CombinedOutput(); err != nil {
		unavailable(fmt.Sprintf("ip netns add: %v: %s", err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", h.name).Run()
		exec.Command("ip", "link", "del", h.link).Run()
	})
	for _, c := range [][]string{
		{"link", "add", h.link, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", h.name},
		{"addr", "add", h.here1 + "/24", "dev", h.link},
		{"addr", "add", h.here3 + "/24", "dev", h.link},
		{"link", "set", h.link, "up"},
		{"netns", "exec", h.name, "ip", "link", "set", "lo", "up"},
		{"netns", "exec", h.name, "ip", "addr", "add", h.there + "/24", "dev", peer},
		{"netns", "exec", h.name, "ip", "link", "set", peer, "up"},
	} {
		if out, err := exec.Command("ip", c...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	return h
}

// ip runs ip inside the namespace.
func (h *netnsHost) ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"netns", "exec", h.name, "ip"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// addrRedis is a redis-server of the test's own bound to one address.
type addrRedis struct {
	addr string
	cmd  *exec.Cmd
}

func startRedisAt(t *testing.T, host string) *addrRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed on CI; run .ci/start-redis.sh")
		}
		t.Skip("no redis-server: run .ci/start-redis.sh to install it")
	}
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &addrRedis{addr: net.JoinHostPort(host, strconv.Itoa(port))}
	// Protected mode refuses every client but loopback's when there is no
	// password; this server listens on a veth address of this machine only.
	r.cmd = exec.Command(bin, "--bind", host, "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s does not answer", r.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r
}

func (r *addrRedis) URL() string { return "redis://" + r.addr + "/0" }

func (r *addrRedis) Restart(os.Signal, time.Duration) { panic("not used") }

// TestQueueNetns: one of the four workers on another "host" (a network
// namespace) is cut off from Redis (a blackhole route to it, the mock still
// reachable) for longer than the lease, then let back.
func TestQueueNetns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	h := newNetnsHost(t)
	bin := buildLoadgen(t, t.TempDir())
	f := newQFleet(t, bin, startRedisAt(t, h.here1), h.here3+":0")
	f.enqueue()
	f.start(h.name)
	for range 3 {
		f.start("")
	}
	f.waitRecorded(qItems * 3 / 10)
	cut := 2*qLease + time.Second
	h.ip(t, "route", "add", "blackhole", h.here1+"/32")
	time.Sleep(cut)
	h.ip(t, "route", "del", "blackhole", h.here1+"/32")
	f.wait()
	if !strings.Contains(f.errs[0].String(), "redis unreachable") {
		t.Errorf("the cut-off worker did not say Redis was unreachable:\n%s", f.errs[0])
	}
	t.Logf("worker cut off from Redis for %s (lease %s)", cut, qLease)
	// Its share of the limit stays leased for the lease TTL, and when it is
	// back sharedlimit quiets the limit for every worker for two of its
	// heartbeats (LeaseTTL/3) and a second, while they all re-assert their
	// calls (docs/shared-limits.md): the time the limit allows no call.
	f.check(qLease/4 + 2*qLease/3 + time.Second)
	f.checkHeld(0, qHeldDups)
}
