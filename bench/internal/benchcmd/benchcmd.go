// Package benchcmd is what the bench programs share: a main that ends on
// SIGINT or SIGTERM, and a server loop that announces its address.
package benchcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
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
