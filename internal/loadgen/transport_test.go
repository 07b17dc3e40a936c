package loadgen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// transportChildEnv makes the test binary, run again, run one case of
// TestEmbeddedMockTransport in a process of its own.
const transportChildEnv = "RATELAB_TRANSPORT_CHILD"

// sockets counts this process's open sockets (Linux: /proc/self/fd). It
// returns an error rather than taking t: the sampling goroutine calls it,
// and t.Fatal must not be called from a goroutine other than the test's.
func sockets() (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("counting sockets: %w (Linux only)", err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n, nil
}

// TestEmbeddedMockTransport: a real-time run reaches the embedded mock in
// process by default, opening no socket however many calls are in flight
// (10,000 workers once stalled on the file-descriptor limit: two per
// connection), and over loopback TCP with ListenTCP (loadgen run
// --loopback), where each call in flight holds a connection, both ends in
// this process. Either way every call completes.
func TestEmbeddedMockTransport(t *testing.T) {
	s, err := Parse("transport.yaml", []byte(`name: transport
items: 100
workers: 100
request: {max_tokens: 20}
server:
  latency: {per_token: 10ms}
strategies:
  - name: all at once
    kind: unbounded
    expect: {completed: 100, failed: 0, attempts: 100}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		listen   ListenFunc
		min, max int // new sockets at the peak
	}{
		{"in process", nil, 0, 0},
		// Over loopback at least one connection, both its ends here (how
		// many depends on how the 100 starts overlap: an idle connection
		// is reused), and at most one a call and the listener.
		{"loopback", ListenTCP, 2, 2*100 + 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.max == 0 && os.Getenv(transportChildEnv) == "" {
				// No socket at all: counted in a process of its own, where
				// no goroutine an earlier test left behind can open one.
				cmd := exec.Command(os.Args[0], "-test.run=^TestEmbeddedMockTransport$/^"+strings.ReplaceAll(tc.name, " ", "_")+"$", "-test.v")
				cmd.Env = append(os.Environ(), transportChildEnv+"=1")
				// The case itself passed there: the test's own PASS would
				// also show when the pattern matched no case.
				if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
					t.Fatalf("in a process of its own: %v\n%s", err, out)
				}
				return
			}
			base, err := sockets()
			if err != nil {
				t.Fatal(err)
			}
			var peak atomic.Int64
			stop, sampled := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(sampled)
				for {
					n, err := sockets()
					if err != nil {
						t.Error(err)
						return
					}
					peak.Store(max(peak.Load(), int64(n-base)))
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			rep, err := Run(t.Context(), s, Options{Listen: tc.listen})
			close(stop)
			<-sampled
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range Failures(rep) {
				t.Error(f)
			}
			if p := int(peak.Load()); p < tc.min || p > tc.max {
				t.Errorf("%d new sockets at the peak, want %d..%d", p, tc.min, tc.max)
			}
		})
	}
}
