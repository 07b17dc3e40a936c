// Package benchcmd is what the bench programs share: a main that ends on
// SIGINT or SIGTERM, a server loop that announces its address, starting a
// child process that does, and the medians and spreads they print.
package benchcmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// Main runs run with the program's arguments and a context that ends on
// SIGINT or SIGTERM; an error is printed after name and exits 1.
func Main(name string, run func(ctx context.Context, args []string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Serve listens on addr, prints "listening on http://ADDR" to stdout (what
// bench/compare waits for), and serves until ctx ends, when it calls
// closeFn. A server closed that way is no error.
func Serve(ctx context.Context, addr string, stdout io.Writer, serve func(net.Listener) error, closeFn func()) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	go func() {
		<-ctx.Done()
		closeFn()
	}()
	if err := serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Start runs command (split on spaces) as a child process and waits for its
// first line on stdout, "listening on URL" (what Serve and mockllm print),
// and returns the process and the URL; the rest of its stdout is discarded,
// its stderr is the caller's. name names it in errors.
func Start(name, command string) (*exec.Cmd, string, error) {
	f := strings.Fields(command)
	if len(f) == 0 {
		return nil, "", fmt.Errorf("%s: empty command", name)
	}
	cmd := exec.Command(f[0], f[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, "", fmt.Errorf("%s: first line %q, want \"listening on URL\" (%v)", name, line, err)
	}
	go io.Copy(io.Discard, out)
	return cmd, url, nil
}

// Median is the median of v (v is not reordered).
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Spread is "[min–max]" of v, each formatted with format.
func Spread(v []float64, format string) string {
	return "[" + fmt.Sprintf(format, slices.Min(v)) + "–" + fmt.Sprintf(format, slices.Max(v)) + "]"
}
