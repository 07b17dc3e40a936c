//go:build linux

package mock

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// acceptStamped returns both ends of a loopback TCP connection, the
// server's as Serve wraps it. The client connects before the listener is
// wrapped, as one connecting between Listen and Serve does: its
// connection did not inherit the listener's option.
func acceptStamped(t *testing.T) (server *envelopeConn, client net.Conn) {
	t.Helper()
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := s.envelope(ln).Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	server = c.(*envelopeConn)
	if server.rx == nil {
		t.Fatal("a loopback TCP connection does not read receive times")
	}
	// The kernel starts stamping segments in a deferred work item after
	// the first socket asks for it: until then a read has no receive time.
	buf := make([]byte, 1)
	for i := 0; server.rx.at.Load() == 0; i++ {
		if i == 200 {
			t.Fatal("no receive time after 200 reads")
		}
		if _, err := client.Write([]byte("w")); err != nil {
			t.Fatal(err)
		}
		if _, err := server.Read(buf); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return server, client
}

// TestReceiveTimes checks that a connection keeps the kernel's receive
// time of the bytes it read, not the time it read them, and reads as a
// net.TCPConn does: io.EOF at the end, deadlines and Close as *net.OpError.
func TestReceiveTimes(t *testing.T) {
	server, client := acceptStamped(t)
	sent := time.Now()
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the bytes wait in the socket
	reading := time.Now()
	buf := make([]byte, 16)
	n, err := server.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %q, %v; want hello", buf[:n], err)
	}
	if at := monoBase.Add(time.Duration(server.rx.at.Load() - 1)); at.Before(sent) || at.After(reading) {
		t.Errorf("arrival %v, want between the write (%v) and the read (%v)", at, sent, reading)
	}

	one := []byte("x")
	if a := testing.AllocsPerRun(100, func() {
		client.Write(one)
		server.Read(buf)
	}); a != 0 {
		t.Errorf("%v allocations a write and read, want 0", a)
	}

	server.SetReadDeadline(time.Now().Add(-time.Second))
	_, err = server.Read(buf)
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" || !errors.Is(err, os.ErrDeadlineExceeded) || !oe.Timeout() {
		t.Errorf("Read past the deadline: %v, want a read *net.OpError that times out", err)
	}
	server.SetReadDeadline(time.Time{})

	client.Close()
	if n, err := server.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("Read after the peer closed = %d, %v; want 0, io.EOF", n, err)
	}

	server2, _ := acceptStamped(t)
	done := make(chan error)
	go func() {
		_, err := server2.Read(buf)
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	server2.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read interrupted by Close: %v, want net.ErrClosed", err)
	}
}

// TestScheduleStartsAtArrival sends two pipelined requests in one write:
// a JSON response of 8 tokens at 50 ms a token, then a stream of 10. The
// server reaches the stream only after the first response, 400 ms after
// both arrived; its schedule runs from their arrival, so the tokens due by
// then go out at once, in one event, and the rest on time.
func TestScheduleStartsAtArrival(t *testing.T) {
	acceptStamped(t) // the kernel stamps segments from now on
	cfg := DefaultConfig()
	cfg.Latency = Latency{PerToken: 50 * time.Millisecond}
	cfg.Output.Length = LengthMaxTokens
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stampListener(ln) // as Serve does, before the client can connect
	go s.Serve(ln)
	defer s.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	request := func(body string) string {
		return "POST /v1/messages HTTP/1.1\r\nHost: mock\r\nContent-Type: application/json\r\nAnthropic-Version: 2023-06-01\r\n" +
			"Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	}
	if _, err := io.WriteString(conn, request(anthropicBody(8, false, "hi"))+request(anthropicBody(10, true, "hi"))); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	first, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, first.Body)
	first.Body.Close()
	second, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Body.Close()
	if first.StatusCode != 200 || second.StatusCode != 200 {
		t.Fatalf("statuses %d and %d, want 200", first.StatusCode, second.StatusCode)
	}
	var tokens []int // of each text event; every token is four characters
	sc := bufio.NewScanner(second.Body)
	for sc.Scan() {
		if _, text, ok := strings.Cut(sc.Text(), `"text_delta","text":"`); ok {
			tokens = append(tokens, strings.Index(text, `"`)/4)
		}
	}
	total := 0
	for _, n := range tokens {
		total += n
	}
	if total != 10 || len(tokens) == 0 || tokens[0] < 4 {
		t.Errorf("tokens per event %v, want 10 in all and the first event with the 8 due before the stream began (at least 4)", tokens)
	}
}

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
	client, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := s.envelope(ln).Accept()
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
