//go:build linux

package mock

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestUnixConnDoesNotReceiveFDs checks that a connection of a unix-socket
// listener does not keep the file descriptors a client passes with
// SCM_RIGHTS: read with recvmsg and a control buffer, they would be
// installed in the server's process and never closed (read(2) discards
// them).
func TestUnixConnDoesNotReceiveFDs(t *testing.T) {
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stampListener(ln)
	client, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := envelopeListener{ln, s}.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	count := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := count()
	const n = 50
	for range n {
		rights := syscall.UnixRights(int(f.Fd()), int(f.Fd()))
		if _, _, err := client.(*net.UnixConn).WriteMsgUnix([]byte("x"), rights, nil); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	if after := count(); after > before {
		t.Errorf("%d file descriptors leaked into the server by %d reads with SCM_RIGHTS", after-before, n)
	}
}
